"""The policy a boundary command plays when it is not told: with no --robot, the default policy
(DEFAULT_CHECKPOINT) on the robot and with the command its training record names, which is the
default robot; with --robot, that robot's committed default; a committed checkpoint named alone
brings its robot. The default's outcomes are not pinned here: its network is retrained."""

from __future__ import annotations

import json

import pytest

from policylab.envs.robots.spec import DEFAULT_ROBOT, available
from policylab.errors import BadInput
from policylab.rollout.store import Store
from policylab.studies.boundary import requests
from policylab.studies.boundary.checkpoint import (
    available_checkpoints,
    committed_record,
    resolve_checkpoint,
    robot_of_checkpoint_name,
)
from policylab.studies.boundary.records import meta_name
from policylab.studies.boundary.robot_policies import DEFAULT_CHECKPOINT, default_checkpoint, robot_policies
from tests.support.boundary_fixtures import cli
from tests.support.trainer_layout import spec_file


def test_the_default_is_go1_v4_on_go1_imu_with_its_trained_command():
    assert (DEFAULT_CHECKPOINT, DEFAULT_ROBOT) == ("go1_v4", "go1_imu")
    assert committed_record(DEFAULT_CHECKPOINT)["command"] == [0.5, 0.0, 0.0]
    ckpt = resolve_checkpoint(None)
    assert (ckpt.name, ckpt.robot.spec.name, ckpt.robot.spec.command) == ("go1_v4", "go1_imu", [0.5, 0.0, 0.0])
    assert ckpt.path.suffix == ".onnx"
    # the default robot is the default policy's, and --robot go1_imu plays the same policy
    assert robot_of_checkpoint_name(DEFAULT_CHECKPOINT) == DEFAULT_ROBOT == "go1_imu"
    for same in (resolve_checkpoint(None, "go1_imu"), resolve_checkpoint("go1_v4")):
        assert (same.as_dict(), same.robot.ref, same.robot.spec.command) == (ckpt.as_dict(), "go1_imu", [0.5, 0.0, 0.0])


@pytest.mark.parametrize(
    "robot, name, command", [("go1", "go1_v0", None), ("ant", "ant_v0", None), ("go1_imu", "go1_v4", [0.5, 0.0, 0.0])]
)
def test_each_robot_plays_its_own_default(robot, name, command):
    ckpt = resolve_checkpoint(None, robot)
    assert (ckpt.name, ckpt.robot.spec.name, ckpt.robot.spec.command) == (name, robot, command)
    assert default_checkpoint(robot) == name


def test_every_shipped_robot_has_a_committed_default_of_its_own():
    """Each spec folder names its default (none falls back to <name>_v0), a committed checkpoint of its robot."""
    for robot in available():
        name = robot_policies(robot).default_checkpoint
        assert name == default_checkpoint(robot) and name in available_checkpoints()
        assert robot_of_checkpoint_name(name) == robot


def test_every_committed_checkpoint_names_its_robot():
    """ARS records keep the robot's identity (a dict), learn records its name: both give the name."""
    assert {n: robot_of_checkpoint_name(n) for n in ("go1_v0", "go1_v1", "ant_v0", "ant_v1")} == {
        "go1_v0": "go1",
        "go1_v1": "go1",
        "ant_v0": "ant",
        "ant_v1": "ant",
    }
    assert isinstance(committed_record("go1_v0")["robot"], dict)
    for name in available_checkpoints():
        assert robot_of_checkpoint_name(name) in available(), name
        assert resolve_checkpoint(name).robot.spec.name == robot_of_checkpoint_name(name)


def test_a_spec_of_ones_own_defaults_to_its_name_v0(tmp_path):
    spec = spec_file(tmp_path / "robot")  # named go1_trained_elsewhere: no committed checkpoint of that name
    with pytest.raises(BadInput) as exc:
        resolve_checkpoint(None, str(spec))
    assert exc.value.field == "checkpoint" and "'go1_trained_elsewhere_v0'" in exc.value.message


def test_default_out_folders_name_the_default_policy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path.resolve() / "runs/boundary"  # out folders are resolved (config.resolved)
    assert requests.SweepRequest().out == runs / f"store-sweep-{DEFAULT_CHECKPOINT}"
    for robot in available():
        assert requests.SweepRequest(robot=robot).out == runs / f"store-sweep-{default_checkpoint(robot)}"
    assert requests.SearchRequest(robot="go1").out == runs / "store-search-go1_v0"


def test_help_names_the_default():
    r = cli("sweep", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert f"default: {DEFAULT_CHECKPOINT} with the command it was trained for" in text
    assert "go1 go1_v0" in text and f"else {DEFAULT_ROBOT}" in text


def test_a_sweep_with_no_options_plays_the_default(tmp_path):
    """One world (a robust policy survives the 5 s): the store's records name the default policy, its robot
    and its trained command, in the default folder beside the store."""
    store = tmp_path / "store"
    r = cli("sweep", "--n-mu", 1, "--n-push", 1, "--seeds-per-cell", 1, "--chunk", 1, "--store", store)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / f"store-sweep-{DEFAULT_CHECKPOINT}" / "sweep.json").read_text())
    assert summary["protocol"]["command"] == committed_record(DEFAULT_CHECKPOINT)["command"]
    with Store(store) as s:
        meta = s.get_meta(meta_name(DEFAULT_CHECKPOINT))
        (record,) = list(s.records("boundary"))
    assert meta["protocol"]["command"] == [0.5, 0.0, 0.0]
    assert (meta["robot"]["ref"], meta["checkpoint"]["name"], meta["policy_kind"]) == ("go1_imu", "go1_v4", "onnx")
    assert record.data["world"]["checkpoint"]["name"] == DEFAULT_CHECKPOINT
