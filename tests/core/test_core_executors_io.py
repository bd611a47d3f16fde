"""Executors give the same results; configs and output folders are validated at the boundary."""

import json

import pytest

from policylab.config import StrictModel, claim_out_dir, validated
from policylab.errors import BadInput
from policylab.rollout.executors import check_executor, run_tasks


def square_plus_seed(task):
    return task["x"] ** 2 + task["seed"]


TASKS = [{"x": i, "seed": 10 * i} for i in range(6)]


def _collect(executor):
    return dict(run_tasks(square_plus_seed, TASKS, executor=executor, workers=2))


def test_local_and_processes_agree():
    local = _collect("local")
    assert local == {i: i * i + 10 * i for i in range(6)}
    assert _collect("processes") == local


def test_unknown_executor_and_unreachable_ray():
    with pytest.raises(BadInput, match="executor"):
        check_executor("threads")
    with pytest.raises(BadInput, match="ray_address"):
        check_executor("ray", "127.0.0.1:1")


class Cfg(StrictModel):
    episodes: int
    name: str = "x"


def test_validated_names_the_field():
    assert validated(Cfg, {"episodes": 3}).episodes == 3
    with pytest.raises(BadInput) as exc:
        validated(Cfg, {"episodes": 3, "bogus": 1})
    assert exc.value.field == "bogus"


def test_claim_out_dir(tmp_path):
    out = tmp_path / "run"
    claim_out_dir(out, {"a": 1})
    assert json.loads((out / "config.json").read_text()) == {"a": 1}
    claim_out_dir(out, {"a": 1})  # same config: fine (resume)
    with pytest.raises(BadInput, match="different config"):
        claim_out_dir(out, {"a": 2})
    other = tmp_path / "full"
    other.mkdir()
    (other / "x.txt").write_text("hi")
    with pytest.raises(BadInput, match="not empty"):
        claim_out_dir(other, {"a": 1})
