"""Pool fidelity of shadow presets against real ALE Breakout: does a preset rank candidates as ALE does?

A pool of `--candidates` v3-family candidates from `search_space.random_candidates(N, seed=--pool-seed)`
(a seed the calibration never used: its traces use v3 defaults, one hand-picked set and
random_candidates(4, seed=909)) is played under the default ALE protocol (frameskip 4, sticky 0.25,
FIRE whenever no ball is in play, 1800 steps) on `--episodes` ALE seeds 0..E-1, plus E disjoint
reference seeds E..2E-1 (the ALE-vs-ALE Spearman = noise ceiling), and in the shadow on
`--shadow-episodes` seeds for every preset in `--presets`. ALE results are cached in `--cache`
(JSON), so presets can be compared without re-running ALE.

`--with-v3-defaults` adds the v3 default parameters as one more candidate (the old probe's pool shape).
This is the one fidelity benchmark (the earlier `breakout_shadow_fidelity.py` probe was folded into it).

Prints and writes (`--json`) per preset: Spearman/Pearson of candidate means vs ALE, the reference
self-Spearman, the median |score ratio - 1|, and pooled feature means (ball |vx|, |vy|, paddle
|dx|, episode steps, reward count) with shadow/ALE ratios.

    .venv/bin/python benchmarks/bench_breakout_fidelity.py --presets atari,atari-cal --json out.json
"""

from __future__ import annotations

import argparse
import json
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from results_file import provenance, record

from policylab.envs.breakout.ale import Protocol
from policylab.policies.breakout import V3_DEFAULTS
from policylab.rollout.seeds import named_range
from policylab.stats import pearson, spearman
from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group, run_task
from policylab.studies.breakout.search.search_space import random_candidates

FIELDS = ("score", "ball_abs_vx_mean", "ball_abs_vy_mean", "paddle_abs_delta_mean", "steps", "reward_count")


def _merge_pool(data: dict, out: dict) -> None:
    """This pool's entry replaces its old one; presets run now replace theirs; other pools and presets
    keep theirs, each with its own date and command."""
    pool = data.setdefault("pools", {}).setdefault(str(out["pool_seed"]), {})
    run = {k: v for k, v in provenance().items() if k != "machine"}
    pool.update({k: v for k, v in out.items() if k != "presets"}, **run)
    for name, p in out["presets"].items():
        pool.setdefault("presets", {})[name] = {k: v for k, v in p.items() if k != "per_candidate"}


def ale_episode(task: tuple[dict, int, int]) -> dict:
    """One ALE episode of a candidate through the project's episode runner (default protocol)."""
    params, seed, max_steps = task
    episode = run_task(
        EpisodeTask("ale", (seed,), "breakout_policy_v3", params, Protocol(max_steps=max_steps).model_dump())
    )[0]
    return {k: float(episode.outcome[k]) for k in FIELDS}


def shadow_rows(params: dict, preset: str, seeds: int, max_steps: int) -> list[dict]:
    """`seeds` shadow episodes of a candidate in one vectorized batch (seeds 5,000,000 + i: the named
    range breakout.fidelity)."""
    task = EpisodeTask(
        "shadow",
        named_range("breakout", "fidelity").first(seeds),
        "breakout_policy_v3",
        params,
        Protocol(max_steps=max_steps).model_dump(),
        preset=preset,
    )
    return [{k: float(ep.outcome[k]) for k in FIELDS} for ep in run_shadow_group([task])[0]]


def mean_rows(rows: list[dict]) -> dict:
    return {k: float(np.mean([r[k] for r in rows])) for k in FIELDS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=40, help="pool size")
    ap.add_argument("--pool-seed", type=int, default=4242, help="seed of random_candidates (never used by calibration)")
    ap.add_argument("--episodes", type=int, default=6, help="ALE seeds per candidate (plus as many reference seeds)")
    ap.add_argument("--shadow-episodes", type=int, default=256, help="shadow seeds per candidate")
    ap.add_argument("--max-steps", type=int, default=1800, help="agent steps per episode")
    ap.add_argument("--presets", default="atari,atari-cal", help="comma-separated shadow presets (names or .json)")
    ap.add_argument("--workers", type=int, default=2, help="ALE processes")
    ap.add_argument("--cache", default="runs/fidelity_ale_cache.json", help="ALE results cache (JSON)")
    ap.add_argument("--with-v3-defaults", action="store_true", help="add the v3 defaults as one more candidate")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    cands = random_candidates(args.candidates, args.pool_seed)
    if args.with_v3_defaults:
        cands = [{"candidate_id": "v3_defaults", "params": dict(V3_DEFAULTS)}, *cands]
    cache_path = Path(args.cache)
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    tasks, keys = [], []
    for c in cands:
        for s in range(2 * args.episodes):
            key = f"{args.pool_seed}/{c['candidate_id']}/{s}/{args.max_steps}"
            if key not in cache:
                tasks.append((c["params"], s, args.max_steps))
                keys.append(key)
    t0 = time.time()
    if tasks:
        with Pool(args.workers) as pool:
            for k, (key, res) in enumerate(zip(keys, pool.imap(ale_episode, tasks, chunksize=2))):
                cache[key] = res
                if (k + 1) % 40 == 0:
                    print(f"ALE {k + 1}/{len(tasks)} episodes, {time.time() - t0:.0f} s", flush=True)
                    cache_path.write_text(json.dumps(cache))
        cache_path.write_text(json.dumps(cache))
    ale_wall = time.time() - t0
    ale_main, ale_ref = [], []
    for c in cands:
        rows = [cache[f"{args.pool_seed}/{c['candidate_id']}/{s}/{args.max_steps}"] for s in range(2 * args.episodes)]
        ale_main.append(mean_rows(rows[: args.episodes]))
        ale_ref.append(mean_rows(rows[args.episodes :]))
    a = [m["score"] for m in ale_main]
    out = {
        "pool_seed": args.pool_seed,
        "candidates": len(cands),
        "ale_episodes": args.episodes,
        "shadow_episodes": args.shadow_episodes,
        "ale_wall_s": ale_wall,
        "reference_self_spearman": spearman(a, [m["score"] for m in ale_ref]),
        "presets": {},
    }
    # the ceiling for the full 2E-episode means is higher; report the E-vs-E one (what the audit reports)
    for preset in [p for p in args.presets.split(",") if p]:
        sh = [mean_rows(shadow_rows(c["params"], preset, args.shadow_episodes, args.max_steps)) for c in cands]
        s = [m["score"] for m in sh]
        a_all = [(m["score"] + r["score"]) / 2 for m, r in zip(ale_main, ale_ref)]
        ratio = [abs(y / x - 1) for x, y in zip(a_all, s) if x > 0]
        feats = {}
        for f in FIELDS:
            av = float(np.mean([(m[f] + r[f]) / 2 for m, r in zip(ale_main, ale_ref)]))
            sv = float(np.mean([m[f] for m in sh]))
            feats[f] = {"ale": av, "shadow": sv, "ratio": sv / av if av else None}
        out["presets"][preset] = {
            "spearman_vs_ale_main": spearman(s, a),
            "spearman_vs_ale_all": spearman(s, a_all),
            "pearson_vs_ale_all": pearson(s, a_all),
            "median_abs_ratio_minus_1": float(np.median(ratio)),
            "features": feats,
            # points per brick: mean score over mean reward count (a reward is one brick)
            "points_per_brick": {
                side: feats["score"][side] / feats["reward_count"][side]
                for side in ("ale", "shadow")
                if feats["reward_count"][side]
            },
            "per_candidate": [
                {"candidate_id": c["candidate_id"], "ale": x, "shadow": y} for c, x, y in zip(cands, a_all, s)
            ],
        }
        p = out["presets"][preset]
        print(
            f"{preset}: spearman(shadow, ALE main {args.episodes} eps) {p['spearman_vs_ale_main']:.3f}, "
            f"vs ALE all {2 * args.episodes} eps {p['spearman_vs_ale_all']:.3f}; median |ratio-1| "
            f"{p['median_abs_ratio_minus_1']:.3f}; "
            + ", ".join(f"{f} {v['shadow']:.2f}/{v['ale']:.2f}" for f, v in feats.items()),
            flush=True,
        )
    print(f"reference_self_spearman ({args.episodes} vs {args.episodes} ALE eps): {out['reference_self_spearman']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True))
    record("breakout_fidelity", out, merge=_merge_pool)


if __name__ == "__main__":
    main()
