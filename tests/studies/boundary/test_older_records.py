"""`studies.boundary.older_records`, the one place that reads the boundary's older records: a sweep or a
reduction that records no robot is the Ant's, and a diverged outcome that names no cause diverged on its
states."""

from __future__ import annotations

from policylab.studies.boundary.older_records import UNRECORDED_ROBOT, recorded_robot, reduced_robot_ref
from policylab.studies.boundary.records import diverged_cause


def test_a_sweep_or_reduction_without_a_robot_is_the_ants():
    assert recorded_robot({}) == {"ref": UNRECORDED_ROBOT} == {"ref": "ant"}
    assert recorded_robot({"robot": {"ref": "go1_imu", "sha256": "x"}}) == {"ref": "go1_imu", "sha256": "x"}
    assert reduced_robot_ref({"sweep": {}}) == "ant"
    assert reduced_robot_ref({"sweep": {"robot": "go1"}}) == "go1"


def test_a_diverged_outcome_without_a_cause_diverged_on_its_states():
    assert diverged_cause({"status": "diverged"}) == "state"
    assert diverged_cause({"status": "diverged", "diverged_cause": "action"}) == "action"
    assert diverged_cause({"status": "failed"}) is None
