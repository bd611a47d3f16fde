"""The verdict-agreement probability (`stats.verdict_agreement`, in every `paired_delta`) against a
simulation: planted paired deltas are the population; many validation sets of the same size are drawn
from it and each is judged by `paired_delta` itself (its t interval); the share of sets whose verdict equals the planted rows' verdict must match the
probability computed from the rows alone.

The cases span the regimes a verdict can be in: far from 0 (agreement near 1), with the interval's
edge near 0 (near one half), inconclusive, worse, and a skewed two-mode population like Breakout's
scores (many small deltas, a few large ones), at 20 and at 200 pairs."""

from __future__ import annotations

import numpy as np
import pytest

from policylab import stats

SETS = 400  # simulated validation sets per case: the share's standard error is at most 0.025


def planted(case: str, n: int) -> np.ndarray:
    r = np.random.default_rng([26, n, len(case)])
    z = r.standard_normal(n)
    z = (z - z.mean()) / z.std()  # exactly standardised, so each case's z = mean / (sd / sqrt(n)) is what it says
    se = 1 / np.sqrt(n)
    if case == "clear":
        return 60.0 * (z + 4.0 * se)  # z = 4: improved, agreement near 0.98
    if case == "edge":
        return 60.0 * (z + 2.0 * se)  # z = 2: the interval's edge at about 0, agreement near one half
    if case == "inconclusive":
        return 60.0 * (z + 0.7 * se)
    if case == "worse":
        return 60.0 * (z - 3.0 * se)
    # skewed: 85% small deltas around -5, 15% large ones around +90 (two modes, a long right tail)
    big = r.random(n) < 0.15
    return np.where(big, r.normal(90, 30, n), r.normal(-5, 8, n))


def simulated_agreement(rows: np.ndarray, side: int) -> float:
    r = np.random.default_rng([30, rows.size])
    agree = 0
    for _t in range(SETS):
        fresh = rows[r.integers(0, rows.size, rows.size)]
        res = stats.paired_delta(fresh, np.zeros_like(fresh))
        agree += stats.interval_side(res["ci95"], res["n"]) == side
    return agree / SETS


@pytest.mark.slow
@pytest.mark.parametrize(
    "case,n", [(c, 20) for c in ("clear", "edge", "inconclusive", "worse", "skewed")] + [("edge", 200), ("skewed", 200)]
)
def test_agreement_matches_a_simulation_of_fresh_validation_sets(case, n):
    rows = planted(case, n)
    res = stats.paired_delta(rows, np.zeros_like(rows))
    side = stats.interval_side(res["ci95"], res["n"])
    simulated = simulated_agreement(rows, side)
    # 3 standard errors of the simulated share, plus those of the 2,000 sets the agreement itself draws
    tol = 3 * np.sqrt(max(simulated * (1 - simulated), 0.01) / SETS) + 0.02
    assert abs(res["verdict_agreement"] - simulated) <= tol, (case, n, res["verdict_agreement"], simulated)


def test_the_edge_case_is_a_coin_flip_and_the_clear_one_is_not():
    """The property that makes the number worth printing: an interval that just clears 0 is reproduced
    by about half of fresh sets, one far from 0 by nearly all."""
    edge = stats.paired_delta(planted("edge", 200), np.zeros(200))
    clear = stats.paired_delta(planted("clear", 200), np.zeros(200))
    assert 0.3 < edge["verdict_agreement"] < 0.7
    assert clear["verdict_agreement"] > 0.95


def test_constant_deltas_always_agree():
    res = stats.paired_delta([5, 6, 7], [4, 5, 6])
    assert res["ci95"] == [1.0, 1.0] and res["verdict_agreement"] == 1.0


def test_too_few_pairs_always_agree():
    """Under `MIN_PAIRS` pairs there is no verdict, and no fresh set of as few pairs has one either."""
    res = stats.paired_delta([10.0, 20.0, 15.0], [300.0, 250.0, 280.0])
    assert stats.interval_side(res["ci95"], res["n"]) is None and res["verdict_agreement"] == 1.0
