"""The training loop's conclusions from known rows: the pick, the regret and the verdict.

`policylab breakout train` is run on the command line with its ALE screening and validation
episodes already in its store, written here with known scores under the keys the loop plans (a
present key is never run again, docs/design.md). The shadow search runs for real (3 candidates, 1
seed, 100 steps); everything the loop decides on ALE comes from the rows below. Each case's
expected outcome is derived from the rows by the stated rules, in code written here:

- selection (docs/breakout.md, training loop step 2): the screened candidates sorted by
  "low_score_count asc, score_min desc, score_mean desc" on their ALE screening scores;
- regret: the best ALE screening mean among the screened candidates minus the pick's;
- verdict (step 4): the Student-t 95% interval of the paired mean delta (pick - baseline, mean +-
  t(0.975, n - 1) s / sqrt(n), recomputed here) is wholly above 0: improved; wholly below: worse; else
  inconclusive; with fewer than 5 pairs: too few seeds, whatever the interval. Each case's interval
  is argued by hand below, so a wrong rule cannot hide behind a lucky one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from policylab.cli import invoke
from policylab.policies.breakout import load_params
from policylab.rollout.store import Store
from policylab.studies.breakout.episodes.runner import EpisodeTask, planned
from policylab.studies.breakout.requests import TrainRequest
from policylab.studies.breakout.search import train
from policylab.studies.breakout.search.search_space import random_candidates

# one search round on one seed, the original's rule, the validation on ALE (--exact-episodes 0)
ARGS = {
    "space": "random",
    "budget": 3,
    "search_seeds": 1,
    "rounds": 1,
    "objective": "worst-case",
    "screen_top": 3,
    "screen_episodes": 3,
    "validate_episodes": 8,
    "exact_episodes": 0,
    "max_steps": 100,
    "video": False,
}
CLI = [
    "--space",
    "random",
    "--budget",
    "3",
    "--search-seeds",
    "1",
    "--rounds",
    "1",
    "--objective",
    "worst-case",
    "--screen-top",
    "3",
    "--screen-episodes",
    "3",
    "--validate-episodes",
    "8",
    "--exact-episodes",
    "0",
    "--max-steps",
    "100",
    "--no-video",
]

# ALE screening scores (3 screening seeds) per candidate. By the rule: c001 has no score below 3
# (low_score_count 0) and is the pick; c000 has the best mean (20) but one low score; c002 is last.
SCREENING = {"c000": [0.0, 30.0, 30.0], "c001": [3.0, 3.0, 3.0], "c002": [2.0, 2.0, 2.0]}
PICK, BEST, REGRET = "c001", "c000", 20.0 - 3.0

BASE = [12.0, 9.0, 15.0, 11.0, 20.0, 8.0, 14.0, 10.0]  # the baseline's 8 validation scores
CASES = {
    # deltas 3, 1, 5, 2, 7, 1, 4, 2: mean 3.125, s 2.03, t(0.975, 7) s / sqrt(8) = 1.70: [1.43, 4.82] above 0
    "improved": [b + d for b, d in zip(BASE, [3, 1, 5, 2, 7, 1, 4, 2])],
    # the same deltas negated: [-4.82, -1.43], below 0
    "worse": [b - d for b, d in zip(BASE, [3, 1, 5, 2, 7, 1, 4, 2])],
    # deltas (+40, then -5 x 7): mean +0.625 > 0, so the original's "not lower" says yes; but s = 15.9
    # and t(0.975, 7) s / sqrt(8) = 13.3, so the interval [-12.7, 13.9] contains 0: inconclusive
    "inconclusive": [BASE[0] + 40] + [b - 5 for b in BASE[1:]],
}


def expected_pick(screening: dict[str, list[float]]) -> str:
    def key(cid):
        s = screening[cid]
        return (sum(v < 3 for v in s), -min(s), -np.mean(s))

    return sorted(screening, key=key)[0]  # sorted is stable: ties keep candidate order


def paired_interval(new, base) -> list[float]:
    d = np.asarray(new, float) - np.asarray(base, float)
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return [float(d.mean() - half), float(d.mean() + half)]


def verdict_by_rule(ci, n) -> str:
    return "too few seeds" if n < 5 else "improved" if ci[0] > 0 else "worse" if ci[1] < 0 else "inconclusive"


def plant(store_root, rows: dict[str, list[float]]) -> None:
    """Store ALE records with the given scores under the keys the loop plans for its screening and
    validation (candidate id or 'baseline' -> scores over the screening or validation seeds)."""
    p = train.plan(TrainRequest(out=store_root.parent / "planning", **ARGS))
    params = {c["candidate_id"]: c["params"] for c in random_candidates(3, 0)}
    params["baseline"] = load_params("breakout_policy_v3", None)
    with Store(store_root) as store:
        for who, scores in rows.items():
            name, cid = (who.split(":") + [None])[:2]
            seeds = p.validate_seeds if name == "validate" else p.screen_seeds
            assert len(scores) == len(seeds)
            task = EpisodeTask("ale", tuple(seeds), "breakout_policy_v3", params[cid], p.protocol)
            for s, score in zip(seeds, scores):
                pl = planned(task, s)
                store.put(
                    pl.key,
                    study=pl.study,
                    world={**pl.world, **pl.labels},
                    policy=pl.policy,
                    protocol=pl.protocol,
                    outcome={"score": score, "planted_by": "test_verdict_conclusions"},
                )


@pytest.mark.parametrize("case", list(CASES))
def test_verdict_pick_and_regret_follow_the_stated_rules(tmp_path, case):
    pick_scores = CASES[case]
    store = tmp_path / "store"
    rows = {f"screen:{cid}": s for cid, s in SCREENING.items()}
    rows.update({f"validate:{PICK}": pick_scores, "validate:baseline": BASE})
    plant(store, rows)
    with Store(store) as s:
        before = len(s.keys())
    out = tmp_path / "run"
    assert invoke(["breakout", "train", *CLI, "--store", str(store), "--out", str(out)]) == 0
    with Store(store) as s:
        assert len(s.keys()) == before + 3  # only the 3 shadow search episodes ran; ALE rows were all present
    data = json.loads((out / "report.json").read_text())

    assert expected_pick(SCREENING) == PICK
    assert data["training"]["selected_candidate"]["candidate_id"] == PICK
    regret = data["evaluation"]["regret"]
    assert (regret["best_screened_candidate"], regret["regret"]) == (BEST, pytest.approx(REGRET))

    ev, dec = data["evaluation"], data["decision"]
    assert [(r["pick_score"], r["baseline_score"]) for r in ev["paired_by_seed"]] == list(zip(pick_scores, BASE))
    ci = paired_interval(pick_scores, BASE)
    assert ev["paired_delta"]["ci95"] == pytest.approx(ci, abs=1e-12)
    assert ev["paired_delta"]["mean_delta"] == pytest.approx(np.mean(np.subtract(pick_scores, BASE)))
    assert verdict_by_rule(ci, len(BASE)) == case  # the rows were built for this verdict
    assert dec["verdict"] == case
    assert dec["new_policy_not_lower_than_previous_best"] == (np.mean(pick_scores) >= np.mean(BASE))
    assert (dec["failure_reason"] is None) == (case == "improved")
    if case == "inconclusive":
        assert dec["new_policy_not_lower_than_previous_best"] is True  # the original's rule would have adopted it
        assert ci == pytest.approx([-12.7, 13.9], abs=0.05)
    if case != "improved":  # the default search env is ale-exact: its scores are ALE's, nothing to calibrate
        assert "calibrate" not in dec["next_recommendation"] and "--search-seeds" in dec["next_recommendation"]


def test_an_ale_confirmation_that_disagrees_with_the_shadow_decides_on_ale(tmp_path):
    """The exact validation stands for ALE only if ALE agrees on its confirmation seeds. ALE records
    planted with scores the shadow cannot have (every one 1,000 above what the exact shadow plays)
    are counted as unconfirmed, and the verdict is then the ALE seeds' own, said so in verdict_source:
    every planted pick delta is 1,000 above the baseline's, but 3 pairs are too few seeds for a verdict
    (a percentile bootstrap called them "improved")."""
    args = {
        "space": "random",
        "budget": 1,
        "search_seeds": 1,
        "rounds": 1,
        "validate_episodes": 3,
        "exact_episodes": 6,
        "max_steps": 100,
        "video": False,
    }
    store = tmp_path / "store"
    p = train.plan(TrainRequest(out=tmp_path / "planning", **args))
    assert p.exact and len(p.ale_seeds) == 3
    (cand,) = random_candidates(1, 0)
    base = load_params("breakout_policy_v3", None)
    with Store(store) as st:
        for params, scores in ((cand["params"], [1000.0, 1001.0, 1002.0]), (base, [0.0, 1.0, 2.0])):
            task = EpisodeTask("ale", p.ale_seeds, "breakout_policy_v3", params, p.protocol)
            for s, score in zip(p.ale_seeds, scores):
                pl = planned(task, s)
                st.put(
                    pl.key,
                    study=pl.study,
                    world={**pl.world, **pl.labels},
                    policy=pl.policy,
                    protocol=pl.protocol,
                    outcome={"score": score, "planted_by": "test_verdict_conclusions"},
                )
    out = tmp_path / "run"
    cli = [
        "--space",
        "random",
        "--budget",
        "1",
        "--search-seeds",
        "1",
        "--rounds",
        "1",
        "--validate-episodes",
        "3",
        "--exact-episodes",
        "6",
        "--max-steps",
        "100",
        "--no-video",
    ]
    assert invoke(["breakout", "train", *cli, "--store", str(store), "--out", str(out)]) == 0
    data = json.loads((out / "report.json").read_text())
    conf = data["evaluation"]["ale_confirmation"]
    assert (conf["equal"], conf["of"]) == (0, 3)
    assert [r["pick_ale"] for r in conf["rows"]] == [1000.0, 1001.0, 1002.0]
    dec = data["decision"]
    assert dec["verdict"] == "too few seeds" and dec["verdict_source"].startswith("ALE confirmation sample")
    assert dec["failure_reason"] == "3 validation pairs are too few for a verdict (at least 5)"
    assert data["evaluation"]["paired_delta"]["n"] == 3 and conf["ale"]["verdict"] == "too few seeds"
