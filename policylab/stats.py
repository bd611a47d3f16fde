"""Statistics every study shares: score distributions, intervals of means and paired deltas, rank
correlation, Fisher exact + Benjamini-Hochberg, Kaplan-Meier and the log-rank test.

Every interval of a mean or a paired delta is Student t (`t_interval`); why: docs/design.md."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

DEFAULT_RESAMPLES = 2000


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


# -- the interval of a mean: Student t -------------------------------------------------------------
INTERVAL_METHOD = (
    "Student-t 95% interval: mean +- t(0.975, n - 1) * s / sqrt(n), s the sample standard deviation "
    "(ddof 1); none with one value"
)
MIN_PAIRS = 5  # the fewest pairs a verdict is drawn from: the t interval's coverage is checked from n = 5 on


def _t_quantile(n: int, level: float = 0.95) -> float:
    return float(sps.t.ppf(0.5 + level / 2.0, n - 1))


def t_interval(values: Sequence[float], *, level: float = 0.95) -> dict:
    """Student-t interval of the mean of `values`, each one independent unit (a seed).

    mean +- t_{(1+level)/2, n-1} * sd / sqrt(n), with the sample standard deviation (ddof = 1): exact
    coverage for normal values at any n >= 2, and by the central limit theorem for any finite-variance
    values as n grows (measured on planted skewed cases: tests/test_stats_exact.py). With one unit
    there is no interval: `ci` is None.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("t_interval of no values")
    mean = float(x.mean())
    if x.size < 2:
        return {"n": 1, "mean": mean, "sd": None, "se": None, "df": 0, "t": None, "ci": None, "level": level}
    sd = float(x.std(ddof=1))
    se = sd / float(np.sqrt(x.size))
    t = _t_quantile(x.size, level)
    return {
        "n": int(x.size),
        "mean": mean,
        "sd": sd,
        "se": se,
        "df": int(x.size - 1),
        "t": t,
        "ci": [mean - t * se, mean + t * se],
        "level": level,
    }


def distribution(scores: Sequence[float], *, low_threshold: float = 3.0) -> dict:
    """The original reports' score distribution plus the t 95% interval of the mean (None with one score).

    `stdev` is the population standard deviation (statistics.pstdev), as in the originals.
    """
    s = [float(v) for v in scores]
    if not s:
        raise ValueError("distribution of no scores")
    return {
        "count": len(s),
        "scores": s,
        "mean": statistics.fmean(s),
        "median": float(statistics.median(s)),
        "min": min(s),
        "max": max(s),
        "stdev": statistics.pstdev(s),
        "stdev_kind": "population (statistics.pstdev), as in the original reports",
        "low_score_threshold": low_threshold,
        "low_score_count": sum(1 for v in s if v < low_threshold),
        "mean_ci95": t_interval(s)["ci"],
    }


def interval_side(ci: Sequence[float] | None, n: int) -> int | None:
    """Where the interval of a mean paired delta over `n` pairs lies against 0: +1 wholly above, -1 wholly
    below, 0 containing it (every study's verdict rule: better / worse / no difference), or None with
    fewer than `MIN_PAIRS` pairs: too few seeds for a verdict, whatever the interval says."""
    if n < MIN_PAIRS or ci is None:
        return None
    lo, hi = ci
    return 1 if lo > 0 else -1 if hi < 0 else 0


AGREEMENT_METHOD = (
    "bootstrap of the paired deltas: fresh validation sets of the same size drawn with replacement "
    "from the observed deltas (2000 sets, PCG64 seed 1), each judged by the verdict rule with its own "
    "t 95% interval; the share of sets whose verdict equals the observed one"
)


def verdict_agreement(
    deltas: Sequence[float], side: int | None, *, n_sets: int = DEFAULT_RESAMPLES, seed: int = 1
) -> float:
    """Probability that a fresh validation set of the same size reaches the same verdict (`side`, see
    `interval_side`), estimated from the observed paired `deltas` (`AGREEMENT_METHOD`).

    The observed deltas stand in for the population (a plug-in estimate: a verdict whose interval
    just clears 0 agrees about half the time). Each fresh set is judged by the same t interval
    `paired_delta` computes, vectorised over the sets. Checked against a simulation of fresh sets judged
    by `paired_delta` itself (tests/test_stats_agreement.py). With too few pairs every fresh set of the
    same size has too few as well."""
    d = np.asarray(deltas, dtype=float)
    if side is None or d.std() == 0:
        return 1.0  # every fresh set is this one (or has as few pairs): the same verdict
    sets = d[_rng(seed).integers(0, d.size, size=(n_sets, d.size))]
    mean, half = sets.mean(axis=1), _t_quantile(d.size) * sets.std(axis=1, ddof=1) / np.sqrt(d.size)
    lo, hi = mean - half, mean + half
    sides = np.where(lo > 0, 1, np.where(hi < 0, -1, 0))
    return float((sides == side).mean())


def paired_delta(new: Sequence[float], base: Sequence[float]) -> dict:
    """Paired comparison of `new` vs `base` (same seeds, same order).

    Returns the mean delta, its t 95% interval (None with one pair), `verdict_agreement` (the
    probability that a fresh validation set of the same size puts the interval on the same side of 0),
    and per-seed win/tie/loss counts.
    """
    a = np.asarray(new, dtype=float)
    b = np.asarray(base, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("paired_delta needs two equally long, non-empty score lists")
    d = a - b
    ci = t_interval(d)["ci"]
    return {
        "n": int(d.size),
        "mean_delta": float(d.mean()),
        "ci95": ci,
        "verdict_agreement": verdict_agreement(d, interval_side(ci, d.size)),
        "verdict_agreement_method": AGREEMENT_METHOD,
        "wins": int((d > 0).sum()),
        "ties": int((d == 0).sum()),
        "losses": int((d < 0).sum()),
    }


def ratio_of_means(
    num: Sequence[float], den: Sequence[float], *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> dict:
    """mean(num) / mean(den) with a percentile bootstrap 95% interval, the two samples resampled
    independently (unpaired: e.g. one policy's scores on two environments, whose seeds drive
    unrelated worlds). None where a denominator mean is 0."""
    a = np.asarray(num, dtype=float)
    b = np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_of_means needs two non-empty samples")
    rng = _rng(seed)
    ma = a[rng.integers(0, a.size, size=(n_resamples, a.size))].mean(axis=1)
    mb = b[rng.integers(0, b.size, size=(n_resamples, b.size))].mean(axis=1)
    if b.mean() == 0 or (mb == 0).any():
        return {"ratio": None if b.mean() == 0 else float(a.mean() / b.mean()), "ci95": None}
    lo, hi = np.quantile(ma / mb, [0.025, 0.975])
    return {"ratio": float(a.mean() / b.mean()), "ci95": [float(lo), float(hi)]}


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman = Pearson on average ranks (ties get their mean rank), as the original computed it."""
    return pearson(sps.rankdata(x), sps.rankdata(y))


def spearman_ci(
    x: Sequence[float], y: Sequence[float], *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> list[float]:
    """Bootstrap 95% interval of Spearman's rho, resampling (x, y) pairs."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.size < 3:
        return [float("nan"), float("nan")]
    idx = _rng(seed).integers(0, x.size, size=(n_resamples, x.size))
    rx = sps.rankdata(x[idx], axis=1)
    ry = sps.rankdata(y[idx], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    ok = den > 0
    rho = (rx * ry).sum(axis=1)[ok] / den[ok]
    if rho.size == 0:
        return [float("nan"), float("nan")]
    lo, hi = np.quantile(rho, [0.025, 0.975])
    return [float(lo), float(hi)]


def fisher_exact(a_fail: int, a_total: int, b_fail: int, b_total: int, alternative: str = "two-sided") -> float:
    """Fisher exact p-value for failure counts of two groups (two-sided, or "greater": A fails more than B)."""
    table = [[a_fail, a_total - a_fail], [b_fail, b_total - b_fail]]
    return float(sps.fisher_exact(table, alternative=alternative).pvalue)


def bh_qvalues(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values): q_(i) = min_{j >= i} p_(j) m / j, capped at 1; a
    hypothesis is rejected at false-discovery rate q exactly when its q-value is <= q."""
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


def benjamini_hochberg(pvalues: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses are rejected at false-discovery rate `q` (step-up BH: q-value <= q)."""
    return [qv <= q for qv in bh_qvalues(pvalues)]


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
    """Two-sample log-rank test on right-censored failure times, stratified. `groups`: per stratum (times
    A, failed A, times B, failed B); within a stratum the expected failures of A are summed over the
    distinct failure times, and observed - expected and its hypergeometric variance are added over
    strata (a stratum with one group empty contributes nothing). Returns chi2, p (chi-square, 1 df) and
    observed - expected of A. With censoring only at a horizon it compares when failures happen, not
    only whether they do."""
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


def kaplan_meier(times: Sequence[float], failed: Sequence[bool], horizon: float) -> dict:
    """Kaplan-Meier survival with right-censoring at `horizon`.

    `times[i]` is the time of failure (if `failed[i]`) or of censoring. Returns the step curve
    (`times`, `survival`) and `survival_at_horizon`.
    """
    t = np.minimum(np.asarray(times, float), horizon)
    f = np.asarray(failed, bool) & (np.asarray(times, float) <= horizon)
    n = t.size
    curve_t, curve_s = [0.0], [1.0]
    s = 1.0
    for ti in np.unique(t[f]):
        at_risk = int((t >= ti).sum())
        deaths = int(((t == ti) & f).sum())
        if at_risk:
            s *= 1.0 - deaths / at_risk
        curve_t.append(float(ti))
        curve_s.append(s)
    return {"n": int(n), "failures": int(f.sum()), "times": curve_t, "survival": curve_s, "survival_at_horizon": s}


def paired_t_power(n: int, delta: float, sd: float, *, level: float = 0.95) -> float:
    """Power of a two-sided paired t-test at 1 - `level` with `n` pairs, when the true mean
    difference is `delta` and the differences' standard deviation is `sd` (noncentral t)."""
    if n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if delta != 0 else 0.0
    df = n - 1
    crit = float(sps.t.ppf(0.5 + level / 2.0, df))
    ncp = float(np.sqrt(n) * abs(delta) / sd)
    power = float(sps.nct.sf(crit, df, ncp) + sps.nct.cdf(-crit, df, ncp))
    if not np.isfinite(power):  # scipy's noncentral t fails far in its tail; the normal limit holds there
        power = float(sps.norm.sf(crit - ncp) + sps.norm.cdf(-crit - ncp))
    return power


def seeds_for_power(
    delta: float, sd: float | None, *, level: float = 0.95, power: float = 0.8, max_n: int = 100_000
) -> int | None:
    """Fewest paired units (n >= 2) at which a two-sided paired t-test at 1 - `level` detects a true
    difference `delta` with probability `power`, if the differences spread with standard deviation
    `sd`. None when `delta` is 0, `sd` is unknown, or more than `max_n` units would be needed."""
    if sd is None or delta == 0 or not np.isfinite(delta) or not np.isfinite(sd):
        return None
    hi = 2  # power grows with n: double until it is reached, then bisect
    while paired_t_power(hi, delta, sd, level=level) < power:
        if hi >= max_n:
            return None
        hi = min(2 * hi, max_n)
    lo = max(2, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        if paired_t_power(mid, delta, sd, level=level) >= power:
            hi = mid
        else:
            lo = mid + 1
    return int(lo)


VERDICT_BETTER, VERDICT_WORSE, VERDICT_NONE = "better", "worse", "no detectable difference"
VERDICT_TOO_FEW = "too few seeds"
VERDICTS = {1: VERDICT_BETTER, -1: VERDICT_WORSE, 0: VERDICT_NONE, None: VERDICT_TOO_FEW}


def paired_t(a: Sequence[float], b: Sequence[float], *, level: float = 0.95, power: float = 0.8) -> dict:
    """Paired comparison of `a` vs `b`, unit by unit (same seeds, same order), by the t interval of
    the per-unit differences a_i - b_i.

    `verdict` is "better" (a above b) when the whole interval is above 0, "worse" when it is below
    0, else "no detectable difference"; "too few seeds" with fewer than `MIN_PAIRS` pairs (`interval_side`).
    `seeds_needed` is how many paired units a test at the same level needs to detect the observed
    mean difference with probability `power`, given the observed spread of the differences (an
    estimate: the spread itself comes from these few units).
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ValueError("paired_t needs two equally long, non-empty lists")
    d = x - y
    iv = t_interval(d, level=level)
    verdict = VERDICTS[interval_side(iv["ci"], d.size)]
    if iv["ci"] is None:
        p_value = None
    elif iv["se"] > 0:
        p_value = float(2.0 * sps.t.sf(abs(iv["mean"]) / iv["se"], iv["df"]))
    else:
        p_value = 0.0 if iv["mean"] != 0 else 1.0
    return {
        "n": int(d.size),
        "mean_a": float(x.mean()),
        "mean_b": float(y.mean()),
        "mean_delta": iv["mean"],
        "sd_delta": iv["sd"],
        "ci": iv["ci"],
        "level": level,
        "t": iv["t"],
        "p_value": p_value,
        "verdict": verdict,
        "wins": int((d > 0).sum()),
        "ties": int((d == 0).sum()),
        "losses": int((d < 0).sum()),
        "power": power,
        "seeds_needed": seeds_for_power(iv["mean"], iv["sd"], level=level, power=power),
    }
