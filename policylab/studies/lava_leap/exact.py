"""Exact evaluation by dynamic programming, vectorized over policies and floors.

V(t) = (1 - q) V(t+1) + q (V(t+2) + V(t+3)) / 2 from t = 38 down (targets past 39 are 39; lava u scores u/39),
and the same for P; V(0) is the expected score. K tables x F floors in one backward sweep."""

from __future__ import annotations

import numpy as np

from policylab.studies.lava_leap.agent import leap_table
from policylab.studies.lava_leap.floor import EXIT, FLOOR, VIEW

N_DETERMINISTIC = 256  # 0/1 leap tables over 8 patterns; bit b of the id = LEAP on pattern b


def patterns(floors: np.ndarray) -> np.ndarray:
    """Pattern index seen from every tile of every floor, (F, FLOOR)."""
    padded = np.zeros((floors.shape[0], FLOOR + VIEW), dtype=np.int64)
    padded[:, :FLOOR] = floors
    return 4 * padded[:, 1 : FLOOR + 1] + 2 * padded[:, 2 : FLOOR + 2] + padded[:, 3 : FLOOR + 3]


def _as_floors(floors) -> np.ndarray:
    return np.atleast_2d(np.asarray(floors, dtype=bool))


def outcomes_many(tables: np.ndarray, floors) -> tuple[np.ndarray, np.ndarray]:
    """Expected score and exit probability, each (K, F), for K leap tables on F floors."""
    tables = np.atleast_2d(np.asarray(tables, dtype=float))
    lava = _as_floors(floors)
    K, F = tables.shape[0], lava.shape[0]
    pats = patterns(lava)
    value = np.ones((K, F, FLOOR + VIEW))  # tiles >= EXIT are the exit (clamped)
    exits = np.ones((K, F, FLOOR + VIEW))
    terminal = np.arange(FLOOR) / EXIT
    value[:, :, :FLOOR] = np.where(lava, terminal, 0.0)[None]
    exits[:, :, :FLOOR] = 0.0
    exits[:, :, EXIT] = 1.0
    value[:, :, EXIT] = 1.0
    for t in range(EXIT - 1, -1, -1):
        q = tables[:, pats[:, t]]
        v = (1 - q) * value[:, :, t + 1] + q * (0.5 * (value[:, :, t + 2] + value[:, :, t + 3]))
        p = (1 - q) * exits[:, :, t + 1] + q * (0.5 * (exits[:, :, t + 2] + exits[:, :, t + 3]))
        safe = ~lava[:, t]
        value[:, :, t] = np.where(safe, v, value[:, :, t])
        exits[:, :, t] = np.where(safe, p, exits[:, :, t])
    return value[:, :, 0], exits[:, :, 0]


def exact_outcomes(table: np.ndarray, floors) -> tuple[np.ndarray, np.ndarray]:
    """Per-floor (expected score, exit probability) for one leap table, each (F,)."""
    v, p = outcomes_many(np.asarray(table, dtype=float)[None], floors)
    return v[0], p[0]


def evaluate(W: np.ndarray, floors) -> tuple[float, float]:
    """Exact (mean score, mean exit probability) of the policy W over `floors`."""
    v, p = outcomes_many(leap_table(W)[None], floors)
    return float(v.mean(axis=1)[0]), float(p.mean(axis=1)[0])


def deterministic_tables() -> np.ndarray:
    """The 256 0/1 leap tables, row pid: LEAP on pattern b iff bit b of pid is set."""
    pid = np.arange(N_DETERMINISTIC)[:, None]
    return ((pid >> np.arange(8)[None]) & 1).astype(float)


def all_deterministic_policies(floors) -> tuple[np.ndarray, np.ndarray]:
    """Mean exact score and exit probability over `floors` of each of the 256 deterministic policies."""
    v, p = outcomes_many(deterministic_tables(), floors)
    return v.mean(axis=1), p.mean(axis=1)
