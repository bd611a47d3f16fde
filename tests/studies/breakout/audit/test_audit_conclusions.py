"""The audit's rank-correlation conclusions, recomputed here from the raw episode records.

`policylab breakout audit --candidates` runs 8 candidates on the shadow and on real ALE (audit
seeds S..S+N-1) and on ALE once more on the disjoint seeds S+N..S+2N-1. From the store's records
alone (not audit.json's means), this file recomputes with code written here:

- each candidate's three means; Pearson; Spearman (Pearson on average ranks);
- the Spearman interval (the stated procedure: 2000 resamples of candidate pairs from PCG64 seed 0,
  percentile 2.5/97.5; ranks and correlations computed here);
- reference_self_spearman, the noise ceiling: ALE means on the audit seeds vs the disjoint seeds;
- the ranking gap's detection and confidence by the rule stated in gaps.py (and docs/breakout.md):
  detected when Spearman < 0.5 or undefined; `high` with >= 8 candidates whose interval lies wholly
  below the ceiling, `medium` with >= 5, else `low` (and `low` when not detected).

Also: under --sticky 0 ALE is deterministic, so the ceiling is exactly 1 (docs/breakout.md); and
an audit re-run into its folder reruns nothing (same row count, no payload rewritten) and writes the
same bytes.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.rollout.store import Store
from policylab.studies.breakout.audit import gaps
from policylab.studies.breakout.search.search_space import random_candidates

EPISODES, SEED, MAX_STEPS = 3, 40, 300
RANK_AGREEMENT = 0.5  # gaps.py: "Spearman below this: the shadow env does not rank candidates like ALE"


def audit(*args) -> int:
    return invoke(["breakout", "audit", "--policy", "breakout_policy_v3", *map(str, args)])


@pytest.fixture(scope="module")
def cands_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cands") / "cands.json"
    cands = random_candidates(8, 7)  # 8 draws over the v3 ranges: enough candidates for confidence `high`
    path.write_text(json.dumps(cands))
    return path


@pytest.fixture(scope="module")
def audited(tmp_path_factory, cands_file):
    out = tmp_path_factory.mktemp("audit") / "run"
    args = (
        "--episodes",
        EPISODES,
        "--seed",
        SEED,
        "--max-steps",
        MAX_STEPS,
        "--candidates",
        cands_file,
        "--executor",
        "processes",
        "--out",
        out,
    )
    assert audit(*args) == 0
    return out, args


# -- independent computations -----------------------------------------------------------------------


def average_ranks(x) -> np.ndarray:
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = np.zeros(len(x))
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[[order[k] for k in range(i, j + 1)]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x, y) -> float | None:
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float((dx * dx).sum() * (dy * dy).sum()))
    return None if den == 0 else float((dx * dy).sum() / den)


def spearman(x, y) -> float | None:
    return pearson(average_ranks(list(x)), average_ranks(list(y)))


def spearman_interval(x, y, resamples=2000, seed=0) -> list[float]:
    """The stated procedure: resample candidate pairs with replacement (PCG64(seed), one (resamples, n)
    index draw), Spearman per resample (resamples without rank spread dropped), 2.5/97.5% quantiles."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    idx = np.random.Generator(np.random.PCG64(seed)).integers(0, x.size, size=(resamples, x.size))
    rhos = [spearman(x[row], y[row]) for row in idx]
    rhos = [r for r in rhos if r is not None]
    return [float(v) for v in np.quantile(rhos, [0.025, 0.975])]


def ranking_confidence(rho, n, hi, ceiling) -> tuple[bool, str]:
    """gaps.py's stated rule for the ranking gap."""
    detected = rho is None or rho < RANK_AGREEMENT
    if not detected:
        return False, "low"
    below = ceiling is not None and hi is not None and hi < ceiling
    return True, "high" if n >= 8 and below else ("medium" if n >= 5 else "low")


def raw_scores(store_root) -> dict[tuple[str, str, int], float]:
    """(env, canonical params JSON, seed) -> score, for every record in the store."""
    out = {}
    with Store(store_root) as store:
        for rec in store.records("breakout"):
            key = (
                rec.data["world"]["env"],
                json.dumps(rec.data["policy"]["params"], sort_keys=True),
                rec.data["world"]["seed"],
            )
            assert key not in out  # one record per world, policy and seed in a one-protocol audit
            out[key] = float(rec.outcome["score"])
    return out


# -- the rule itself, on constructed evidence ----------------------------------------------------------


@pytest.mark.parametrize(
    "rho, n, ci, ceiling, want",
    [
        (0.2, 8, [-0.3, 0.6], 0.9, (True, "high")),  # interval wholly below the ceiling, enough candidates
        (0.2, 8, [-0.3, 0.6], 0.5, (True, "medium")),  # the interval reaches the ceiling: noise may explain it
        (0.2, 8, [-0.3, 0.6], 0.6, (True, "medium")),  # "below" is strict
        (0.2, 8, [-0.3, 0.6], None, (True, "medium")),  # no ceiling (ALE tied every candidate): never high
        (0.2, 7, [-0.3, 0.6], 0.9, (True, "medium")),  # too few candidates for high
        (0.2, 4, [-0.3, 0.6], 0.9, (True, "low")),
        (0.49, 20, [0.1, 0.8], 0.95, (True, "high")),
        (0.5, 20, [0.1, 0.8], 0.95, (False, "low")),  # agreement at the threshold: no gap
        (None, 8, [None, None], 0.9, (True, "medium")),  # undefined Spearman counts as a gap
    ],
)
def test_ranking_gap_follows_the_ceiling_rule(rho, n, ci, ceiling, want):
    assert ranking_confidence(rho, n, ci[1], ceiling) == want  # the table above is the rule as stated
    rank = {
        "spearman": rho,
        "sample_size": n,
        "spearman_ci95": ci,
        "reference_self_spearman": ceiling,
        "pearson": None,
        "reference_seeds": [],
    }
    gap = gaps._ranking_gap(rank)
    assert (gap["detected"], gap["confidence"]) == want, gap


# -- the audit on real ALE ---------------------------------------------------------------------------


def test_rank_correlation_and_ceiling_from_the_raw_episodes(audited):
    out, _ = audited
    data = json.loads((out / "audit.json").read_text())
    raw = raw_scores(out / "store")
    seeds = list(range(SEED, SEED + EPISODES))
    reference = list(range(SEED + EPISODES, SEED + 2 * EPISODES))
    shadow_m, ale_m, ref_m = [], [], []
    for c in data["candidates"]:
        p = json.dumps(c["params"], sort_keys=True)
        shadow_m.append(np.mean([raw[("shadow", p, s)] for s in seeds]))
        ale_m.append(np.mean([raw[("ale", p, s)] for s in seeds]))
        ref_m.append(np.mean([raw[("ale", p, s)] for s in reference]))
        assert c["ale_scores"] == [raw[("ale", p, s)] for s in seeds]
    rank = data["rank_correlation"]
    assert rank["sample_size"] == 8 and rank["reference_seeds"] == reference
    assert len(set(ale_m)) > 1 and len(set(shadow_m)) > 1, "the candidates should not all tie"

    rho, ceiling = spearman(shadow_m, ale_m), spearman(ale_m, ref_m)
    assert rank["spearman"] == pytest.approx(rho, abs=1e-12)
    assert rank["pearson"] == pytest.approx(pearson(shadow_m, ale_m), abs=1e-12)
    assert rank["reference_self_spearman"] == (None if ceiling is None else pytest.approx(ceiling, abs=1e-12))
    assert rank["spearman_ci95"] == pytest.approx(spearman_interval(shadow_m, ale_m), abs=1e-12)

    gap = next(g for g in data["gap_audit"] if g["class"] == "ranking")
    want = ranking_confidence(rho, 8, rank["spearman_ci95"][1], ceiling)
    assert (gap["detected"], gap["confidence"]) == want
    assert ("ranking" in data["decision"]["detected_gaps"]) == want[0]


def test_without_sticky_actions_the_ceiling_is_one(tmp_path, cands_file):
    """--sticky 0: ALE Breakout has no randomness of its own, so every seed plays the same game
    (docs/breakout.md, 'What the seed drives'); each candidate's ALE mean is the same on the audit
    and the reference seeds, and their Spearman is exactly 1."""
    cands = json.loads(cands_file.read_text())[:3]
    path = tmp_path / "three.json"
    path.write_text(json.dumps(cands))
    out = tmp_path / "nosticky"
    assert (
        audit("--episodes", 1, "--seed", SEED, "--max-steps", 200, "--sticky", 0, "--candidates", path, "--out", out)
        == 0
    )
    data = json.loads((out / "audit.json").read_text())
    for c in data["candidates"]:
        assert len(set(c["ale_scores"] + c["ale_reference_scores"])) == 1
    means = [c["ale_score_mean"] for c in data["candidates"]]
    want = None if len(set(means)) == 1 else 1.0
    assert data["rank_correlation"]["reference_self_spearman"] == want


def _rows(store) -> int:
    with sqlite3.connect(store / "index.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]


def test_audit_rerun_reruns_nothing_and_writes_the_same_bytes(audited):
    out, args = audited
    files = {name: (out / name).read_bytes() for name in ("audit.json", "audit.html", "figures/rank.png")}
    rows = _rows(out / "store")
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "store" / "units").glob("*.pack")}
    # 8 candidates x (3 shadow + 3 ALE + 3 reference ALE) + the main policy's 3 + 3 (its params are not
    # a candidate's, so nothing is shared)
    assert rows == 8 * 9 + 6 and 0 < len(mtimes) <= rows  # one unit file per unit of work
    assert audit(*args) == 0
    assert _rows(out / "store") == rows
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes, "a payload was rewritten"
    assert sorted((out / "store" / "units").glob("*.pack")) == sorted(mtimes)
    for name, before in files.items():
        assert (out / name).read_bytes() == before, name
