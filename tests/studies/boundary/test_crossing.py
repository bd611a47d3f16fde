"""The search's statistics on planted survival curves (no simulation): the 95% intervals' coverage of a
known crossing, rows with no crossing in range, the monotonicity flag, and determinism."""

from __future__ import annotations

import numpy as np

from policylab.studies.boundary import crossing


def _logistic(c: float, s: float):
    return lambda x: 1.0 / (1.0 + np.exp((x - c) / s))


def test_planted_crossings_are_covered_95_percent():
    """400 rows, crossings uniform in 20-150 %BW, transition scales 0.5-6 %BW (10-90% widths of 2-26 %BW:
    the Go1's rows lie in that span), the default design (batches of 4, target width 10, 64 rollouts at most):
    coverage 95% +- 3%."""
    rng = np.random.default_rng(0)
    covered, widths = 0, []
    for i in range(400):
        c, s = rng.uniform(20, 150), (0.5, 1.5, 3.0, 6.0)[i % 4]
        d = crossing.planted_search(_logistic(c, s), 10.0, 200.0, rng)
        covered += d.fit.lo <= c <= d.fit.hi
        widths.append(d.fit.width)
    assert 0.92 <= covered / 400 <= 0.98, covered
    assert np.median(widths) <= 10.0


def test_rows_beyond_the_range_are_reported_with_their_evidence():
    rng = np.random.default_rng(1)
    below = crossing.planted_search(_logistic(3.0, 1.0), 10.0, 200.0, rng)
    above = crossing.planted_search(_logistic(260.0, 2.0), 10.0, 200.0, rng)
    assert below.status == crossing.BELOW and below.fit.hi < 10.0 and below.done
    assert above.status == crossing.ABOVE and above.fit.lo > 200.0 and above.done
    inside = crossing.planted_search(_logistic(60.0, 2.0), 10.0, 200.0, rng)
    assert inside.status == crossing.LOCATED and inside.fit.lo <= 60.0 <= inside.fit.hi


def test_a_non_monotone_row_is_flagged():
    bump = lambda x: 0.95 if x < 40 or 100 < x < 140 else 0.05  # noqa: E731 - survival rises again
    rng = np.random.default_rng(2)
    x = np.repeat(np.arange(20.0, 180.0, 10.0), 8)
    y = (rng.random(len(x)) < np.array([bump(v) for v in x])).astype(int)
    assert crossing.monotonicity(x, y)["flagged"]
    y_mono = (rng.random(len(x)) < _logistic(60.0, 3.0)(x)).astype(int)
    assert not crossing.monotonicity(x, y_mono)["flagged"]


def test_level_other_than_half():
    rng = np.random.default_rng(3)
    hits = 0
    for _i in range(40):
        c = rng.uniform(40, 120)
        # S(x) crosses 0.8 at c: logit S = logit 0.8 - (x - c) / s
        curve = lambda x, c=c: 1 / (1 + np.exp(-(np.log(4.0) - (x - c) / 2.0)))  # noqa: E731
        d = crossing.planted_search(curve, 10.0, 200.0, rng, level=0.8)
        hits += d.fit.lo <= c <= d.fit.hi
    assert hits >= 34


def test_same_draws_same_design():
    a = crossing.planted_search(_logistic(70.0, 3.0), 10.0, 200.0, np.random.default_rng(5))
    b = crossing.planted_search(_logistic(70.0, 3.0), 10.0, 200.0, np.random.default_rng(5))
    assert (a.fit.lo, a.fit.hi, a.fit.point) == (b.fit.lo, b.fit.hi, b.fit.point)
