"""Throughput per CPU-second: the Breakout vector env (`policylab/Breakout-v5` via `make_vec`) against ale-py's
`AtariVectorEnv`, the same preprocessing (frameskip 4, max-pool, grayscale, 84 x 84, stack of 4, noop starts
off, FIRE reset, reward clipping) and the same N, side by side in one run, random actions drawn up front.

Per CPU-second: `time.process_time` counts every thread of the process, so ale-py's thread pool is charged
for all its cores and the numba kernel (one thread) for its one.

    .venv/bin/python benchmarks/bench_breakout_vector.py
"""

from __future__ import annotations

import argparse
import time

import ale_py
import gymnasium as gym
import numpy as np
from results_file import record

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from policylab.envs.breakout.registration import GYM_ID

SETTINGS = dict(noop_max=0)


def env_steps_per_cpu_s(env, n: int, seconds: float) -> float:
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 4, size=(64, n))
    env.step(actions[0])  # compiled / threads started outside the timing
    steps = 0
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        env.step(actions[steps % 64])
        steps += 1
    return steps * n / (time.process_time() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64,256,1024")
    ap.add_argument("--seconds", type=float, default=5.0, help="CPU seconds per measurement")
    args = ap.parse_args()
    rows = {}
    for n in (int(s) for s in args.sizes.split(",")):
        ours = env_steps_per_cpu_s(
            gym.make_vec(GYM_ID, num_envs=n, vectorization_mode="vector_entry_point", **SETTINGS), n, args.seconds
        )
        ale = env_steps_per_cpu_s(ale_py.AtariVectorEnv("breakout", num_envs=n, **SETTINGS), n, args.seconds)
        rows[str(n)] = {
            "policylab_env_steps_per_cpu_s": round(ours),
            "ale_env_steps_per_cpu_s": round(ale),
            "ratio": round(ours / ale, 1),
        }
        print(n, rows[str(n)], flush=True)
    record(
        "breakout_vector",
        {
            "settings": {
                "frameskip": 4,
                "maxpool": True,
                "grayscale": True,
                "size": "84x84",
                "stack_num": 4,
                **SETTINGS,
                "actions": "uniform random",
            },
            "by_num_envs": rows,
        },
        machine_note=f"ale-py {ale_py.__version__}, numba kernel on one thread, shared machine",
    )


if __name__ == "__main__":
    main()
