"""Throughput: shadow Breakout with breakout_policy_v3 in the loop vs raw ALE Breakout, same run.

Shadow: `--batch` envs (default 4096) of the `--preset` (default atari: frameskip 4, sticky 0.25),
stepping policy + env for `--seconds` in one thread (the kernel is serial: one process = one
core; scale out with processes). Episodes that end are reset in whole batches (a fresh `reset()` with new
seeds every `--horizon` steps), as an evaluation would do.
ALE: one `ale_py.ALEInterface` (frame_skip 4, repeat_action_probability 0.25), random minimal
actions, `reset_game()` on game over; one process = one core.

    .venv/bin/python benchmarks/bench_shadow_breakout.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from ale_py import ALEInterface, LoggerMode, roms
from results_file import record

from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.policies.breakout import V3_DEFAULTS, breakout_policy_v3


def ale_steps_per_s(seconds: float) -> float:
    ALEInterface.setLoggerMode(LoggerMode.Error)
    ale = ALEInterface()
    ale.setInt("random_seed", 0)
    ale.setFloat("repeat_action_probability", 0.25)
    ale.setInt("frame_skip", 4)
    ale.loadROM(roms.get_rom_path("breakout"))
    acts = ale.getMinimalActionSet()
    rng = np.random.default_rng(0)  # actions drawn up front: the loop times ALE, not numpy
    choice = rng.integers(0, len(acts), size=1 << 16)
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(1000):
            ale.act(acts[choice[n & 0xFFFF]])
            n += 1
            if ale.game_over():
                ale.reset_game()
    return n / (time.perf_counter() - t0)


def shadow_steps_per_s(batch: int, preset: str, seconds: float, horizon: int) -> float:
    env = ShadowBreakout(batch, preset, seeds=np.arange(batch), max_steps=horizon)
    obs = env.reset()
    env.step(breakout_policy_v3(obs, V3_DEFAULTS))  # compile outside the timing
    obs = env.reset()
    steps = 0
    episode = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(horizon):
            obs, *_ = env.step(breakout_policy_v3(obs, V3_DEFAULTS))
            steps += batch
            if time.perf_counter() - t0 >= seconds:
                break
        episode += 1
        obs = env.reset(np.arange(batch) + episode * batch)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=4096, help="shadow envs stepped per call")
    ap.add_argument("--preset", default="atari", help="shadow preset name or JSON file")
    ap.add_argument("--seconds", type=float, default=5.0, help="measuring time per configuration")
    ap.add_argument("--horizon", type=int, default=1800, help="agent steps per shadow episode")
    ap.add_argument("--rounds", type=int, default=3, help="alternating ALE/shadow rounds (the machine is shared)")
    args = ap.parse_args()
    ale, shadow = [], []
    for _ in range(args.rounds):
        ale.append(ale_steps_per_s(args.seconds))
        shadow.append(shadow_steps_per_s(args.batch, args.preset, args.seconds, args.horizon))
    ratios = [s / a for s, a in zip(shadow, ale)]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}",
        "batch": args.batch,
        "preset": args.preset,
        "policy": "breakout_policy_v3",
        "ale_steps_per_s_one_core": [round(a) for a in ale],
        "shadow_steps_per_s_one_core": [round(s) for s in shadow],
        "speedup_per_core": [round(r, 1) for r in ratios],
        "median_speedup_per_core": round(float(np.median(ratios)), 1),
    }
    print(json.dumps(result, indent=2))
    record("shadow_throughput", result)


if __name__ == "__main__":
    main()
