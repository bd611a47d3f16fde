"""Throughput per CPU-second: the Breakout vector env (`policylab/Breakout-v5` via `make_vec`) against ale-py's
`AtariVectorEnv`, the same preprocessing (frameskip 4, max-pool, grayscale, 84 x 84, stack of 4, noop starts
off, FIRE reset, reward clipping) and the same N, side by side in one run, random actions drawn up front.

Per CPU-second: `time.process_time` counts every thread of the process, so ale-py's thread pool is charged
for all its cores and the numba kernel (one thread) for its one. The two alternate in `--rounds` rounds per N and
the ratio quoted is the median of the rounds' (one pair of 5-second samples moved by 2x on the shared machine).

Beside them, in the same rounds, the floor that returning a new array sets: numpy copying N stacks (N x 4 x 84 x
84 bytes) into a new array, per env, against the time per env-step that 100x ale-py's rate leaves.

    .venv/bin/python benchmarks/bench_breakout_vector.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium as gym
import numpy as np
from results_file import record

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from policylab.envs.breakout.registration import GYM_ID

SETTINGS = dict(noop_max=0)


def env_steps_per_cpu_s(env, n: int, seconds: float, actions: np.ndarray) -> float:
    steps = 0
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        env.step(actions[steps % 64])
        steps += 1
    return steps * n / (time.process_time() - t0)


def copy_us_per_env(n: int, seconds: float) -> float:
    """Microseconds per env of copying N stacks into a new array (what handing the caller its own costs at the
    least: the step kernel writes the same bytes)."""
    stacks = np.random.default_rng(1).integers(0, 256, size=(n, 4, 84, 84), dtype=np.uint8)
    copies = 0
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        np.copyto(np.empty_like(stacks), stacks)
        copies += 1
    return (time.process_time() - t0) / copies / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64,256,1024")
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per measurement")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per N; the ratio is their median's")
    args = ap.parse_args()
    rows = {}
    for n in (int(s) for s in args.sizes.split(",")):
        envs = {
            "policylab": gym.make_vec(GYM_ID, num_envs=n, vectorization_mode="vector_entry_point", **SETTINGS),
            "ale": ale_py.AtariVectorEnv("breakout", num_envs=n, **SETTINGS),
        }
        actions = np.random.default_rng(0).integers(0, 4, size=(64, n))
        for env in envs.values():
            env.reset(seed=0)
            env.step(actions[0])  # compiled / threads started outside the timing
        rates = {name: [] for name in envs}
        copies = []
        for _ in range(args.rounds):  # alternating: a change of the machine's speed reaches both sides
            for name, env in envs.items():
                rates[name].append(env_steps_per_cpu_s(env, n, args.seconds, actions))
            copies.append(copy_us_per_env(n, args.seconds / 3))
        ratios = [a / b for a, b in zip(rates["policylab"], rates["ale"])]
        rows[str(n)] = {
            "policylab_env_steps_per_cpu_s": round(statistics.median(rates["policylab"])),
            "ale_env_steps_per_cpu_s": round(statistics.median(rates["ale"])),
            "ratios": [round(r, 1) for r in ratios],
            "ratio": round(statistics.median(ratios), 1),
            "copy_us_per_env": round(statistics.median(copies), 2),
            "us_per_env_step_at_100x": round(1e6 / (100 * statistics.median(rates["ale"])), 2),
            "us_per_env_step": round(1e6 / statistics.median(rates["policylab"]), 2),
        }
        print(n, rows[str(n)], flush=True)
        for env in envs.values():
            env.close()
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
