"""A refusal raised in a worker process reaches the parent whole: same type, field, message and attributes."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import gymnasium
import pytest

from policylab.envs.breakout.ale_errors import AleRuntimeError, GymError
from policylab.errors import BadInput
from policylab.rollout.store import DamagedPayload, IndexDamaged

REFUSALS = (
    BadInput("seeds", "must be positive"),
    GymError("obs_type", "must be rgb, grayscale or ram"),
    AleRuntimeError("mode", "no such mode"),
    DamagedPayload(Path("runs/store"), "abc123", "sha256 differs"),
    IndexDamaged(Path("runs/store/index.sqlite"), "not a database"),
)


@pytest.mark.parametrize("error", REFUSALS, ids=lambda e: type(e).__name__)
def test_every_refusal_survives_pickling(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert (str(back), back.field, back.message, back.args) == (str(error), error.field, error.message, error.args)
    assert vars(back) == vars(error)


def _refuse(k: int) -> None:
    raise REFUSALS[k]


def test_a_refusal_in_a_worker_process_is_raised_in_the_parent():
    with ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(IndexDamaged, match="not a store index") as raised:
            pool.submit(_refuse, 4).result()
        assert raised.value.why == "not a database"
        with pytest.raises(gymnasium.error.Error, match="obs_type"):
            pool.submit(_refuse, 1).result()
