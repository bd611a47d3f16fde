"""Search spaces of the Breakout training loop over the nine v3-family parameters: ``grid216``, ``random``,
``tpe`` (the grid: docs/breakout.md, "The training loop")."""

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
