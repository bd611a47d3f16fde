"""`policylab/Breakout-v5` against ALE's own `ALE/Breakout-v5`, step by step: the one check the exactness
tests (short episodes) and the long sweep (`benchmarks/bench_breakout_gym.py`) both run."""

from __future__ import annotations

from typing import Any

import numpy as np

from policylab.envs.breakout.registration import GYM_ID


def _equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def first_difference(
    kwargs: dict[str, Any],
    seed: int,
    max_steps: int,
    action_seed: int,
    actions: np.ndarray | None = None,
    resets: int = 1,
    ids: tuple[str, str] = (GYM_ID, "ALE/Breakout-v5"),
) -> str | None:
    """Play `resets` episodes (the first reset with `seed`, later ones without, as a training loop does) of
    at most `max_steps` agent steps on both envs made with `kwargs`, the same actions on both (`actions`
    cycled, else uniform over the action space from a generator seeded `action_seed`). Compares the observation, reward,
    terminated, truncated and info (values and types) after every reset and step; returns where and what
    first differed, or None. `ids`: ours and ALE's (another pair of ids with the same spec, e.g. the v4 ones)."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    envs = [gym.make(env_id, **kwargs) for env_id in ids]
    names = ("obs", "reward", "terminated", "truncated", "info")
    rng = np.random.default_rng(action_seed)
    space = envs[0].action_space
    continuous = isinstance(space, gym.spaces.Box)
    try:
        for episode in range(resets):
            ours, theirs = (e.reset(seed=seed if episode == 0 else None) for e in envs)
            if not _equal(ours[0], theirs[0]):
                return f"episode {episode} reset: obs differs"
            if not _equal(ours[1], theirs[1]):
                return f"episode {episode} reset: info differs ({ours[1]!r} vs {theirs[1]!r})"
            for t in range(max_steps):
                if actions is not None:
                    action = actions[t % len(actions)]
                elif continuous:
                    action = rng.uniform(space.low, space.high).astype(np.float32)
                else:
                    action = int(rng.integers(space.n))
                ours, theirs = (e.step(action) for e in envs)
                for name, a, b in zip(names, ours, theirs):
                    if not _equal(a, b):
                        shown = (
                            f"{a!r} vs {b!r}"
                            if name != "obs"
                            else f"{int((np.asarray(a) != np.asarray(b)).sum())} values"
                        )
                        return f"episode {episode} step {t}: {name} differs ({shown})"
                if ours[2] or ours[3]:
                    break
    finally:
        for e in envs:
            e.close()
    return None
