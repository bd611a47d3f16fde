"""Selection regret of `policylab breakout train`'s search, against oracle means on 2,000 fresh seeds.

The oracle: every grid216 candidate (and breakout_policy_v3) played on the exact shadow (`ale-exact`,
ALE's scores seed for seed) on the first 2,000 seeds of breakout.exact_validation, the seeds the
training loop validates on, disjoint from the search's. For each search budget (the default successive
halving, the original's six seeds ranked worst-case first, and others measured to choose the default):
the pick, the candidate-seed scores it ranked, its oracle mean, its regret (the oracle best
minus the pick's oracle mean), its oracle rank (1 = the best), whether it is within 5% of the oracle
best, and its paired verdict against v3 on the oracle seeds with its interval. Every search runs
in-process without a store (the same `halving.halve` the command runs); the episodes are the
command's, bit for bit. Usage:

    .venv/bin/python benchmarks/bench_search_regret.py [--oracle-seeds 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from results_file import record

from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.params import load_preset
from policylab.policies.breakout import V3_DEFAULTS
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.requests import OBJECTIVES, STUDY_MAX_STEPS, TrainRequest
from policylab.studies.breakout.search.halving import halve
from policylab.studies.breakout.search.search_space import grid216
from policylab.studies.breakout.search.selection import compare_paired
from policylab.studies.breakout.search.train import search_seeds, shadow_scorer

PRESET = "ale-exact"
DEFAULT = TrainRequest.model_construct()
# name -> (first-round seeds, rounds, keep, objective); "default" is TrainRequest's
BUDGETS = {
    "default": (DEFAULT.search_seeds, DEFAULT.rounds, DEFAULT.keep, DEFAULT.objective),
    "original_6_seeds_worst_case": (6, 1, 3, "worst-case"),
    "flat_200_seeds_mean": (200, 1, 3, "mean"),
    "flat_6_seeds_mean": (6, 1, 3, "mean"),
    "flat_50_seeds_mean": (50, 1, 3, "mean"),
    "halving_10_seeds_first_mean": (10, 4, 3, "mean"),
    "halving_15_seeds_first_mean": (15, 4, 3, "mean"),
    "default_schedule_q25": (DEFAULT.search_seeds, DEFAULT.rounds, DEFAULT.keep, "q25"),
    "default_schedule_worst_case": (DEFAULT.search_seeds, DEFAULT.rounds, DEFAULT.keep, "worst-case"),
}


def _protocol() -> dict:
    return Protocol(max_steps=STUDY_MAX_STEPS, serve=DEFAULT.serve).model_dump()


def _chunk_scores(args: tuple[list[dict], tuple[int, ...]]) -> list[list[float]]:
    cands, seeds = args
    return shadow_scorer(_protocol(), load_preset(PRESET), PRESET)(cands, seeds)


def parallel_scores(cands: list[dict], seeds: tuple[int, ...], workers: int, per: int = 4) -> np.ndarray:
    chunks = [(cands[i : i + per], seeds) for i in range(0, len(cands), per)]
    with ProcessPoolExecutor(workers) as pool:
        return np.array([row for part in pool.map(_chunk_scores, chunks) for row in part])


class CachedScorer:
    """The command's scorer with a (candidate, seed) cache, so budgets that share seeds play them once;
    counts the scores each search asks for (with the earlier rounds' seeds again)."""

    def __init__(self) -> None:
        self.score = shadow_scorer(_protocol(), load_preset(PRESET), PRESET)
        self.cache: dict[tuple[str, int], float] = {}
        self.asked = 0

    def __call__(self, cands: list[dict], seeds: tuple[int, ...]) -> list[list[float]]:
        todo = [c for c in cands if any((c["candidate_id"], s) not in self.cache for s in seeds)]
        if todo:
            for c, row in zip(todo, self.score(todo, seeds)):
                self.cache.update({(c["candidate_id"], s): v for s, v in zip(seeds, row)})
        self.asked += len(cands) * len(seeds)
        return [[self.cache[(c["candidate_id"], s)] for s in seeds] for c in cands]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle-seeds", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    cands = grid216()
    oracle_seeds = named_range("breakout", "exact_validation").first(args.oracle_seeds)
    start = time.perf_counter()
    oracle = parallel_scores(cands + [{"candidate_id": "v3", "params": dict(V3_DEFAULTS)}], oracle_seeds, args.workers)
    oracle_s = time.perf_counter() - start
    v3, grid = oracle[-1], oracle[:-1]
    means = grid.mean(axis=1)
    best = int(means.argmax())
    order = np.argsort(-means, kind="stable")
    rank = {cands[i]["candidate_id"]: r + 1 for r, i in enumerate(order)}
    scorer = CachedScorer()
    budgets = {}
    for name, (first, rounds, keep, objective) in BUDGETS.items():
        req = TrainRequest.model_construct(search_seeds=first, rounds=rounds, keep=keep, objective=objective)
        schedule = req.schedule(len(cands))
        scorer.asked = 0
        t = time.perf_counter()
        pick = halve(cands, scorer, schedule, search_seeds, OBJECTIVES[objective])[-1]["ranked"][0]
        i = next(j for j, c in enumerate(cands) if c["candidate_id"] == pick["candidate_id"])
        cmp = compare_paired(oracle_seeds, list(grid[i]), list(v3))
        d = cmp["delta"]
        budgets[name] = {
            "search_seeds": first,
            "rounds": rounds,
            "keep": keep,
            "objective": objective,
            "schedule": [{"candidates": c, "seeds_each": n} for c, n in schedule],
            "episodes": scorer.asked,
            "pick": pick["candidate_id"],
            "pick_search_mean": pick["score_mean"],
            "pick_oracle_mean": float(means[i]),
            "regret": float(means[best] - means[i]),
            "regret_share": float((means[best] - means[i]) / means[best]),
            "oracle_rank": rank[pick["candidate_id"]],
            "within_5_percent": bool(means[i] >= 0.95 * means[best]),
            "vs_v3": {
                "mean_delta": d["mean_delta"],
                "ci95": d["ci95"],
                "verdict": cmp["verdict"],
                "verdict_agreement": d["verdict_agreement"],
            },
            "search_wall_s_cached": time.perf_counter() - t,
        }
        print(
            name,
            json.dumps(
                {k: budgets[name][k] for k in ("pick", "pick_oracle_mean", "regret", "oracle_rank", "episodes")}
            ),
            flush=True,
        )
    top = [{"candidate_id": cands[i]["candidate_id"], "oracle_mean": float(means[i])} for i in order[:10]]
    record(
        "search_regret",
        {
            "benchmark": "selection regret of breakout train's search: every grid216 candidate's mean on fresh exact-shadow "
            "seeds (the oracle) against the pick of each search budget",
            "script": "benchmarks/bench_search_regret.py",
            "oracle": {
                "seeds": f"breakout.exact_validation, first {args.oracle_seeds} ({oracle_seeds[0]}.."
                f"{oracle_seeds[-1]})",
                "preset": PRESET,
                "protocol": _protocol(),
                "best": cands[best]["candidate_id"],
                "best_mean": float(means[best]),
                "v3_mean": float(v3.mean()),
                "top10": top,
                "wall_s": oracle_s,
                "candidate_means": {c["candidate_id"]: float(m) for c, m in zip(cands, means)},
            },
            "budgets": budgets,
            "note": "episodes: the candidate-seed scores each search ranks, summed over its rounds (a round re-ranks "
            "the earlier rounds' seeds, which the command's store does not play again); search_wall_s_cached is "
            "not a speed: budgets share a cache of played episodes",
        },
    )


if __name__ == "__main__":
    main()
