"""ALE's sticky-action stream (policylab/envs/breakout/ale_random.py): does ALE repeat exactly the frames it predicts,
does the shadow with `rng: ale` play ALE's paddle on the same seed, and what does the stream cost?

1. Stream vs ALE (`ale_random_agreement.first_mismatch`): on each of the first `--seeds` eval seeds, ALE with
   sticky 0.25 played by a noisy ball tracker to game over (at most `--frames` frames), RAM after every
   `act`, against a fresh sticky-free ALE fed the per-frame actions the stream says were applied; at
   frameskip 1 (RAM every frame) and 4 (the default protocol, RAM every agent step). Control: the same
   replay with the next seed's stream must fail.
2. Shadow paddle vs ALE paddle: atari-cal with `rng: ale` (and with its splitmix stream) against ALE under
   the default protocol, random NOOP/RIGHT/LEFT for `--steps` agent steps (no FIRE: no ball, so only the
   paddle and the sticky decisions play a part), paddle x compared at every step.
3. Cost: shadow agent steps per second on one core, atari-cal with splitmix vs with `rng: ale`
   (breakout_policy_v3 in the loop, batch 4096), alternating rounds, and raw ALE's rate in the same run.
4. Same seed, same score? breakout_policy_v3 (defaults) under the default protocol (frameskip 4, sticky
   0.25, serve auto, 1,800 steps) on the same seeds in ALE and in atari-cal with each stream: per-seed
   score differences and the rank correlation over seeds. The stream is the only random input; the rest
   of the difference is the preset's ball and bricks.

`--parts` runs a subset (each part replaces only its own key in the results file).

    .venv/bin/python benchmarks/bench_ale_random.py
"""

from __future__ import annotations

import argparse
import json
import time

import ale_random_agreement
import numpy as np
from bench_shadow_breakout import ale_steps_per_s, shadow_steps_per_s
from results_file import record

from policylab.envs.breakout.ale import AleBreakout, Protocol
from policylab.envs.breakout.contract import LEFT, NOOP, RIGHT, F
from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.policies.breakout import V3_DEFAULTS, breakout_policy_v3
from policylab.rollout.seeds import named_range
from policylab.stats import spearman
from policylab.studies.breakout.episodes.runner import serve_actions

STICKY = Protocol().sticky
PARTS = ("stream_vs_ale", "shadow_paddle_vs_ale", "cost", "per_seed_scores")


def stream_vs_ale(seeds: tuple[int, ...], frames: int) -> dict:
    out = {}
    for fs in (1, 4):
        t0 = time.perf_counter()
        rows = [ale_random_agreement.first_mismatch(s, fs, frames // fs, STICKY) for s in seeds]
        control = [ale_random_agreement.first_mismatch(s, fs, frames // fs, STICKY, stream_seed=s + 1) for s in seeds]
        out[f"frameskip_{fs}"] = {
            "episodes": len(rows),
            "episodes_identical_every_step": sum(r["first_mismatch_step"] is None for r in rows),
            "frames_compared": sum(r["frames"] for r in rows),
            "steps_compared": sum(r["steps"] for r in rows),
            "repeats_that_changed_the_action": sum(r["repeats_that_changed_the_action"] for r in rows),
            "control_next_seed_stream_episodes_diverged": sum(r["first_mismatch_step"] is not None for r in control),
            "control_median_first_mismatch_step": float(
                np.median([r["first_mismatch_step"] for r in control if r["first_mismatch_step"] is not None] or [-1])
            ),
            "wall_s": round(time.perf_counter() - t0, 1),
        }
        print(f"frameskip {fs}:", json.dumps(out[f"frameskip_{fs}"]), flush=True)
    return out


def shadow_paddle_vs_ale(seeds: tuple[int, ...], steps: int) -> dict:
    moves = np.array([NOOP, RIGHT, LEFT])
    equal = {"ale": 0, "splitmix": 0}
    whole = {"ale": 0, "splitmix": 0}
    for seed in seeds:
        asked = moves[np.random.default_rng(seed).integers(0, 3, size=steps)]
        ale = AleBreakout(Protocol(), seed)
        ale.reset()
        ale_x = np.array([ale.step(a)[0][F["paddle_x"]] for a in asked])
        for rng in equal:
            shadow = ShadowBreakout(1, load_preset("atari-cal", rng=rng), seeds=[seed])
            shadow.reset()
            x = np.array([shadow.step(np.array([a]))[0][0, F["paddle_x"]] for a in asked])
            equal[rng] += int((x == ale_x).sum())
            whole[rng] += int(np.array_equal(x, ale_x))
    result = {
        "episodes": len(seeds),
        "steps_per_episode": steps,
        **{f"{rng}_steps_equal_fraction": round(equal[rng] / (len(seeds) * steps), 4) for rng in equal},
        **{f"{rng}_episodes_equal_every_step": whole[rng] for rng in whole},
    }
    print("shadow paddle:", json.dumps(result), flush=True)
    return result


def cost(seconds: float, rounds: int, batch: int) -> dict:
    presets = {"splitmix": load_preset("atari-cal"), "ale": load_preset("atari-cal", rng="ale")}
    rates: dict[str, list[float]] = {"ale_emulator": [], "splitmix": [], "ale": []}
    for _ in range(rounds):
        rates["ale_emulator"].append(ale_steps_per_s(seconds))
        for name, params in presets.items():
            rates[name].append(shadow_steps_per_s(batch, params, seconds, 1800))
    ratio = [a / s for a, s in zip(rates["ale"], rates["splitmix"])]
    result = {
        "batch": batch,
        "preset": "atari-cal",
        "policy": "breakout_policy_v3",
        "rounds": rounds,
        "ale_emulator_steps_per_s_one_core": [round(r) for r in rates["ale_emulator"]],
        "shadow_splitmix_steps_per_s_one_core": [round(r) for r in rates["splitmix"]],
        "shadow_ale_stream_steps_per_s_one_core": [round(r) for r in rates["ale"]],
        "median_ale_stream_over_splitmix": round(float(np.median(ratio)), 3),
        "median_ale_stream_speedup_vs_ale_per_core": round(
            float(np.median([s / a for s, a in zip(rates["ale"], rates["ale_emulator"])])), 1
        ),
    }
    print("cost:", json.dumps(result), flush=True)
    return result


def per_seed_scores(seeds: tuple[int, ...], max_steps: int) -> dict:
    protocol = Protocol(max_steps=max_steps)
    ale_scores = []
    for seed in seeds:
        env = AleBreakout(protocol, seed)
        obs, over, score = env.reset(), False, 0.0
        for _ in range(max_steps):
            act = serve_actions(
                breakout_policy_v3(obs[None].astype(np.float32), V3_DEFAULTS),
                np.array([obs[F["ball_in_play"]] > 0]),
                np.ones(1, dtype=bool),
                "auto",
            )
            obs, reward, over = env.step(int(act[0]))
            score += reward
            if over:
                break
        ale_scores.append(score)
    out = {"episodes": len(seeds), "policy": "breakout_policy_v3", "ale_scores": ale_scores}
    for rng in ("splitmix", "ale"):
        env = ShadowBreakout(len(seeds), load_preset("atari-cal", rng=rng), seeds=seeds, max_steps=max_steps)
        obs = env.reset()
        for _ in range(max_steps):
            act = serve_actions(
                breakout_policy_v3(obs, V3_DEFAULTS),
                obs[:, F["ball_in_play"]] > 0,
                np.ones(len(seeds), dtype=bool),
                "auto",
            )
            obs, *_ = env.step(act)
        diff = env.score.astype(float) - np.array(ale_scores)
        out[rng] = {
            "scores": env.score.tolist(),
            "equal_scores": int((diff == 0).sum()),
            "mean_abs_diff": round(float(np.abs(diff).mean()), 2),
            "spearman_vs_ale": round(spearman(env.score, ale_scores), 3),
        }
    print("per-seed scores:", json.dumps({k: v for k, v in out.items() if k != "ale_scores"}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=32, help="eval seeds checked (the first N of the eval range)")
    ap.add_argument("--frames", type=int, default=6000, help="at most this many frames per episode")
    ap.add_argument("--steps", type=int, default=1800, help="agent steps per shadow-paddle episode")
    ap.add_argument("--seconds", type=float, default=3.0, help="measuring time per throughput configuration")
    ap.add_argument("--rounds", type=int, default=3, help="alternating throughput rounds (the machine is shared)")
    ap.add_argument("--batch", type=int, default=4096, help="shadow envs stepped per call")
    ap.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS), help="parts to run")
    args = ap.parse_args()
    seeds = named_range("breakout", "eval").first(args.seeds)
    run = {
        "stream_vs_ale": lambda: stream_vs_ale(seeds, args.frames),
        "shadow_paddle_vs_ale": lambda: shadow_paddle_vs_ale(seeds, args.steps),
        "cost": lambda: cost(args.seconds, args.rounds, args.batch),
        "per_seed_scores": lambda: per_seed_scores(seeds, args.steps),
    }
    result = {
        "benchmark": "ALE 0.12.1's sticky-action stream reproduced (envs/breakout/ale_random.py): RAM every frame against "
        "ALE, the shadow paddle against ALE's, the stream's cost in the shadow, per-seed scores",
        "script": "benchmarks/bench_ale_random.py",
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        **{part: run[part]() for part in args.parts},
    }
    record("ale_random", result)


if __name__ == "__main__":
    main()
