"""The three learners - REINFORCE, PPO, GRPO - on one shared clipped policy-gradient kernel.

They differ only in the advantage and the number of passes; update u uses row u of one training block
(docs/lava_leap.md, "Choices the original left open" and "Module notes")."""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from policylab.studies.lava_leap.agent import (
    MAX_MOVES,
    PATTERN_STATES,
    PLAY_DRAWS,
    Run,
    play_kernel,
    probs,
    table_of,
)
from policylab.studies.lava_leap.exact import outcomes_many
from policylab.studies.lava_leap.floor import (
    EXIT,
    FIRST,
    FLOOR_DRAWS,
    LAST_START,
    P_CHANNEL,
    P_WIDE,
    floor_from_uniforms,
)

ALGOS = ("reinforce", "ppo", "grpo")
_CODE = {"reinforce": 0, "ppo": 1, "grpo": 2}
ADV_EPS = 1e-8
LR_CRITIC = 0.5


@numba.njit(cache=True)
def group_advantage(r):
    """(r - mean) / (std + 1e-8), population std, summed left to right."""
    n = r.shape[0]
    mean = 0.0
    for i in range(n):
        mean += r[i]
    mean /= n
    var = 0.0
    for i in range(n):
        var += (r[i] - mean) ** 2
    std = np.sqrt(var / n)
    return (r - mean) / (std + ADV_EPS)


@numba.njit(cache=True)
def clipped_passes(W0, S, acts, A, lr, eps, passes, Wk, pik, rhok, clipk, gradk):
    """`passes` clipped policy-gradient passes from W0 over rows of (S, acts, A); returns the new W.

    Records per pass k: Wk[k] (W before the pass), pik[k] (pi at Wk[k]), rhok[k], clipk[k], gradk[k].
    """
    N = S.shape[0]
    W = W0.copy()
    pi_old = probs(W, S)
    for k in range(passes):
        pi = probs(W, S)
        grad = np.zeros((4, 2))
        for j in range(N):
            a = acts[j]
            rho = pi[j, a] / pi_old[j, a]
            cut = (A[j] > 0 and rho > 1 + eps) or (A[j] < 0 and rho < 1 - eps)
            rhok[k, j] = rho
            clipk[k, j] = cut
            if not cut:
                c = A[j] * rho / N
                for r in range(4):
                    for b in range(2):
                        grad[r, b] += c * S[j, r] * ((1.0 if b == a else 0.0) - pi[j, b])
        Wk[k] = W
        pik[k, :N] = pi
        gradk[k] = grad
        W = W + lr * grad
    return W


@numba.njit(cache=True)
def critic_residuals(S, r_step, v):
    """r - s @ v for each step (the PPO advantage and the critic's error)."""
    out = np.empty(S.shape[0])
    for j in range(S.shape[0]):
        acc = 0.0
        for i in range(4):
            acc += S[j, i] * v[i]
        out[j] = r_step[j] - acc
    return out


@numba.njit(cache=True)
def critic_step(S, resid, v, lr_critic):
    """v + lr_critic * mean_j resid_j * s_j."""
    g = np.zeros(4)
    for j in range(S.shape[0]):
        for i in range(4):
            g[i] += resid[j] * S[j, i]
    return v + lr_critic * g / S.shape[0]


@numba.njit(cache=True)
def advantages(code, S, r_step, run_of, rewards, v):
    if code == 2:
        return group_advantage(rewards)[run_of]
    if code == 1:
        return critic_residuals(S, r_step, v)
    return r_step.copy()


@numba.njit(cache=True)
def train_kernel(code, U, G, lr, eps, passes, lr_critic, p_channel, p_wide, first, last_start):
    """The whole training loop on the pre-drawn uniforms U (rounds, FLOOR_DRAWS + G * PLAY_DRAWS).

    Returns W and v after every update (index 0 = start) and the clip log arrays.
    """
    rounds = U.shape[0]
    W = np.zeros((4, 2))
    v = np.zeros(4)
    W_hist = np.zeros((rounds + 1, 4, 2))
    v_hist = np.zeros((rounds + 1, 4))
    n_pass = passes if code != 0 else 1
    clipped = np.zeros((rounds, n_pass), dtype=np.int64)
    steps = np.zeros(rounds, dtype=np.int64)
    mean_abs = np.zeros(rounds)
    nmax = G * MAX_MOVES
    S_buf = np.zeros((nmax, 4))
    a_buf = np.zeros(nmax, dtype=np.int64)
    run_buf = np.zeros(nmax, dtype=np.int64)
    path = np.zeros(MAX_MOVES + 1, dtype=np.int64)
    acts = np.zeros(MAX_MOVES, dtype=np.int64)
    pats = np.zeros(MAX_MOVES, dtype=np.int64)
    Wk = np.zeros((n_pass, 4, 2))
    pik = np.zeros((n_pass, nmax, 2))
    rhok = np.zeros((n_pass, nmax))
    clipk = np.zeros((n_pass, nmax), dtype=np.bool_)
    gradk = np.zeros((n_pass, 4, 2))
    rewards = np.zeros(G)
    for u in range(rounds):
        lava = floor_from_uniforms(U[u, :FLOOR_DRAWS], p_channel, p_wide, first, last_start)
        table = table_of(W)
        N = 0
        for g in range(G):
            off = FLOOR_DRAWS + g * PLAY_DRAWS
            n = play_kernel(table, lava, U[u, off : off + PLAY_DRAWS].reshape(MAX_MOVES, 2), path, acts, pats)
            rewards[g] = path[n] / EXIT
            for k in range(n):
                S_buf[N] = PATTERN_STATES[pats[k]]
                a_buf[N] = acts[k]
                run_buf[N] = g
                N += 1
        S = S_buf[:N]
        run_of = run_buf[:N]
        r_step = rewards[run_of]
        A = advantages(code, S, r_step, run_of, rewards, v)
        W = clipped_passes(W, S, a_buf[:N], A, lr, eps, n_pass, Wk, pik, rhok, clipk, gradk)
        if code == 1:
            v = critic_step(S, A, v, lr_critic)
        for k in range(n_pass):
            clipped[u, k] = clipk[k, :N].sum()
        steps[u] = N
        mean_abs[u] = np.abs(A).mean()
        W_hist[u + 1] = W
        v_hist[u + 1] = v
    return W_hist, v_hist, clipped, steps, mean_abs


# ---- the Python surface (same kernels, one update at a time) ---------------------------------


def batch(runs: Sequence[Run], adv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S (N, 4), acts (N,), A (N,)): every run's steps in run order, each with its run's advantage."""
    S = np.concatenate([run.states for run in runs]).astype(float)
    acts = np.concatenate([run.actions for run in runs]).astype(np.int64)
    A = np.concatenate([np.full(len(run.actions), float(a)) for run, a in zip(runs, adv)])
    return S, acts, A


def _passes(W, S, acts, A, lr, eps, passes, trace):
    N = S.shape[0]
    Wk, pik, gradk = np.zeros((passes, 4, 2)), np.zeros((passes, N, 2)), np.zeros((passes, 4, 2))
    rhok, clipk = np.zeros((passes, N)), np.zeros((passes, N), dtype=bool)
    W_new = clipped_passes(np.asarray(W, dtype=float), S, acts, A, lr, eps, passes, Wk, pik, rhok, clipk, gradk)
    if trace is not None:
        trace.extend(
            dict(W=Wk[k].copy(), pi=pik[k].copy(), rho=rhok[k].copy(), clipped=clipk[k].copy(), grad=gradk[k].copy())
            for k in range(passes)
        )
    return W_new


def grpo_update(
    W, runs: Sequence[Run], trace: list | None = None, lr: float = 0.5, eps: float = 0.2, passes: int = 4
) -> np.ndarray:
    """One GRPO update on a group of runs of one floor; returns the new W (W itself is not changed).

    With `trace` (a list), appends per pass {W (before), pi, rho, clipped, grad}.
    """
    rewards = np.array([run.reward for run in runs])
    S, acts, A = batch(runs, group_advantage(rewards))
    return _passes(W, S, acts, A, lr, eps, passes, trace)


def ppo_update(
    W,
    v,
    runs: Sequence[Run],
    trace: list | None = None,
    lr: float = 0.5,
    eps: float = 0.2,
    passes: int = 4,
    lr_critic: float = LR_CRITIC,
) -> tuple[np.ndarray, np.ndarray]:
    """One PPO update (critic advantages, clipped passes, then one critic step); returns (W, v)."""
    S, acts, r_step = batch(runs, [run.reward for run in runs])
    A = critic_residuals(S, r_step, np.asarray(v, dtype=float))
    W_new = _passes(W, S, acts, A, lr, eps, passes, trace)
    return W_new, critic_step(S, A, np.asarray(v, dtype=float), lr_critic)


def reinforce_update(W, runs: Sequence[Run], lr: float = 0.5) -> np.ndarray:
    """One plain policy-gradient step with the raw return as the advantage."""
    S, acts, A = batch(runs, [run.reward for run in runs])
    return _passes(W, S, acts, A, lr, 0.2, 1, None)


def training_uniforms(seed: int, rounds: int, G: int) -> np.ndarray:
    """All of one training run's randomness: row u = update u's floor block then its G play blocks."""
    return np.random.default_rng(seed).random((rounds, FLOOR_DRAWS + G * PLAY_DRAWS))


def train(
    algo: str,
    seed: int,
    eval_floors,
    clip_log: list | None = None,
    snapshots=(),
    lr: float = 0.5,
    eps: float = 0.2,
    G: int = 8,
    passes: int = 4,
    rounds: int = 300,
    eval_every: int = 10,
    lr_critic: float = LR_CRITIC,
):
    """Train `algo` from W = 0 with generator seed `seed`.

    Returns (W, v, curve, saved): curve = [(update, exact mean score, exit prob) on eval_floors] at
    updates 0, eval_every, ..., rounds; saved = {update: (W, v)} for each update in `snapshots`.
    `clip_log`, if given, receives per update {clipped: [count per pass], steps, mean_abs_adv}.
    """
    U = training_uniforms(seed, rounds, G)
    W_hist, v_hist, clipped, steps, mean_abs = train_kernel(
        _CODE[algo], U, G, lr, eps, passes, lr_critic, P_CHANNEL, P_WIDE, FIRST, LAST_START
    )
    at = list(range(0, rounds + 1, eval_every))
    scores, exits = outcomes_many(np.stack([table_of(W_hist[u]) for u in at]), eval_floors)
    curve = [(u, float(s), float(e)) for u, s, e in zip(at, scores.mean(axis=1), exits.mean(axis=1))]
    if clip_log is not None:
        clip_log.extend(
            dict(clipped=[int(c) for c in clipped[u]], steps=int(steps[u]), mean_abs_adv=float(mean_abs[u]))
            for u in range(rounds)
        )
    saved = {int(u): (W_hist[u].copy(), v_hist[u].copy()) for u in snapshots}
    return W_hist[-1].copy(), v_hist[-1].copy(), curve, saved
