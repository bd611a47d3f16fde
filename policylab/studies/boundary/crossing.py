"""Where one row's survival crosses a level: the model, the 95% interval, the next batch, the flags.

Pure numpy, no simulation; the assumptions and why: docs/boundary.md, "Search" and "Module notes"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policylab.stats import fisher_exact

N_C_COARSE, N_C_FINE, N_S = 121, 201, 24
LOCATED, BELOW, ABOVE, OPEN = "crossing", "below range", "above range", "not located"
SPREAD = 0.5  # the batch's pushes are quantiles of the crossing's distribution raised to this power
MIN_ROLLOUTS = 24  # no row stops before: an interval from a handful of rollouts is narrow by chance too often
MONOTONE_P = 0.01  # a later group of rollouts surviving more than an earlier one (one-sided Fisher, Bonferroni)


@dataclass(frozen=True)
class Fit:
    """The crossing of one row's data: its median, 95% interval and distribution on a grid (the design's
    weights)."""

    point: float
    lo: float
    hi: float
    open_below: bool  # the interval reaches the grid's lower end: unbounded below
    open_above: bool
    c: np.ndarray  # the grid of c and the crossing's distribution on it (the design's weights)
    weight: np.ndarray

    @property
    def width(self) -> float:
        return float("inf") if self.open_below or self.open_above else self.hi - self.lo


def _aggregate(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ux, inv = np.unique(x, return_inverse=True)
    n = np.bincount(inv, minlength=len(ux)).astype(float)
    k = np.bincount(inv, weights=y, minlength=len(ux))
    return ux, n, k


def _loglik(c: np.ndarray, s: np.ndarray, ux, n, k, level: float) -> np.ndarray:
    """(C, S) log-likelihood of the logistic curve with crossing c, scale s."""
    z = np.log(level / (1 - level)) - (ux[None, None, :] - c[:, None, None]) / s[None, :, None]
    # log S = -softplus(-z), log(1 - S) = -softplus(z); stable for any z
    return -(k * np.logaddexp(0.0, -z) + (n - k) * np.logaddexp(0.0, z)).sum(axis=2)


def fit(x, y, lo: float, hi: float, level: float = 0.5, s_min: float = 0.5) -> Fit:
    """Integrated-likelihood fit of a row's rollouts (`x` pushes, `y` 1 = survived) over the range [lo, hi]."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    span = hi - lo
    s = np.geomspace(s_min, span * 2.0, N_S)
    c_lo, c_hi = lo - span / 2.0, hi + span / 2.0
    if not len(x):
        c = np.linspace(c_lo, c_hi, N_C_COARSE)
        return Fit((lo + hi) / 2, c_lo, c_hi, True, True, c, np.full(len(c), 1.0 / len(c)))
    ux, n, k = _aggregate(x, y)
    # coarse pass over the whole grid, then a fine one over the region the coarse one cannot rule out
    c = np.linspace(c_lo, c_hi, N_C_COARSE)
    marg = _marginal(_loglik(c, s, ux, n, k, level))
    step = c[1] - c[0]
    keep = np.flatnonzero(marg - marg.max() >= -12.0)
    f_lo, f_hi = max(c_lo, c[keep[0]] - step), min(c_hi, c[keep[-1]] + step)
    cf = np.linspace(f_lo, f_hi, N_C_FINE)
    pf = _marginal(_loglik(cf, s, ux, n, k, level))
    w = np.exp(pf - pf.max())
    w /= w.sum()
    cdf = np.cumsum(w)
    i_lo, i_hi = int(np.searchsorted(cdf, 0.025)), min(int(np.searchsorted(cdf, 0.975)), N_C_FINE - 1)
    med = cf[min(int(np.searchsorted(cdf, 0.5)), N_C_FINE - 1)]
    return Fit(
        float(med),
        float(cf[i_lo]),
        float(cf[i_hi]),
        bool(i_lo == 0 and f_lo <= c_lo),
        bool(i_hi == N_C_FINE - 1 and f_hi >= c_hi),
        cf,
        w,
    )


def _marginal(ll: np.ndarray) -> np.ndarray:
    """log of the likelihood integrated over log s (flat prior on log s): (C, S) -> (C,)."""
    top = ll.max()
    return np.log(np.exp(ll - top).sum(axis=1)) + top


def status(f: Fit, lo: float, hi: float) -> str:
    """Where the crossing lies: beyond the range's lower or upper end (the whole interval there), or in it."""
    if f.hi < lo:
        return BELOW
    if f.lo > hi:
        return ABOVE
    return LOCATED


def next_pushes(f: Fit, k: int, lo: float, hi: float, snap) -> list[float]:
    """The next batch: `k` pushes at the (i + 1/2) / k quantiles of the crossing's distribution to the power
    `SPREAD`, clipped to [lo, hi] and put on the push lattice by `snap`."""
    w = f.weight**SPREAD
    cdf = np.cumsum(w / w.sum())
    q = (np.arange(k) + 0.5) / k
    c = f.c[np.minimum(np.searchsorted(cdf, q), len(f.c) - 1)]
    return [snap(float(min(max(v, lo), hi))) for v in c]


def monotonicity(x, y, group: int = 8) -> dict:
    """Is the row's survival consistent with a decreasing curve? The rollouts sorted by push are cut into
    consecutive groups of `group`; for every earlier/later pair a one-sided Fisher exact test asks whether
    the later (harder-pushed) group survives more. Flagged when the smallest p, Bonferroni-corrected over
    the pairs, is below `MONOTONE_P`."""
    order = np.lexsort((np.asarray(y), np.asarray(x)))
    xs, ys = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=int)[order]
    groups = [(xs[i : i + group], ys[i : i + group]) for i in range(0, len(xs) - group + 1, group)]
    pairs = [(a, b) for a in range(len(groups)) for b in range(a + 1, len(groups))]
    if not pairs:
        return {"flagged": False, "pairs": 0, "min_p": None, "worst": None}
    best = None
    for a, b in pairs:
        (xa, ya), (xb, yb) = groups[a], groups[b]
        # failures in the later group fewer than in the earlier one: alternative "earlier fails more"
        p = fisher_exact(int((ya == 0).sum()), len(ya), int((yb == 0).sum()), len(yb), alternative="greater")
        if best is None or p < best[0]:
            best = (p, a, b)
    p, a, b = best
    adj = min(1.0, p * len(pairs))
    (xa, ya), (xb, yb) = groups[a], groups[b]
    return {
        "flagged": bool(adj < MONOTONE_P),
        "pairs": len(pairs),
        "min_p": adj,
        "worst": {
            "earlier_pct_bw": [float(xa[0]), float(xa[-1])],
            "earlier_survived": f"{int(ya.sum())}/{len(ya)}",
            "later_pct_bw": [float(xb[0]), float(xb[-1])],
            "later_survived": f"{int(yb.sum())}/{len(yb)}",
        },
    }


@dataclass(frozen=True)
class Decision:
    fit: Fit
    status: str  # LOCATED, BELOW or ABOVE (where the interval lies)
    done: bool  # the row needs no more rollouts: its crossing lies beyond the range, or its interval is narrow
    next: list[float]  # the next batch's pushes (empty when done)


def decide(
    x, y, lo: float, hi: float, *, level: float, batch: int, target_width: float, snap, resolution: float
) -> Decision:
    """One row's state after its rollouts so far: the fit, where the crossing lies, whether the row is done
    (the whole interval beyond one end of the range, or a located interval no wider than `target_width`)
    and, if not, the next batch."""
    f = fit(x, y, lo, hi, level, resolution)
    st = status(f, lo, hi)
    done = len(x) >= MIN_ROLLOUTS and (st != LOCATED or f.width <= target_width)
    return Decision(f, st, done, [] if done else next_pushes(f, batch, lo, hi, snap))


def planted_search(
    curve,
    lo: float,
    hi: float,
    rng: np.random.Generator,
    *,
    level: float = 0.5,
    batch: int = 4,
    target_width: float = 10.0,
    max_rollouts: int = 64,
    resolution: float = 0.5,
) -> Decision:
    """The search's design on one row whose survival is the known function `curve` (push -> probability):
    Bernoulli draws instead of rollouts, so the interval's coverage can be measured without simulation."""

    def snap(v: float) -> float:
        return round(v / resolution) * resolution

    x: list[float] = []
    y: list[int] = []
    while True:
        d = decide(x, y, lo, hi, level=level, batch=batch, target_width=target_width, snap=snap, resolution=resolution)
        if d.done or len(x) + batch > max_rollouts:
            return d
        for p in d.next:
            x.append(p)
            y.append(int(rng.random() < curve(p)))
