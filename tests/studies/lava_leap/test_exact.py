"""Exact evaluation against brute force and against Monte Carlo."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.optimize import minimize

from policylab.studies.lava_leap import EXIT, all_deterministic_policies, config, evaluate, exact_outcomes
from policylab.studies.lava_leap.exact import deterministic_tables, outcomes_many
from policylab.studies.lava_leap.floor import new_floors
from policylab.studies.lava_leap.simulate import simulate


def brute_force(table, lava):
    """Expected score and exit probability by enumerating every path (a forward recursion over
    moves and coin flips; independent of the backward DP)."""

    @functools.cache
    def go(pos):
        b = (
            4 * int(pos + 1 < 40 and lava[pos + 1])
            + 2 * int(pos + 2 < 40 and lava[pos + 2])
            + int(pos + 3 < 40 and lava[pos + 3])
        )
        q = table[b]
        branches = [(1 - q, 1), (q / 2, 2), (q / 2, 3)]
        v = p = 0.0
        for prob, d in branches:
            if prob == 0:
                continue
            nxt = min(pos + d, EXIT)
            if lava[nxt]:
                v += prob * nxt / EXIT
            elif nxt == EXIT:
                v += prob
                p += prob
            else:
                sv, sp = go(nxt)
                v += prob * sv
                p += prob * sp
        return v, p

    return go(0)


def test_ceiling_over_256_policies_matches_brute_force():
    floors = new_floors(np.random.default_rng(77), 4)
    scores, exits = all_deterministic_policies(floors)
    tables = deterministic_tables()
    brute = np.array([[brute_force(tuple(t), tuple(f)) for f in floors] for t in tables])  # (256, 4, 2)
    assert np.allclose(scores, brute[:, :, 0].mean(axis=1), atol=1e-12)
    assert np.allclose(exits, brute[:, :, 1].mean(axis=1), atol=1e-12)
    best = np.flatnonzero(np.isclose(scores, scores.max(), atol=1e-12))
    assert 0b01010000 in best  # leap iff lava directly ahead


def test_stochastic_tables_match_brute_force():
    floors = new_floors(np.random.default_rng(3), 5)
    rng = np.random.default_rng(4)
    for _ in range(5):
        table = rng.random(8)
        v, p = exact_outcomes(table, floors)
        for i, f in enumerate(floors):
            assert np.allclose((v[i], p[i]), brute_force(tuple(table), tuple(f)), atol=1e-12)


def test_evaluate_is_the_mean_over_floors():
    floors = new_floors(np.random.default_rng(9), 30)
    W = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, -2.0], [0.1, 0.0]])
    v, p = exact_outcomes(
        1 / (1 + np.exp(-(np.array([[(b >> 2) & 1, (b >> 1) & 1, b & 1, 1] for b in range(8)]) @ (W[:, 1] - W[:, 0])))),
        floors,
    )
    assert np.allclose(evaluate(W, floors), (v.mean(), p.mean()), atol=1e-12)


def test_dp_matches_monte_carlo_within_four_standard_errors():
    """Tolerance: 4 standard errors of the Monte Carlo mean (score sd <= 0.5, exit sd <= 0.5)."""
    floors = new_floors(np.random.default_rng(11), 40)
    rng = np.random.default_rng(12)
    plays = 500
    for table in (np.full(8, 0.5), np.array([0, 0, 0, 0, 1, 0, 1, 0.0]), rng.random(8)):
        v, p = exact_outcomes(table, floors)
        s_mc, e_mc = simulate(table, floors, plays, rng)
        tol = 4 * 0.5 / np.sqrt(plays * len(floors))
        assert abs(s_mc - v.mean()) < tol and abs(e_mc - p.mean()) < tol


@pytest.mark.slow
def test_no_stochastic_table_beats_the_deterministic_ceiling():
    """The intervals are clipped to [0, ceiling] (uncertainty.py), which is sound only if no leap
    table at all scores above the best of the 256 deterministic ones on the test floors: random
    tables in (0, 1)^8, tables near each tied-best one, and local optimisation from random starts."""
    floors = np.array(new_floors(np.random.default_rng(config.TEST_SEED), config.N_TEST))
    scores, _ = all_deterministic_policies(floors)
    ceiling = scores.max()
    rng = np.random.default_rng(0)
    best = deterministic_tables()[scores >= ceiling - 1e-12]
    near = np.clip(best[:, None, :] + rng.uniform(-0.05, 0.05, (len(best), 100, 8)), 0, 1).reshape(-1, 8)
    tables = np.vstack([rng.uniform(0, 1, (2000, 8)), near])
    assert outcomes_many(tables, floors)[0].mean(axis=1).max() <= ceiling + 1e-12

    def loss(x):
        return -outcomes_many((1 / (1 + np.exp(-np.clip(x, -30, 30))))[None], floors)[0].mean()

    for _ in range(5):
        found = minimize(loss, rng.normal(0, 2, 8), method="Nelder-Mead", options={"maxiter": 1500})
        assert -found.fun <= ceiling + 1e-12
