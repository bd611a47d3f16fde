"""The shared statistics against exact expectations, each computed here without the project's code
or scipy's wrapper of the same test:

- interval coverage by simulation: a 95% interval from samples of 100 covers a known mean (or
  mean delta, or population Spearman) in the stated share of seeded trials;
- interval widths against their analytic (large-sample) value;
- Fisher's exact test against a hand enumeration of the hypergeometric distribution;
- Benjamini-Hochberg against q-values computed here (step-up, by rank);
- Spearman and Pearson against their textbook sums with average ranks computed here;
- Kaplan-Meier against a product-limit estimator written here.

Every band below says where it comes from. Coverage bands: a binomial count of covered trials has
standard error sqrt(0.95 * 0.05 / trials) (1.1% at 400 trials, 1.5% at 200); an interval built at
90% instead of 95%, or on the wrong spread, leaves the band.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from policylab import stats

Z975 = 1.959963984540054  # the standard normal's 97.5% quantile (Phi^-1(0.975)), to 15 digits


# -- coverage and width of the bootstrap intervals ----------------------------------------------------

def test_bootstrap_ci_of_the_mean_covers_93_to_97_percent():
    """400 seeded samples of 100 from N(3, 2^2): the 95% interval covers the true mean 3 in 93-97% of
    trials. Expected about 94.6%: the percentile bootstrap of a mean is close to mean +- z * s/sqrt(n)
    with the plug-in s (ddof 0), whose exact coverage for normal data is P(|t_99| < 1.96 * sqrt(0.99))
    = 0.946. Width: the bootstrap distribution of the mean has standard deviation exactly s/sqrt(n)
    (s with ddof 0), so the interval's width is 2 * 1.96 * s/sqrt(n) up to Monte Carlo error of the
    2000-resample quantiles (about 2% per interval, so within 15% each and 2% on average)."""
    mu, sd, n, trials = 3.0, 2.0, 100, 400
    covered, ratios = 0, []
    for t in range(trials):
        x = np.random.default_rng([7, t]).normal(mu, sd, n)
        lo, hi = stats.bootstrap_ci(x, seed=t)
        covered += lo <= mu <= hi
        ratios.append((hi - lo) / (2 * Z975 * x.std(ddof=0) / math.sqrt(n)))
    assert 0.93 <= covered / trials <= 0.97, covered / trials
    assert 0.85 <= min(ratios) and max(ratios) <= 1.15
    assert abs(np.mean(ratios) - 1) < 0.02, np.mean(ratios)


def test_paired_delta_ci_covers_the_true_delta_93_to_97_percent():
    """Paired rows: base ~ N(10, 3^2), new = base + 0.5 + N(0, 2^2), 100 pairs, 400 seeded trials.
    The paired interval covers the true delta 0.5 in 93-97% of trials (the pairing removes the
    base's spread: the width follows the deltas' s = 2, not the scores' 3.6), and its width is
    2 * 1.96 * s_d/sqrt(n) as for the mean above. The verdict agreement (a fresh set's interval on the
    same side of 0) is, for these near-normal deltas with z = mean / (s_d/sqrt(n)), close to the normal
    law's Phi(z - 1.96) + Phi(-z - 1.96) share outside 0 or its complement (within 0.06; its own
    simulation check: tests/test_stats_agreement.py)."""
    delta, n, trials = 0.5, 100, 400
    covered, ratios, prob_err = 0, [], []
    for t in range(trials):
        r = np.random.default_rng([8, t])
        base = r.normal(10, 3, n)
        new = base + delta + r.normal(0, 2, n)
        d = new - base
        res = stats.paired_delta(new, base, seed=t)
        lo, hi = res["ci95"]
        covered += lo <= delta <= hi
        se = d.std(ddof=0) / math.sqrt(n)
        ratios.append((hi - lo) / (2 * Z975 * se))
        z = d.mean() / se
        phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
        outside = {1: phi(z - Z975), -1: phi(-z - Z975)}
        side = stats.interval_side(res["ci95"])
        want = outside[side] if side else 1 - outside[1] - outside[-1]
        prob_err.append(abs(res["verdict_agreement"] - want))
        assert res["mean_delta"] == pytest.approx(d.mean())
        assert (res["wins"], res["ties"], res["losses"]) == (int((d > 0).sum()), int((d == 0).sum()),
                                                            int((d < 0).sum()))
    assert 0.93 <= covered / trials <= 0.97, covered / trials
    assert abs(np.mean(ratios) - 1) < 0.02 and 0.85 <= min(ratios) and max(ratios) <= 1.15
    assert max(prob_err) < 0.06


def test_spearman_ci_covers_the_population_spearman():
    """Bivariate normal with Pearson r = 0.6 has population Spearman (6/pi) asin(r/2) = 0.5819
    (Pearson 1907). 200 seeded samples of 100 pairs (1000 resamples each, to keep the test short):
    the 95% interval covers 0.5819 in 90-97% of trials. Percentile bootstrap intervals of a
    correlation under-cover slightly at n = 100 (its sampling distribution is skewed; measured 92%
    here), hence the lower band; an interval built at 90% covers about 87%. Width: on Fisher's z scale
    the Spearman coefficient has variance 1.06/(n - 3) (Fieller, Hartley and Pearson 1957), so the
    z-width is about 2 * 1.96 * sqrt(1.06/97) = 0.41; the mean over trials is within 10% of it."""
    r, n, trials = 0.6, 100, 200
    rho_s = 6 / math.pi * math.asin(r / 2)
    assert rho_s == pytest.approx(0.58192, abs=1e-5)
    covered, zw = 0, []
    for t in range(trials):
        z = np.random.default_rng([9, t]).multivariate_normal([0, 0], [[1, r], [r, 1]], size=n)
        lo, hi = stats.spearman_ci(z[:, 0], z[:, 1], seed=t, n_resamples=1000)
        covered += lo <= rho_s <= hi
        zw.append((math.atanh(hi) - math.atanh(lo)) / (2 * Z975 * math.sqrt(1.06 / (n - 3))))
    assert 0.90 <= covered / trials <= 0.97, covered / trials
    assert abs(np.mean(zw) - 1) < 0.10, np.mean(zw)


def test_bootstrap_ci_of_a_constant_and_of_two_points():
    """Degenerate cases with exact answers: a constant sample's interval is that constant; two
    points a < b resample to means a, (a+b)/2, b with probabilities 1/4, 1/2, 1/4, so the 2.5% and
    97.5% quantiles of 2000 resamples are a and b."""
    assert stats.bootstrap_ci([4.0] * 30) == [4.0, 4.0]
    assert stats.bootstrap_ci([1.0, 3.0]) == [1.0, 3.0]


# -- Fisher exact by enumeration ------------------------------------------------------------------

def fisher_by_hand(a_fail: int, a_n: int, b_fail: int, b_n: int) -> float:
    """Two-sided Fisher exact p: with the margins fixed, the failures of group A are hypergeometric,
    P(k) = C(K, k) C(N - K, a_n - k) / C(N, a_n) with K = all failures, N = all rollouts. The p-value
    is the total probability of the tables no more likely than the observed one (with the customary
    relative tolerance of 1e-7 for ties in floating point)."""
    n, k_all = a_n + b_n, a_fail + b_fail
    denom = math.comb(n, a_n)
    probs = {k: math.comb(k_all, k) * math.comb(n - k_all, a_n - k) / denom
             for k in range(max(0, a_n - (n - k_all)), min(k_all, a_n) + 1)}
    observed = probs[a_fail]
    return min(1.0, sum(p for p in probs.values() if p <= observed * (1 + 1e-7)))


def test_fisher_exact_equals_the_enumerated_hypergeometric():
    # one table written out: 0 of 16 vs 8 of 16 failed -> K = 8 of N = 32; P(k) = C(8,k)C(24,16-k)/C(32,16)
    # is symmetric about k = 4, and P(0) = P(8) = C(24,16)/C(32,16) are the two least likely tables
    assert fisher_by_hand(0, 16, 8, 16) == pytest.approx(2 * math.comb(24, 16) / math.comb(32, 16), rel=1e-12)
    assert stats.fisher_exact(0, 16, 8, 16) == pytest.approx(2 * math.comb(24, 16) / math.comb(32, 16), rel=1e-9)
    # every table of two cells of 16 (the sweep's seeds per cell), and unequal cells
    for (a, b) in product(range(17), repeat=2):
        assert stats.fisher_exact(a, 16, b, 16) == pytest.approx(fisher_by_hand(a, 16, b, 16), rel=1e-9, abs=1e-12)
    for (a, b) in product(range(0, 13, 3), range(0, 21, 4)):
        assert stats.fisher_exact(a, 12, b, 20) == pytest.approx(fisher_by_hand(a, 12, b, 20), rel=1e-9, abs=1e-12)
    # identical tables are as likely as can be: p = 1
    assert stats.fisher_exact(5, 16, 5, 16) == pytest.approx(1.0)


# -- Benjamini-Hochberg by q-values -----------------------------------------------------------------

def bh_qvalues(p: list[float]) -> list[float]:
    """BH adjusted p-values: q_(i) = min over j >= i of m p_(j) / j (ranks by ascending p), capped at 1.
    Rejecting q <= alpha is the step-up rule: reject the k smallest, k the largest rank with
    p_(k) <= k alpha / m."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, m * p[i] / rank)
        q[i] = running
    return q


def test_benjamini_hochberg_equals_q_values_by_hand():
    # written out: m = 5, sorted p .005 .01 .03 .04 .2 -> m p / rank = .025 .025 .05 .05 .2 (already
    # non-decreasing, so q = the same)
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    assert bh_qvalues(p) == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.2])
    assert stats.benjamini_hochberg(p, q=0.05) == [True, True, True, True, False]
    # step-up, not step-down: p_(1) = .03 > .05/3 fails its own threshold, but p_(3) = .04 <= .05 rescues it
    assert bh_qvalues([0.03, 0.035, 0.04]) == pytest.approx([0.04, 0.04, 0.04])
    assert stats.benjamini_hochberg([0.03, 0.035, 0.04]) == [True, True, True]
    rng = np.random.default_rng(16)
    for trial in range(200):
        m = int(rng.integers(1, 60))
        p = np.concatenate([rng.uniform(0, 0.02, int(rng.integers(0, m + 1))), rng.uniform(0, 1, m)])
        if trial % 3 == 0:
            p = np.round(p, 2)  # ties
        for alpha in (0.05, 0.1):
            want = [q <= alpha for q in bh_qvalues(p.tolist())]
            assert stats.benjamini_hochberg(p, q=alpha) == want


# -- rank correlation by hand ---------------------------------------------------------------------

def average_ranks(x) -> list[float]:
    """1-based ranks, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson_by_hand(x, y) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def test_spearman_and_pearson_equal_their_sums():
    # no ties: Spearman = 1 - 6 sum d^2 / (n (n^2 - 1)); here d = (0, 0, -1, 1, 0) -> 1 - 12/120 = 0.9
    assert stats.spearman([1, 2, 3, 4, 5], [10, 20, 40, 30, 50]) == pytest.approx(0.9)
    assert stats.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert math.isnan(stats.spearman([1, 2, 3], [5, 5, 5]))  # no spread: undefined, never 0
    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(3, 40))
        x = rng.integers(0, 6, n).astype(float)  # many ties, like candidate means of a few episodes
        y = x + rng.integers(-3, 4, n)
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue
        assert stats.spearman(x, y) == pytest.approx(pearson_by_hand(average_ranks(x), average_ranks(y)), abs=1e-12)
        assert stats.pearson(x, y) == pytest.approx(pearson_by_hand(x.tolist(), y.tolist()), abs=1e-12)


# -- Kaplan-Meier by hand ---------------------------------------------------------------------------

def km_by_hand(times, failed, horizon):
    """Product-limit estimate at the horizon: at every distinct failure time t <= horizon multiply by
    1 - deaths(t) / at_risk(t), at risk = everyone whose (failure or censoring) time is >= t."""
    t = [min(ti, horizon) for ti in times]
    f = [fi and ti <= horizon for ti, fi in zip(times, failed)]
    s = 1.0
    for u in sorted({ti for ti, fi in zip(t, f) if fi}):
        at_risk = sum(1 for ti in t if ti >= u)
        deaths = sum(1 for ti, fi in zip(t, f) if fi and ti == u)
        s *= 1 - deaths / at_risk
    return s


def test_kaplan_meier_equals_the_product_limit_by_hand():
    rng = np.random.default_rng(5)
    for _ in range(100):
        n = int(rng.integers(1, 30))
        times = np.round(rng.uniform(0.1, 6.0, n), 1)  # rounded: tied failure times
        failed = rng.random(n) < 0.6
        got = stats.kaplan_meier(times, failed, horizon=5.0)["survival_at_horizon"]
        assert got == pytest.approx(km_by_hand(times.tolist(), failed.tolist(), 5.0), abs=1e-12)
