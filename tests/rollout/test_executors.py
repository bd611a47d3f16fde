"""Executors give the same results, and refuse an executor they cannot reach."""

import pytest

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


@pytest.mark.usefixtures("one_local_ray")
def test_local_ray_ignores_a_cluster_address_left_in_the_environment(monkeypatch):
    """`--executor ray` without an address starts its own Ray: an address that `ray start` or a shell left
    behind (here RAY_ADDRESS naming nobody; Ray also reads /tmp/ray/ray_current_cluster) is not joined."""
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    assert _collect("ray") == {i: i * i + 10 * i for i in range(6)}
