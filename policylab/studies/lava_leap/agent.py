"""Sensors, the softmax policy, and one play of a floor.

A policy is its leap table: P(LEAP) for pattern b = 4 s0 + 2 s1 + s2; every play draws one ``(EXIT, 2)``
block of uniforms up front (docs/lava_leap.md, "Choices the original left open")."""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from policylab import portable_math
from policylab.studies.lava_leap.floor import EXIT, FLOOR, VIEW

PLAY_DRAWS = EXIT * 2  # uniforms one play consumes
MAX_MOVES = EXIT  # every move advances, so at most 39 moves
N_PATTERNS = 8
# the sensor vector of each pattern b (rows), bias included
PATTERN_STATES = np.array([[(b >> 2) & 1, (b >> 1) & 1, b & 1, 1] for b in range(N_PATTERNS)], dtype=float)


def sensors(lava: np.ndarray, pos: int) -> np.ndarray:
    """[lava[pos+1], lava[pos+2], lava[pos+3], 1.0]; tiles past the exit read as safe."""
    ahead = [float(lava[t]) if t < FLOOR else 0.0 for t in range(pos + 1, pos + 1 + VIEW)]
    return np.array(ahead + [1.0])


def pattern_str(s: np.ndarray) -> str:
    return "".join(str(int(x)) for x in s[:3])


@numba.njit(cache=True)
def softmax_rows(logits):
    """Row-wise softmax of an (N, 2) array (max-subtracted), with fdlibm's exp: libm's resolves to an
    FMA or an SSE2 build by CPU, and a last-bit difference in P(LEAP) would move every later update."""
    out = np.empty_like(logits)
    for i in range(logits.shape[0]):
        m = max(logits[i, 0], logits[i, 1])
        e0 = portable_math.exp(logits[i, 0] - m)
        e1 = portable_math.exp(logits[i, 1] - m)
        out[i, 0] = e0 / (e0 + e1)
        out[i, 1] = e1 / (e0 + e1)
    return out


@numba.njit(cache=True)
def probs(W, S):
    """pi(. | s) for each row of S (N, 4): softmax(S @ W), (N, 2)."""
    logits = np.zeros((S.shape[0], 2))
    for i in range(S.shape[0]):
        for a in range(2):
            acc = 0.0
            for r in range(4):
                acc += S[i, r] * W[r, a]
            logits[i, a] = acc
    return softmax_rows(logits)


def policy(W: np.ndarray, s: np.ndarray) -> np.ndarray:
    """softmax(s @ W) over [STEP, LEAP]: s (4,) -> (2,), S (N, 4) -> (N, 2)."""
    s = np.asarray(s, dtype=float)
    out = probs(np.asarray(W, dtype=float), np.atleast_2d(s))
    return out[0] if s.ndim == 1 else out


@numba.njit(cache=True)
def table_of(W):
    """P(LEAP) per pattern (8,) for weights W."""
    S = np.empty((8, 4))
    for b in range(8):
        S[b, 0] = (b >> 2) & 1
        S[b, 1] = (b >> 1) & 1
        S[b, 2] = b & 1
        S[b, 3] = 1.0
    return probs(W, S)[:, 1].copy()


def leap_table(W: np.ndarray) -> np.ndarray:
    """P(LEAP) for pattern b = 0..7, shape (8,)."""
    return table_of(np.asarray(W, dtype=float))


@numba.njit(cache=True)
def pattern_at(lava, pos):
    b = 0
    for k in range(1, VIEW + 1):
        b = 2 * b + (1 if (pos + k < FLOOR and lava[pos + k]) else 0)
    return b


@numba.njit(cache=True)
def play_kernel(table, lava, u, path, acts, pats):
    """Play one run with leap table `table` on `lava` using the (EXIT, 2) uniforms `u`.

    Fills path[0..n], acts[0..n-1], pats[0..n-1] (pattern seen before each move); returns n.
    """
    pos = 0
    n = 0
    path[0] = 0
    while True:
        b = pattern_at(lava, pos)
        a = 1 if u[n, 0] < table[b] else 0
        d = 1 if a == 0 else (2 if u[n, 1] < 0.5 else 3)
        pos = min(pos + d, EXIT)
        acts[n] = a
        pats[n] = b
        n += 1
        path[n] = pos
        if lava[pos] or pos == EXIT:
            return n


@dataclass(frozen=True)
class Run:
    """One play: tiles visited (path[0] = 0), moves, the sensor vector before each move, score."""

    path: np.ndarray
    actions: np.ndarray
    states: np.ndarray
    reward: float


def run_from_arrays(path, acts, pats, n) -> Run:
    states = PATTERN_STATES[pats[:n]]
    return Run(path=path[: n + 1].copy(), actions=acts[:n].copy(), states=states, reward=float(path[n]) / EXIT)


def play(W: np.ndarray, lava: np.ndarray, rng: np.random.Generator) -> Run:
    """One run of the policy W on `lava`; consumes exactly PLAY_DRAWS uniforms from `rng`."""
    u = rng.random((MAX_MOVES, 2))
    path = np.zeros(MAX_MOVES + 1, dtype=np.int64)
    acts = np.zeros(MAX_MOVES, dtype=np.int64)
    pats = np.zeros(MAX_MOVES, dtype=np.int64)
    n = play_kernel(leap_table(W), np.asarray(lava, dtype=np.bool_), u, path, acts, pats)
    return run_from_arrays(path, acts, pats, n)
