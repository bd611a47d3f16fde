"""The log-rank test and Benjamini-Hochberg q-values (`policylab.stats`) against scipy and each other."""

import numpy as np
import pytest
from scipy import stats

from policylab.stats import benjamini_hochberg, bh_qvalues, logrank


def test_logrank_and_qvalues_match_references():
    rng = np.random.default_rng(7)
    strata = []
    for _ in range(3):
        ta = np.round(rng.uniform(0, 5, 16) * 20) / 20
        ea = rng.random(16) < 0.6
        ta[~ea] = 5.0
        tb = np.round(rng.uniform(0, 5, 16) * 20) / 20
        eb = rng.random(16) < 0.3
        tb[~eb] = 5.0
        ref = stats.logrank(
            stats.CensoredData(uncensored=ta[ea], right=ta[~ea]), stats.CensoredData(uncensored=tb[eb], right=tb[~eb])
        )
        assert logrank([(ta, ea, tb, eb)])["p"] == pytest.approx(ref.pvalue, rel=1e-10)
        strata.append((ta, ea, tb, eb))
    # stratified: observed - expected and variances add over strata
    one = [logrank([s]) for s in strata]
    both = logrank(strata)
    assert both["o_minus_e_a"] == pytest.approx(sum(o["o_minus_e_a"] for o in one))
    p = rng.random(60) ** 3
    q = bh_qvalues(p)
    for level in (0.01, 0.05, 0.2):
        assert [x <= level for x in q] == benjamini_hochberg(p, q=level)
