"""Monte Carlo cross-check of the exact evaluation: actually play the floors.

`simulate(table, floors, plays, rng)` uses `play`'s kernel and draw layout; the tests state the tolerance."""

from __future__ import annotations

import numba
import numpy as np

from policylab.studies.lava_leap.agent import MAX_MOVES, play_kernel
from policylab.studies.lava_leap.floor import EXIT


@numba.njit(cache=True)
def _simulate(table, floors, U):
    path = np.zeros(MAX_MOVES + 1, dtype=np.int64)
    acts = np.zeros(MAX_MOVES, dtype=np.int64)
    pats = np.zeros(MAX_MOVES, dtype=np.int64)
    score = 0.0
    exits = 0
    for f in range(U.shape[0]):
        for k in range(U.shape[1]):
            n = play_kernel(table, floors[f], U[f, k], path, acts, pats)
            score += path[n] / EXIT
            exits += path[n] == EXIT
    total = U.shape[0] * U.shape[1]
    return score / total, exits / total


def simulate(table: np.ndarray, floors, plays: int, rng: np.random.Generator) -> tuple[float, float]:
    """Monte Carlo (mean score, exit rate) of leap table `table` with `plays` runs per floor."""
    floors = np.atleast_2d(np.asarray(floors, dtype=np.bool_))
    U = rng.random((floors.shape[0], plays, MAX_MOVES, 2))
    score, exit_rate = _simulate(np.asarray(table, dtype=float), floors, U)
    return float(score), float(exit_rate)
