"""Shadow episodes at the simulator's speed: policy, serve rule, kernel step and recording in one numba call.

Byte-equal to the runner's Python loop (tested); `play`'s closure holds a digest of its callees' sources so
numba's cache recompiles when any changes (docs/breakout.md, "Module notes")."""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

import numba
import numpy as np

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.contract import FIRE, NOOP
from policylab.envs.breakout.physics import kernel as physics_kernel
from policylab.envs.breakout.physics import params as physics_params
from policylab.policies import breakout as policies

_STEP_TAIL = ["actions", "obs", "reward", "terminated", "max_steps"]


def _sources_digest(kernel) -> int:
    """A digest of every source `play` compiles in (the kernel, its random stream, kernel parameters,
    policies, this module)."""
    h = hashlib.sha256()
    for module in (kernel, ale_random, physics_params, policies):
        h.update(Path(module.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    return int.from_bytes(h.digest()[:7], "little")


def _build(digest: int, step_kernel):
    """`play` compiled around `step_kernel` (the physics kernel's or the exact model's: same arguments)."""

    @numba.njit(cache=True, nogil=True)
    def play(
        state,
        obs_now,
        reward_now,
        term_now,
        prm,
        env_prm,
        planner,
        policy_serve,
        serve_never,
        horizon,
        obs,
        act,
        pol,
        rew,
        length,
        done,
    ):
        """Play every env of a reset batch for up to `horizon` agent steps.

        state: the kernel's state arguments (everything `step_kernel` takes before `actions`);
        obs_now/reward_now/term_now: the env's step outputs (obs_now holds the reset observation);
        prm[env_prm[i]]: env i's policy parameters; planner/policy_serve: the policy's flags;
        serve_never: the `never` serve rule (else `auto`). Writes obs[i, :n+1], act/pol/rew[i, :n],
        length[i] = n and done[i] (the env ended within the horizon); returns the steps played.
        """
        if digest == 0:  # the digest is part of the closure, so of numba's cache key
            return -1
        n = obs_now.shape[0]
        a = np.zeros(n, dtype=np.int64)
        a_pol = np.zeros(n, dtype=np.int64)
        served = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            obs[i, 0, :] = obs_now[i, :]
            length[i] = horizon
            done[i] = False
        left = n
        t = 0
        while t < horizon and left > 0:
            for i in range(n):
                p = policies.tracker_action(obs_now, i, prm[env_prm[i]], planner, policy_serve)
                a_pol[i] = p
                waiting = not obs_now[i, 4] > 0
                if not serve_never:
                    a[i] = FIRE if waiting else p
                elif waiting and not served[i]:
                    a[i] = FIRE
                else:
                    a[i] = NOOP if p == FIRE else p
            step_kernel(*state, a, obs_now, reward_now, term_now, -1)
            for i in range(n):
                if done[i]:
                    continue
                obs[i, t + 1, :] = obs_now[i, :]
                act[i, t] = a[i]
                pol[i, t] = a_pol[i]
                rew[i, t] = reward_now[i]
                if obs_now[i, 4] > 0:
                    served[i] = True
                if term_now[i]:
                    length[i] = t + 1
                    done[i] = True
                    left -= 1
            t += 1
        return t

    return play


_PLAY: dict = {}


def _play(kernel=physics_kernel):
    """The compiled loop for a kernel module (`physics.kernel` or `rom.kernel`)."""
    if kernel.__name__ not in _PLAY:
        _PLAY[kernel.__name__] = _build(_sources_digest(kernel), kernel.step_kernel)
    return _PLAY[kernel.__name__]


def kernel_state(env) -> tuple:
    """The state arguments `step_kernel` takes before `actions`, from a `ShadowBreakout` (which keeps
    each under `_<parameter name>`): found by name, so the loop follows the kernel's signature."""
    names = list(inspect.signature(env._K.step_kernel.py_func).parameters)
    cut = names.index("actions")
    if names[cut:] != _STEP_TAIL:
        raise RuntimeError(f"step_kernel's signature changed: {names}; update shadow_loop.play")
    return tuple(getattr(env, f"_{name}") for name in names[:cut])


def play_batch(
    env, prm: np.ndarray, env_prm: np.ndarray, planner: bool, policy_serve: bool, serve: str, horizon: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Reset `env` (a `ShadowBreakout` with its seeds) and play it; returns env-major arrays
    (obs (n, horizon+1, 9) float32, action, policy_action int8 and reward float32 (n, horizon),
    length int64 (n,), done bool (n,)); env i's episode is obs[i, :length+1], the others [i, :length]."""
    env.reset()
    n = env.n_envs
    obs = np.empty((n, horizon + 1, env._obs.shape[1]), dtype=np.float32)
    act = np.empty((n, horizon), dtype=np.int8)
    pol = np.empty((n, horizon), dtype=np.int8)
    rew = np.empty((n, horizon), dtype=np.float32)
    length = np.empty(n, dtype=np.int64)
    done = np.empty(n, dtype=np.bool_)
    _play(env._K)(
        kernel_state(env),
        env._obs,
        env._rew,
        env._term,
        np.ascontiguousarray(prm, dtype=np.float64),
        np.ascontiguousarray(env_prm, dtype=np.int64),
        bool(planner),
        bool(policy_serve),
        serve == "never",
        int(horizon),
        obs,
        act,
        pol,
        rew,
        length,
        done,
    )
    return obs, act, pol, rew, length, done
