"""The SB3 adapter (`policylab.envs.breakout.sb3.make_atari_env`) against SB3's `make_atari_env` on ALE.

Speed: env-steps per CPU-second (`time.process_time`, this process) of `n` games each, random minimal actions,
both built with the same seed and stepped in alternating rounds of one run; the ratio quoted is the median of
the rounds' ratios. End to end: SB3's PPO with a CnnPolicy over `VecFrameStack(n_stack=4)` of 8 games, the
same hyperparameters on each env, CPU-seconds for the same number of agent steps (the network's forward and
update passes are most of it: the end-to-end ratio says what a user gains in training).

    .venv/bin/python benchmarks/bench_breakout_sb3.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium as gym
import numpy as np
import stable_baselines3
import torch
from results_file import record
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_atari_env as sb3_make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack

from policylab.envs.breakout.sb3 import make_atari_env

gym.register_envs(ale_py)
MAKERS = {"policylab": make_atari_env, "sb3_on_ale": sb3_make_atari_env}


def steps_per_cpu_s(env, actions: np.ndarray, seconds: float) -> float:
    n = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for _ in range(20):
            env.step(actions[n % actions.shape[0]])
            n += 1
    return n * env.num_envs / (time.process_time() - start)


def speed(n_envs: int, rounds: int, seconds: float) -> dict:
    envs = {name: make("BreakoutNoFrameskip-v4", n_envs=n_envs, seed=0) for name, make in MAKERS.items()}
    actions = np.random.default_rng(0).integers(0, 4, (1000, n_envs))
    for env in envs.values():
        env.reset()
        steps_per_cpu_s(env, actions, 0.2)  # compiled and warm before timing
    rates = {name: [] for name in envs}
    for _ in range(rounds):
        for name, env in envs.items():
            rates[name].append(steps_per_cpu_s(env, actions, seconds))
    ratios = [a / b for a, b in zip(rates["policylab"], rates["sb3_on_ale"])]
    return {
        "n_envs": n_envs,
        **{f"{k}_steps_per_cpu_s": round(statistics.median(v), 1) for k, v in rates.items()},
        "ratios": [round(r, 2) for r in ratios],
        "median_ratio": round(statistics.median(ratios), 2),
    }


def ppo(steps: int) -> dict:
    cpu = {}
    for name, make in MAKERS.items():
        env = VecFrameStack(make("BreakoutNoFrameskip-v4", n_envs=8, seed=0), n_stack=4)
        model = PPO("CnnPolicy", env, n_steps=128, batch_size=256, n_epochs=4, seed=0, device="cpu")
        start = time.process_time()
        model.learn(steps)
        cpu[name] = round(time.process_time() - start, 1)
    return {"agent_steps": steps, "cpu_s": cpu, "ratio": round(cpu["sb3_on_ale"] / cpu["policylab"], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per env per round")
    ap.add_argument("--ppo-steps", type=int, default=8192)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    result = {"speed": {f"n{n}": speed(n, args.rounds, args.seconds) for n in (8, 32)}}
    print({k: v["median_ratio"] for k, v in result["speed"].items()})
    result["ppo"] = ppo(args.ppo_steps)
    print(result["ppo"])
    result["wall_s"] = round(time.time() - t0, 1)
    path = record(
        "breakout_sb3",
        result,
        machine_note=f"ale-py {ale_py.__version__}, stable-baselines3 {stable_baselines3.__version__}, torch 1 thread",
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
