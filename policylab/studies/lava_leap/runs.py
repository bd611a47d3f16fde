"""Lava Leap training runs as store records: one run (algorithm, seed, hyperparameters) is one rollout
record, its exact evaluations in its payload (arrays: docs/lava_leap.md, "Module notes")."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from policylab.rollout.ensure import Planned
from policylab.studies.lava_leap import config
from policylab.studies.lava_leap.floor import new_floors
from policylab.studies.lava_leap.learners import train

STUDY = "lava_leap"
SNAPSHOTS = (10, config.WALK_AT)  # the slow-seed analysis reads update 10; the walkthrough WALK_AT


def planned(cfg: config.LavaLeapConfig, algo: str, seed: int, **override) -> Planned:
    kwargs = cfg.train_kwargs(**override)
    return Planned(
        study=STUDY,
        world={"env": "lava_leap", "seed": int(seed), "test_floors": {"seed": config.TEST_SEED, "n": config.N_TEST}},
        policy={"name": algo, "params": {"init": "zeros"}},
        protocol={**kwargs, "snapshots": list(SNAPSHOTS)},
        detail=(algo, int(seed), kwargs),
    )


@lru_cache(maxsize=1)
def _test_floors():
    return new_floors(np.random.default_rng(config.TEST_SEED), config.N_TEST)


def run_unit(work: tuple[str, int, dict]) -> list[tuple[dict, dict]]:
    """One training run -> [(outcome, payload)]; module-level so any executor can ship it."""
    algo, seed, kwargs = work
    log: list[dict] = []
    W, v, curve, saved = train(algo, seed, _test_floors(), clip_log=log, snapshots=SNAPSHOTS, **kwargs)
    payload = {
        "W": W,
        "v": v,
        "curve": np.asarray(curve, dtype=np.float64),
        "snap_updates": np.asarray(SNAPSHOTS, dtype=np.int64),
        "snap_W": np.stack([saved[u][0] for u in SNAPSHOTS]),
        "snap_v": np.stack([saved[u][1] for u in SNAPSHOTS]),
        "clipped": np.asarray([u["clipped"] for u in log], dtype=np.int64).reshape(len(log), -1),
        "steps": np.asarray([u["steps"] for u in log], dtype=np.int64),
        "mean_abs_adv": np.asarray([u["mean_abs_adv"] for u in log], dtype=np.float64),
    }
    finite = bool(np.isfinite(W).all() and np.isfinite(v).all() and np.isfinite(payload["curve"]).all())
    outcome = {"final_score": curve[-1][1], "final_exit": curve[-1][2], "finite": finite}
    return [(outcome, payload)]


class Runner:
    """Each training run is its own unit: runs take ~0.1 s, so there is nothing to batch."""

    run = staticmethod(run_unit)

    def pack(self, todo: Sequence[Planned]) -> list[tuple[list[Planned], Any]]:
        return [([p], p.detail) for p in todo]


def unpack(payload: dict[str, np.ndarray]):
    """(W, v, curve, saved, clip_log) in the shapes `learners.train` returns them."""
    curve = [(int(u), float(s), float(e)) for u, s, e in payload["curve"]]
    saved = {int(u): (payload["snap_W"][i], payload["snap_v"][i]) for i, u in enumerate(payload["snap_updates"])}
    log = [
        dict(
            clipped=[int(c) for c in payload["clipped"][u]],
            steps=int(payload["steps"][u]),
            mean_abs_adv=float(payload["mean_abs_adv"][u]),
        )
        for u in range(payload["steps"].size)
    ]
    return payload["W"], payload["v"], curve, saved, log
