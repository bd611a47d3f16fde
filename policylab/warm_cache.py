"""Compiles every numba kernel into numba's on-disk cache once, at install, so that no first use compiles.

`make setup` runs `python -m policylab.warm_cache` (docs/design.md, "Compiled kernels").
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

# The seeds below only feed these few throw-away steps: nothing they produce is kept or keyed.
_SEED = 0


def _single_env() -> None:
    """The exact single env in its three observation types, with v5's sticky actions: the ROM kernel, the
    screen and ALE's random stream."""
    import gymnasium as gym

    from policylab.envs.breakout import registration

    registration.register()
    for obs_type in ("rgb", "grayscale", "ram"):
        env = gym.make("policylab/Breakout-v5", obs_type=obs_type)
        env.reset(seed=_SEED)
        for action in (1, 2, 3, 0):
            env.step(action)
        env.close()


_STICKY = {"repeat_action_probability": 0.25}


def _vector_env() -> None:
    """The vector env in the layouts and action types the studies and tests use."""
    from policylab.envs.breakout.vector import BreakoutVectorEnv

    # the last: 12 envs whose stacks outgrow `STREAM_BYTES` (4.3 MB), so that the sync step writes them ahead
    ahead = (12, {"grayscale": False, "img_height": 200, "img_width": 150})
    for n, kwargs in ((2, {}), (2, {"grayscale": False}), (2, {"maxpool": False}), (2, _STICKY), ahead):
        venv = BreakoutVectorEnv(n, **kwargs)
        venv.reset(seed=_SEED)
        for dtype in (np.int64, np.int32):
            venv.step(np.arange(n, dtype=dtype) % 4)
        venv.close()


def _sb3() -> None:
    """The SB3 adapter's chain."""
    from policylab.envs.breakout.sb3 import make_atari_env

    env = make_atari_env(n_envs=2, seed=_SEED)
    env.reset()
    for _ in range(3):
        env.step(np.array([1, 3]))
    env.close()


def _breakout_episodes() -> None:
    """The shadow simulator's kernels and the fused episode loop, on the physics model and the exact one."""
    from policylab.envs.breakout.ale import Protocol
    from policylab.envs.breakout.params import load_preset
    from policylab.policies.breakout import V3_DEFAULTS
    from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group

    for preset in ("atari-cal", "ale-exact"):
        task = EpisodeTask(
            "shadow",
            (_SEED, _SEED + 1),
            "breakout_policy_v3",
            dict(V3_DEFAULTS),
            Protocol(max_steps=20).model_dump(),
            load_preset(preset),
            preset,
        )
        for fused in (True, False):
            run_shadow_group([task], fused=fused)


def _lava_leap_and_maths() -> None:
    """Lava Leap's floors, simulator and three learners, and the portable maths every robot policy uses."""
    from policylab import portable_math
    from policylab.studies.lava_leap.agent import leap_table
    from policylab.studies.lava_leap.floor import new_floors
    from policylab.studies.lava_leap.learners import train
    from policylab.studies.lava_leap.simulate import simulate

    floors = new_floors(np.random.default_rng(_SEED), 2)
    for algo in ("reinforce", "ppo", "grpo"):
        train(algo, _SEED, floors, rounds=2, eval_every=1)
    simulate(leap_table(np.zeros((4, 2))), floors, 2, np.random.default_rng(_SEED))
    x = np.linspace(-3.0, 3.0, 8)
    portable_math.sin_array(x), portable_math.cos_array(x), portable_math.atan2_array(x, x[::-1])
    portable_math.tanh(0.5), portable_math.exp(0.5), portable_math.expm1(0.5)
    portable_math.dense(np.ones((5, 3)), np.ones((3, 4)), np.zeros(4), 2)


# longest first, so that two workers finish together
JOBS = (_vector_env, _sb3, _single_env, _breakout_episodes, _lava_leap_and_maths)


def _run(job) -> tuple[str, float]:
    start = time.perf_counter()
    job()
    return job.__name__.lstrip("_"), time.perf_counter() - start


def main() -> int:
    """Runs the jobs two at a time (one per core of the 2-core CI machine) and says how long each took."""
    print("policylab: compiling the numba kernels into their cache (once per install) ...", file=sys.stderr)
    with ProcessPoolExecutor(max_workers=2) as pool:
        for name, seconds in pool.map(_run, JOBS):
            print(f"  {name}: {seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
