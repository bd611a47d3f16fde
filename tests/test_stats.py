"""Statistics against hand-computed or reference numbers."""

import statistics

import numpy as np
import pytest
from scipy import stats as sps

from policylab import stats


def test_distribution_matches_original_numbers():
    # Population stdev of the original's 6-seed Go scores and v3's 20-seed Atari list (spec 8.1).
    d = stats.distribution([8, 7, 6, 7, 7, 8])
    assert d["stdev"] == pytest.approx(0.6872, abs=1e-4)
    atari = [2, 13, 13, 13, 0, 13, 2, 13, 2, 0, 0, 0, 13, 2, 0, 13, 2, 2, 0, 0]
    d = stats.distribution(atari)
    assert d["mean"] == pytest.approx(5.15)
    assert d["median"] == 2
    assert d["stdev"] == pytest.approx(5.816, abs=1e-3)
    assert d["low_score_count"] == 13
    lo, hi = d["mean_ci95"]
    assert lo < 5.15 < hi


def test_paired_delta():
    new = [5, 6, 7, 8, 9, 10]
    base = [4, 5, 6, 7, 8, 9]
    d = stats.paired_delta(new, base)
    assert d["mean_delta"] == 1.0 and d["ci95"] == [1.0, 1.0]
    assert d["verdict_agreement"] == 1.0 and d["wins"] == 6


def test_rank_correlations_match_scipy():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, 30)
    y = x + rng.integers(0, 5, 30)
    assert stats.spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic)
    assert stats.pearson(x, y) == pytest.approx(sps.pearsonr(x, y).statistic)
    lo, hi = stats.spearman_ci(x, y)
    assert lo <= stats.spearman(x, y) <= hi


def test_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # sorted: 0.005(1/5*.05=.01 ok) 0.01(.02 ok) 0.03(.03 ok) 0.04(.04 ok) 0.2(.05 no)
    assert stats.benjamini_hochberg(p, q=0.05) == [True, True, True, True, False]
    assert stats.benjamini_hochberg([0.5, 0.9]) == [False, False]


def test_fisher_exact_matches_scipy():
    assert stats.fisher_exact(10, 16, 2, 16) == pytest.approx(sps.fisher_exact([[10, 6], [2, 14]]).pvalue)


def test_kaplan_meier_by_hand():
    # 4 subjects: fail at 1, censored at 2 (horizon), fail at 3 > horizon -> censored, fail at 1.5
    km = stats.kaplan_meier([1.0, 5.0, 1.5, 5.0], [True, False, True, False], horizon=5.0)
    assert km["survival"] == pytest.approx([1.0, 0.75, 0.5])
    assert km["survival_at_horizon"] == pytest.approx(0.5)
    km2 = stats.kaplan_meier([1.0, 2.0], [True, True], horizon=1.5)
    assert km2["survival_at_horizon"] == pytest.approx(0.5)
    assert statistics.fmean([1, 2]) == 1.5
