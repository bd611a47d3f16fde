"""The search: successive halving over a candidate pool, and what its precision says about the pick.

Round r scores the survivors on the first ``first * keep**r`` seeds of breakout.search and keeps the best 1/keep."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from policylab.stats import DEFAULT_RESAMPLES, distribution
from policylab.studies.breakout.search.selection import rank_candidates

Scorer = Callable[[list[dict], tuple[int, ...]], list[list[float]]]  # candidates x seeds -> scores


def candidate_row(cand: dict, scores: list[float]) -> dict:
    """A candidate's summary over its seeds: what the selection rule ranks, and its mean's interval."""
    d = distribution(scores)
    return {
        "candidate_id": cand["candidate_id"],
        "params": cand["params"],
        "scores": d["scores"],
        "score_mean": d["mean"],
        "score_mean_ci95": d["mean_ci95"],
        "score_median": d["median"],
        "score_q25": float(np.quantile(d["scores"], 0.25)),
        "score_min": d["min"],
        "score_max": d["max"],
        "score_stdev": d["stdev"],
        "low_score_count": d["low_score_count"],
    }


def halve(
    candidates: list[dict],
    score: Scorer,
    schedule: Sequence[tuple[int, int]],
    seeds_of: Callable[[int], tuple[int, ...]],
    rule: str,
) -> list[dict]:
    """Run the rounds of `schedule` ((candidates, seeds each) per round, `TrainRequest.schedule`);
    returns one entry per round: its size and its rows ranked by `rule` (the first row of the last
    round is the pick)."""
    alive, rounds = list(candidates), []
    for r, (count, n_seeds) in enumerate(schedule):
        alive = alive[:count]
        seeds = seeds_of(n_seeds)
        ranked = rank_candidates([candidate_row(c, s) for c, s in zip(alive, score(alive, seeds))], rule)
        rounds.append({"round": r + 1, "candidates": len(alive), "seeds_each": len(seeds), "ranked": ranked})
        alive = [{"candidate_id": row["candidate_id"], "params": row["params"]} for row in ranked]
    return rounds


def regret_estimate(
    finalists: Sequence[dict], pick_id: str, *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> dict | None:
    """How far the pick's mean may be from the best finalist's, from the finalists' shared search seeds:
    seeds resampled together (paired), each resample's best mean minus the pick's. None with one
    finalist."""
    if len(finalists) < 2:
        return None
    scores = np.array([r["scores"] for r in finalists], dtype=float)  # finalists x seeds
    pick = next(i for i, r in enumerate(finalists) if r["candidate_id"] == pick_id)
    n = scores.shape[1]
    idx = np.random.Generator(np.random.PCG64(seed)).integers(0, n, size=(n_resamples, n))
    counts = np.zeros((n_resamples, n))  # how often each seed is drawn: finalists x seeds x resamples never exists
    np.add.at(counts, (np.arange(n_resamples)[:, None], idx), 1.0)
    means = scores @ counts.T / n  # finalists x resamples
    regret = means.max(axis=0) - means[pick]
    return {
        "mean_regret": float(regret.mean()),
        "regret_q95": float(np.quantile(regret, 0.95)),
        "prob_pick_is_best": float((means.argmax(axis=0) == pick).mean()),
        "finalists": len(finalists),
        "seeds": int(scores.shape[1]),
        "method": f"{n_resamples} bootstrap resamples of the finalists' shared search seeds (paired): the best "
        "resampled mean minus the pick's; prob_pick_is_best: the share of resamples where the pick's "
        "mean is the highest",
    }
