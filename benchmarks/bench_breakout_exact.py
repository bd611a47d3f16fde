"""The exact Breakout model (`envs/breakout/rom/kernel.py`, preset `ale-exact`) against the real ALE.

Exactness: full-length episodes (`--max-steps` agent steps at frameskip 4 or game over) on the lockstep seeds,
policies in turn: v3 defaults, a uniform v3-family candidate per episode, uniform random actions, serve auto.
ALE runs at frame_skip 1 without sticky actions of its own; both games get the same per-frame action, the
sticky decision taken from ALE's MT19937 stream for the episode's seed (`ale_random.sticky_repeats`, the
frames ALE itself repeats at sticky 0.25). The whole 128-byte RAM is compared after every frame; the screen
(`getScreen` against `rom.render`) on every frame of the first `--screen-episodes` episodes.
An episode's first differing frame and the bytes that differ are kept, and classed by what they hold.

Pot model: RAM 70 against `paddle_reading` for every resistance ALE's paddle can reach (101 values).

Audit: `policylab breakout audit --preset ale-exact --episodes N` (v3, default protocol: frameskip 4, sticky
0.25, serve auto), the per-seed score differences ALE minus the exact model. Rank: the same audit over
`--rank-candidates` uniform v3-family candidates on `--rank-episodes` seeds each, the Spearman correlation of
the candidates' means on the exact model and on ALE (same seeds), and ALE against itself on disjoint seeds.

Speed: agent steps per second on one core, ALE (frame_skip 4, sticky 0.25, random minimal actions,
`bench_shadow_breakout.ale_steps_per_s`) against the exact model (a `ShadowBreakout` batch of `--batch`,
v3 in the loop, whole-batch resets every `--horizon` steps), in alternating rounds of the same run. Only
live env steps count (a finished env is frozen and costs nothing); `kernel` times the step call alone.

    .venv/bin/python benchmarks/bench_breakout_exact.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from bench_shadow_breakout import ale_steps_per_s
from results_file import record
from rom_ale_agreement import pot_readings

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.ale import frame_emulator, ram_features
from policylab.envs.breakout.contract import FIRE
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.render import render_colours
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.policies.breakout import V3_DEFAULTS, breakout_policy_v3
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.search.search_space import random_candidates

KINDS = ("v3", "random-v3", "random-actions")
BYTE_CLASSES = (
    ("bricks", range(0, 36)),
    ("paddle", (70, 72)),
    ("ball", range(99, 110)),
    ("score", (76, 77)),
    ("lives", (57,)),
    ("stack", range(121, 128)),
)


def byte_class(idx: list[int]) -> str:
    names = [name for name, span in BYTE_CLASSES if any(i in span for i in idx)]
    return "+".join(names) if names else "other"


def episode(seed: int, kind: str, params: dict, max_steps: int, frameskip: int, sticky: float, screens: bool) -> dict:
    """One lockstep episode; returns frames played, the first divergence (frame, bytes) or None, screens compared
    and screens equal, the final scores."""
    ale = frame_emulator(seed)
    acts = ale.getMinimalActionSet()
    repeats = ale_random.sticky_repeats(seed, max_steps * frameskip, sticky)
    row = np.zeros(rom_kernel.NI, dtype=np.int64)
    row[: rom_kernel.RAM_N] = rom_kernel.RESET_RAM
    row[rom_kernel.SHOWN] = rom_kernel.drawn_with(row)
    pot, last, frame = rom_kernel.PADDLE_DEFAULT, 0, 0
    rng = np.random.default_rng(seed)
    obs = ram_features(ale.getRAM(), None)
    first, screen_frames, screen_equal = None, 0, 0
    for step in range(max_steps):
        if kind == "random-actions":
            a = int(rng.integers(0, 4))
        else:
            a = int(breakout_policy_v3(obs[None].astype(np.float32), params)[0])
        if obs[4] == 0:
            a = FIRE
        for f in range(frameskip):
            if not repeats[step * frameskip + f]:
                last = a
            pot = rom_kernel.pot_after(pot, last)
            rom_kernel.frame(row, pot, last == FIRE)
            ale.act(acts[last])
            frame += 1
            ram = ale.getRAM()
            diff = np.flatnonzero(row[: rom_kernel.RAM_N] != ram)
            if diff.size and first is None:
                first = {"frame": frame, "bytes": [int(i) for i in diff], "class": byte_class(diff.tolist())}
            if screens:
                screen_frames += 1
                screen_equal += bool(np.array_equal(render_colours(row), ale.getScreen()))
            if ale.game_over():
                break
        if first is not None or ale.game_over():
            break
        obs = ram_features(ram, obs)
    return {
        "seed": seed,
        "kind": kind,
        "frames": frame,
        "first_divergence": first,
        "game_over": bool(ale.game_over()),
        "score_ale": int(rom_kernel.ale_score(ram.astype(np.int64))),
        "score_exact": int(rom_kernel.ale_score(row)),
        "screen_frames": screen_frames,
        "screen_equal": screen_equal,
    }


def lockstep(n: int, max_steps: int, screen_episodes: int) -> dict:
    seeds = named_range("breakout", "lockstep").first(n)
    cands = random_candidates(n, seed=seeds[0])
    rows = []
    t0 = time.perf_counter()
    for k, seed in enumerate(seeds):
        kind = KINDS[k % len(KINDS)]
        params = dict(V3_DEFAULTS, **cands[k]["params"]) if kind == "random-v3" else V3_DEFAULTS
        rows.append(episode(seed, kind, params, max_steps, 4, 0.25, k < screen_episodes))
        if (k + 1) % 20 == 0:
            done = sum(r["first_divergence"] is None for r in rows)
            print(f"lockstep {k + 1}/{n}: {done} identical, {time.perf_counter() - t0:.0f} s", flush=True)
    identical = [r for r in rows if r["first_divergence"] is None]
    classes = Counter(r["first_divergence"]["class"] for r in rows if r["first_divergence"] is not None)
    by_kind = {
        kind: {
            "episodes": sum(r["kind"] == kind for r in rows),
            "identical_every_frame": sum(r["kind"] == kind and r["first_divergence"] is None for r in rows),
        }
        for kind in KINDS
    }
    screen_frames = sum(r["screen_frames"] for r in rows)
    return {
        "episodes": n,
        "max_steps": max_steps,
        "frameskip": 4,
        "sticky": 0.25,
        "seeds": [int(seeds[0]), int(seeds[-1])],
        "frames": sum(r["frames"] for r in rows),
        "identical_every_frame": len(identical),
        "identical_fraction": len(identical) / n,
        "game_over_within_horizon": sum(r["game_over"] for r in rows),
        "final_score_equal": sum(r["score_ale"] == r["score_exact"] for r in rows),
        "divergence_classes": dict(classes),
        "by_policy": by_kind,
        "screen_episodes": min(screen_episodes, n),
        "screen_frames": screen_frames,
        "screen_identical_frames": sum(r["screen_equal"] for r in rows),
        "screen_identical_fraction": sum(r["screen_equal"] for r in rows) / max(screen_frames, 1),
        "diverged": [r for r in rows if r["first_divergence"] is not None][:20],
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def pot_model() -> dict:
    """RAM 70 after a frame at each reachable resistance, against the model."""
    seen, wrong = pot_readings(named_range("breakout", "lockstep").first(1)[0])
    return {"resistances": seen, "readings_wrong": wrong}


def audit(episodes: int) -> dict:
    from policylab.cli import invoke

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        t0 = time.perf_counter()
        status = invoke(
            [
                "breakout",
                "audit",
                "--policy",
                "breakout_policy_v3",
                "--preset",
                "ale-exact",
                "--episodes",
                str(episodes),
                "--out",
                str(out),
            ]
        )
        wall = time.perf_counter() - t0
        paired = json.loads((out / "audit.json").read_text())["comparison"]["paired_by_seed"]
    deltas = [row["score_delta_ale_minus_shadow"] for row in paired]
    return {
        "command": f"policylab breakout audit --policy breakout_policy_v3 --preset ale-exact --episodes {episodes}",
        "exit_status": status,
        "episodes": len(deltas),
        "zero_score_deltas": sum(d == 0 for d in deltas),
        "max_abs_score_delta": max(abs(d) for d in deltas),
        "wall_s": round(wall, 1),
    }


def rank(candidates: int, episodes: int) -> dict:
    from policylab.cli import invoke

    with tempfile.TemporaryDirectory() as tmp:
        pool = Path(tmp) / "candidates.json"
        pool.write_text(json.dumps(random_candidates(candidates, seed=named_range("breakout", "lockstep").first(1)[0])))
        out = Path(tmp) / "audit"
        status = invoke(
            [
                "breakout",
                "audit",
                "--policy",
                "breakout_policy_v3",
                "--preset",
                "ale-exact",
                "--episodes",
                str(episodes),
                "--candidates",
                str(pool),
                "--out",
                str(out),
            ]
        )
        rc = json.loads((out / "audit.json").read_text())["rank_correlation"]
    return {
        "exit_status": status,
        "candidates": candidates,
        "episodes_per_candidate": episodes,
        "spearman_exact_vs_ale_same_seeds": rc["spearman"],
        "pearson": rc["pearson"],
        "ale_self_spearman_disjoint_seeds": rc["reference_self_spearman"],
    }


def exact_steps_per_s(batch: int, seconds: float, horizon: int) -> tuple[float, float]:
    """(live env steps per second of the loop with v3 in it, of the step call alone)."""
    env = ShadowBreakout(batch, "ale-exact", seeds=np.arange(batch), max_steps=horizon)
    obs = env.reset()
    env.step(breakout_policy_v3(obs, V3_DEFAULTS))  # compile outside the timing
    obs = env.reset()
    live = 0
    in_step = 0.0
    episode = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(horizon):
            act = breakout_policy_v3(obs, V3_DEFAULTS)
            act[obs[:, 4] == 0] = FIRE
            live += int(batch - env._term.sum())
            t = time.perf_counter()
            obs, *_ = env.step(act)
            in_step += time.perf_counter() - t
            if time.perf_counter() - t0 >= seconds:
                break
        episode += 1
        obs = env.reset(np.arange(batch) + episode * batch)
    return live / (time.perf_counter() - t0), live / in_step


def speed(args) -> dict:
    ale, loop, kernel = [], [], []
    for _ in range(args.rounds):
        ale.append(ale_steps_per_s(args.seconds))
        a, b = exact_steps_per_s(args.batch, args.seconds, args.horizon)
        loop.append(a)
        kernel.append(b)
    return {
        "batch": args.batch,
        "policy": "breakout_policy_v3 (serve auto)",
        "ale_steps_per_s_one_core": [round(a) for a in ale],
        "exact_loop_live_steps_per_s_one_core": [round(s) for s in loop],
        "exact_kernel_live_steps_per_s_one_core": [round(s) for s in kernel],
        "speedup_loop_per_core": [round(s / a, 1) for s, a in zip(loop, ale)],
        "speedup_kernel_per_core": [round(s / a, 1) for s, a in zip(kernel, ale)],
        "median_speedup_loop_per_core": round(float(np.median([s / a for s, a in zip(loop, ale)])), 1),
        "median_speedup_kernel_per_core": round(float(np.median([s / a for s, a in zip(kernel, ale)])), 1),
        "goal_speedup_per_core": 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=200, help="lockstep episodes")
    ap.add_argument("--max-steps", type=int, default=1800, help="agent steps per lockstep episode")
    ap.add_argument("--screen-episodes", type=int, default=40, help="episodes whose every screen is compared")
    ap.add_argument("--batch", type=int, default=4096, help="exact-model envs stepped per call")
    ap.add_argument("--seconds", type=float, default=5.0, help="measuring time per speed configuration")
    ap.add_argument("--horizon", type=int, default=1800, help="agent steps per exact-model episode (speed)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating ALE/exact rounds (the machine is shared)")
    ap.add_argument("--audit-episodes", type=int, default=100, help="episodes of the audit part")
    ap.add_argument("--rank-candidates", type=int, default=8, help="candidates of the rank part")
    ap.add_argument("--rank-episodes", type=int, default=6, help="seeds per candidate in the rank part")
    ap.add_argument(
        "--parts",
        default="speed,pot,lockstep,audit,rank",
        help="comma-separated parts to run (each replaces its key in the results file)",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    result = {}
    if "audit" in parts:
        result["audit"] = audit(args.audit_episodes)
        print(json.dumps(result["audit"], indent=2), flush=True)
    if "rank" in parts:
        result["rank"] = rank(args.rank_candidates, args.rank_episodes)
        print(json.dumps(result["rank"], indent=2), flush=True)
    if "pot" in parts:
        result["pot_model"] = pot_model()
    if "lockstep" in parts:
        result["lockstep"] = lockstep(args.episodes, args.max_steps, args.screen_episodes)
        print(json.dumps({k: v for k, v in result["lockstep"].items() if k != "diverged"}, indent=2), flush=True)
    if "speed" in parts:
        result["speed"] = speed(args)
        print(json.dumps(result["speed"], indent=2), flush=True)
    record("breakout_exact", result)


if __name__ == "__main__":
    main()
