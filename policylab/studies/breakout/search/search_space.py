"""Search spaces of the Breakout training loop over the nine v3-family parameters.

- ``grid216``: the original searched 216 candidates (`c000`-`c215`) whose grid is unknown
  (216 = 3^3 x 2^3). policylab's grid varies the six parameters that move the paddle most and
  fixes the other three at the v3 defaults; candidates are numbered in `itertools.product` order
  of the table below (last parameter fastest).

  ==============  ==================  =====
  parameter       values              count
  ==============  ==================  =====
  far_cap         8, 12, 16           3
  near_cap        12, 18, 24          3
  near_lead       0, 1.5, 3           3
  far_lead        1, 3                2
  near_deadzone   0.5, 1.5            2
  panic_y         175, 185            2
  base_deadzone   3 (fixed)
  near_y          165 (fixed)
  far_deadzone    2 (fixed)
  ==============  ==================  =====

- ``random``: `budget` points drawn uniformly from the parameter ranges (seeded PCG64).
- ``tpe``: Optuna's TPE sampler (seeded) proposing `budget` points in rounds of `batch`,
  each round scored in one vectorized batch; its objective is the search-env score mean.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from policylab.policies.breakout import V3_DEFAULTS, V3_PARAMS, V3_SPACE

GRID216_AXES: dict[str, tuple[float, ...]] = {
    "far_cap": (8.0, 12.0, 16.0),
    "near_cap": (12.0, 18.0, 24.0),
    "near_lead": (0.0, 1.5, 3.0),
    "far_lead": (1.0, 3.0),
    "near_deadzone": (0.5, 1.5),
    "panic_y": (175.0, 185.0),
}


def candidate_id(i: int) -> str:
    return f"c{i:03d}"


def _ordered(params: dict[str, float]) -> dict[str, float]:
    return {k: float(params[k]) for k in V3_PARAMS}


def grid216() -> list[dict]:
    names = list(GRID216_AXES)
    out = []
    for i, values in enumerate(itertools.product(*GRID216_AXES.values())):
        params = dict(V3_DEFAULTS)
        params.update(zip(names, values))
        out.append({"candidate_id": candidate_id(i), "params": _ordered(params)})
    return out


def random_candidates(budget: int, seed: int) -> list[dict]:
    """`budget` uniform draws over the v3 ranges, rounded to 0.01 so they print and hash stably."""
    rng = np.random.Generator(np.random.PCG64(seed))
    lo = np.array([V3_SPACE[k][0] for k in V3_PARAMS])
    hi = np.array([V3_SPACE[k][1] for k in V3_PARAMS])
    draws = np.round(rng.uniform(lo, hi, size=(budget, len(V3_PARAMS))), 2)
    return [
        {"candidate_id": candidate_id(i), "params": dict(zip(V3_PARAMS, map(float, row)))}
        for i, row in enumerate(draws)
    ]


def tpe_candidates(
    budget: int, seed: int, score: Callable[[Sequence[dict]], Sequence[float]], batch: int = 24
) -> list[dict]:
    """Propose `budget` candidates with seeded TPE; `score` evaluates a batch of param dicts."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(batch, budget))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: optuna.distributions.FloatDistribution(*V3_SPACE[k], step=0.01) for k in V3_PARAMS}
    out: list[dict] = []
    while len(out) < budget:
        trials = [study.ask(dists) for _ in range(min(batch, budget - len(out)))]
        params = [_ordered({k: round(t.params[k], 2) for k in V3_PARAMS}) for t in trials]
        for trial, value in zip(trials, score(params)):
            study.tell(trial, float(value))
        out.extend({"candidate_id": candidate_id(len(out) + j), "params": p} for j, p in enumerate(params))
    return out
