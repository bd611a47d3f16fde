"""`policylab/Breakout-v5` (the ROM model behind ALE's v5 Gymnasium API) against ALE's `ALE/Breakout-v5`.

Speed: agent steps per CPU-second (`time.process_time`) of one env each through `gymnasium.make` with v5's
defaults (frameskip 4, sticky 0.25), random minimal actions, resets at episode ends: rgb observations, then
rgb observations with `render()` (rgb_array) on every step, then RAM observations. Both envs run in
alternating rounds of the same run; the ratio quoted is the median of the rounds' ratios.

Exactness (the long sweep; tests/envs/breakout/test_ale_compat.py runs a short one): every obs_type x
frameskip 1/4/5/(2,5) x sticky 0/0.25, `--seeds` seeds each, three episodes per seed (the first reset with
the seed, the others without), random actions (all 18 with the full action set on a third of the seeds,
continuous (radius, angle, fire) on another third),
observation, reward, terminated, truncated and info compared after every reset and step
(`envs.breakout.v5_agreement.first_difference`). Idle episodes: NOOP to the 108,000-frame cap at frameskip 4
(rgb) and 1 (RAM), through attract mode's colour cycle.

    .venv/bin/python benchmarks/bench_breakout_gym.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import ale_py
import gymnasium as gym
import numpy as np
from results_file import record
from v5_agreement import first_difference

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from policylab.envs.breakout.registration import GYM_ID
from policylab.rollout.seeds import seed_range_base

AGREEMENT_BASE = seed_range_base("breakout", "v5_agreement")  # the sweep's episode k plays seed base + 97k + skip

gym.register_envs(ale_py)


def steps_per_cpu_s(env: gym.Env, actions: np.ndarray, seconds: float, render: bool) -> float:
    n = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for _ in range(100):
            _, _, term, trunc, _ = env.step(int(actions[n % actions.size]))
            if render:
                env.render()
            n += 1
            if term or trunc:
                env.reset()
    return n / (time.process_time() - start)


def speed(kwargs: dict, render: bool, rounds: int, seconds: float) -> dict:
    envs = {name: gym.make(env_id, **kwargs) for name, env_id in (("policylab", GYM_ID), ("ale", "ALE/Breakout-v5"))}
    actions = np.random.default_rng(0).integers(0, 4, 100_000)
    for env in envs.values():
        env.reset(seed=0)
        steps_per_cpu_s(env, actions, 0.2, render)  # compiled and warm before timing
    rates = {name: [] for name in envs}
    for _ in range(rounds):
        for name, env in envs.items():
            rates[name].append(steps_per_cpu_s(env, actions, seconds, render))
    ratios = [a / b for a, b in zip(rates["policylab"], rates["ale"])]
    return {
        "kwargs": {k: v for k, v in kwargs.items()},
        "render_each_step": render,
        "policylab_steps_per_cpu_s": round(statistics.median(rates["policylab"]), 1),
        "ale_steps_per_cpu_s": round(statistics.median(rates["ale"]), 1),
        "ratios": [round(r, 2) for r in ratios],
        "median_ratio": round(statistics.median(ratios), 2),
    }


def sweep(seeds: int) -> dict:
    episodes, identical, differences = 0, 0, []
    for obs_type in ("rgb", "grayscale", "ram"):
        for frameskip in (1, 4, 5, (2, 5)):
            for sticky in (0.0, 0.25):
                for k in range(seeds):
                    step = 7 * frameskip[0] if isinstance(frameskip, tuple) else frameskip
                    seed = AGREEMENT_BASE + 97 * k + step
                    kwargs = {
                        "obs_type": obs_type,
                        "frameskip": frameskip,
                        "repeat_action_probability": sticky,
                        "full_action_space": k % 3 == 1,
                        "continuous": k % 3 == 2,
                    }
                    diff = first_difference(kwargs, seed, max_steps=5_000, action_seed=seed, resets=3)
                    episodes += 3
                    identical += 3 if diff is None else 0
                    if diff is not None:
                        differences.append({"kwargs": repr(kwargs), "seed": seed, "first": diff})
    return {"episodes": episodes, "identical_every_step": identical, "differences": differences}


def idle() -> dict:
    out = {}
    for name, kwargs, steps in (
        ("frameskip_4_rgb", {"obs_type": "rgb"}, 27_000),
        ("frameskip_1_ram", {"obs_type": "ram", "frameskip": 1}, 108_000),
    ):
        diff = first_difference(kwargs, 0, steps, 0, actions=np.array([0]))
        out[name] = {"frames": 108_000, "identical_to_the_cap": diff is None, "first_difference": diff}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per env per round")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per exactness configuration")
    args = ap.parse_args()
    t0 = time.time()
    result = {
        "speed": {
            "rgb": speed({"obs_type": "rgb"}, False, args.rounds, args.seconds),
            "rgb_render": speed({"obs_type": "rgb", "render_mode": "rgb_array"}, True, args.rounds, args.seconds),
            "ram": speed({"obs_type": "ram"}, False, args.rounds, args.seconds),
        }
    }
    print({k: v["median_ratio"] for k, v in result["speed"].items()})
    result["exactness"] = sweep(args.seeds)
    print({k: v for k, v in result["exactness"].items() if k != "differences"})
    result["idle"] = idle()
    print(result["idle"])
    result["wall_s"] = round(time.time() - t0, 1)
    path = record("breakout_gym", result, machine_note=f"ale-py {ale_py.__version__}, gymnasium {gym.__version__}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
