"""Log-rank tests and Benjamini-Hochberg q-values for the checkpoint diff.

- `logrank`: the two-sample log-rank test on right-censored failure times, optionally stratified
  (strata = the push cells of a friction row: within each stratum the expected failures of A are
  summed over the distinct failure times, and the observed-minus-expected and its hypergeometric
  variance are added over strata); chi-square with 1 degree of freedom. With censoring only at the
  horizon it compares when the robots fall, not only whether they do.
- `bh_qvalues`: Benjamini-Hochberg adjusted p-values (q-values): q_(i) = min_{j >= i} p_(j) m / j,
  capped at 1; a hypothesis is rejected at FDR q exactly when its q-value is <= q.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats as sps


def _o_minus_e(ta: np.ndarray, ea: np.ndarray, tb: np.ndarray, eb: np.ndarray) -> tuple[float, float]:
    t = np.concatenate([ta, tb])
    e = np.concatenate([ea, eb]).astype(bool)
    grp = np.concatenate([np.zeros(len(ta), bool), np.ones(len(tb), bool)])
    o_minus_e = var = 0.0
    for u in np.unique(t[e]):
        at_risk = t >= u
        n, n_a = int(at_risk.sum()), int((at_risk & ~grp).sum())
        d = int((e & (t == u)).sum())
        d_a = int((e & (t == u) & ~grp).sum())
        o_minus_e += d_a - d * n_a / n
        if n > 1:
            var += d * (n_a / n) * (1 - n_a / n) * (n - d) / (n - 1)
    return o_minus_e, var


def logrank(groups: Sequence[tuple[Sequence[float], Sequence[bool], Sequence[float], Sequence[bool]]]) -> dict:
    """Stratified log-rank test. `groups`: per stratum (times A, failed A, times B, failed B); a stratum
    with one group empty contributes nothing. Returns chi2, p (1 df), and observed - expected of A."""
    total = var = 0.0
    for ta, ea, tb, eb in groups:
        if len(ta) == 0 or len(tb) == 0:
            continue
        ome, v = _o_minus_e(np.asarray(ta, float), np.asarray(ea, bool), np.asarray(tb, float), np.asarray(eb, bool))
        total += ome
        var += v
    if var <= 0:
        return {"chi2": 0.0, "p": 1.0, "o_minus_e_a": total}
    chi2 = total * total / var
    return {"chi2": float(chi2), "p": float(sps.chi2.sf(chi2, 1)), "o_minus_e_a": float(total)}


def bh_qvalues(pvalues: Sequence[float]) -> list[float]:
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return [float(x) for x in out]
