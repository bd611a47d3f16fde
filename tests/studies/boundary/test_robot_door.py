"""The robot door: a policy file is played on the robot it was trained on, never on a default one.

A network given as a file with no robot (no --robot, nothing in its metadata) is refused naming `robot`
(before, it played on go1_imu with no word: a trainer's network in another joint order fell in every
world); `boundary learn`'s exporter writes the robot into the file, the loader reads it, and a file
naming another robot than --robot is refused. The committed networks carry no metadata and keep their
bytes: they are recognised by name, and a copy by its bytes."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import onnx
import pytest

from policylab.envs.robots.robot import robot
from policylab.errors import BadInput
from policylab.policies import mlp
from policylab.policies.files import named_robot
from policylab.studies.boundary.checkpoint import committed_record, resolve_checkpoint
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from tests.support.boundary_fixtures import cli
from tests.support.paths import ROOT
from tests.support.robot_specs import go1_imu_copy

ONE_WORLD = ("--n-mu", 1, "--n-push", 1, "--seeds-per-cell", 1, "--chunk", 1)


def _network(path, metadata=None):
    """A small go1_imu-sized network (48 -> 12) in the project's form."""
    rng = np.random.default_rng(0)
    layers = [(rng.normal(0, 0.1, (8, 48)), np.zeros(8)), (rng.normal(0, 0.1, (12, 8)), np.zeros(12))]
    return mlp.export_robot_policy(layers, path, metadata=metadata)


def test_a_file_naming_no_robot_needs_robot(tmp_path):
    policy = _network(tmp_path / "trainer.onnx")
    store = tmp_path / "store"
    r = cli("sweep", "--checkpoint", policy, *ONE_WORLD, "--store", store)
    assert r.returncode == 2, r.stdout
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("policylab: error: robot: ") and "pass --robot" in line and "metadata" in line
    assert not store.exists() and not (tmp_path / "store-sweep-trainer").exists()
    with pytest.raises(BadInput) as exc:
        resolve_checkpoint(str(policy))
    assert exc.value.field == "robot"
    assert resolve_checkpoint(str(policy), "go1_imu").robot.spec.name == "go1_imu"  # --robot says it


def test_the_robot_in_a_files_metadata_is_played_and_another_refused(tmp_path):
    imu = robot("go1_imu")
    policy = _network(tmp_path / "mine.onnx", mlp.robot_metadata(imu.identity))
    assert named_robot(policy) == "go1_imu"
    assert resolve_checkpoint(str(policy)).robot.spec.name == "go1_imu"
    r = cli("sweep", "--checkpoint", policy, "--robot", "ant", *ONE_WORLD, "--store", tmp_path / "store")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("policylab: error: robot: ") and "'go1_imu'" in line and "'ant'" in line
    assert not (tmp_path / "store").exists()


def test_the_docs_way_of_naming_the_robot_in_a_file(tmp_path):
    """docs/boundary.md ("Policies are files"): add `policylab.robot` with the onnx package."""
    policy = _network(tmp_path / "exported.onnx")
    model = onnx.load(str(policy))
    entry = model.metadata_props.add()
    entry.key, entry.value = "policylab.robot", "go1_imu"
    onnx.save(model, str(tmp_path / "named.onnx"))
    assert resolve_checkpoint(str(tmp_path / "named.onnx")).robot.spec.name == "go1_imu"
    doc = (ROOT / "docs" / "boundary.md").read_text()
    assert 'entry.key, entry.value = "policylab.robot", "go1_imu"' in doc


@pytest.mark.parametrize("name", ["go1_v2", "go1_v3"])
def test_committed_networks_keep_their_bytes_and_a_copy_is_recognised(name, tmp_path):
    path = CHECKPOINT_DIR / f"{name}.onnx"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == committed_record(name)["checkpoint_sha256"]
    assert named_robot(path) is None  # exported before the robot was written into files: unchanged
    copy = tmp_path / "copy.onnx"
    shutil.copy(path, copy)
    ckpt = resolve_checkpoint(str(copy))
    assert (ckpt.robot.spec.name, ckpt.robot.spec.command) == ("go1_imu", committed_record(name)["command"])


def test_exporting_without_a_robot_writes_the_bytes_it_always_wrote(tmp_path):
    """The metadata is written only when given: a network exported without it is the file it was."""
    plain = _network(tmp_path / "a.onnx").read_bytes()
    assert not onnx.load_from_string(plain).metadata_props
    named = _network(tmp_path / "b.onnx", mlp.robot_metadata(robot("go1_imu").identity)).read_bytes()
    meta = {m.key: m.value for m in onnx.load_from_string(named).metadata_props}
    assert meta == {
        "policylab.robot": "go1_imu",
        "policylab.robot_spec_sha256": robot("go1_imu").identity["spec_sha256"],
    }
    assert mlp.project(named) is not None  # still the project's form: the portable kernel plays it


def _warnings(stderr: str) -> list[str]:
    """The warning lines of a command's stderr (which also holds the sweep's progress lines)."""
    return [line for line in stderr.splitlines() if line.startswith("policylab: warning:")]


TRAINER_ORDER = [f"{leg}_{j}_joint" for leg in ("FR", "FL", "RR", "RL") for j in ("hip", "thigh", "calf")]


def test_a_sweep_that_falls_before_the_push_says_so(tmp_path):
    """A valid but wrong joint_order (the common trainers' FR, FL, RR, RL for a network trained in the MJCF's
    FL, FR, RL, RR) passes the robot card, then every rollout falls before the push: one line on stderr, in
    sweep.json and on the report (before: nothing said it)."""
    spec = go1_imu_copy(tmp_path, joint_order=TRAINER_ORDER)
    store, out, ana = tmp_path / "store", tmp_path / "sweep", tmp_path / "ana"
    r = cli(
        "sweep",
        "--robot",
        spec,
        "--checkpoint",
        "go1_v2",
        "--n-mu",
        1,
        "--mu-min",
        1.0,
        "--mu-max",
        1.0,
        "--n-push",
        2,
        "--seeds-per-cell",
        2,
        "--store",
        store,
        "--out",
        out,
    )
    assert r.returncode == 0, r.stderr
    (line,) = _warnings(r.stderr)
    assert line.startswith("policylab: warning: 4 of 4 rollouts fell before the push started (2 s)")
    assert "joint_order" in line
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["failed_before_push"] == 4 and summary["warnings"] == [line.removeprefix("policylab: warning: ")]
    for args in (
        ("verify", "--robot", spec, "--checkpoint", "go1_v2", "--store", store, "--sample", 2, "--out", tmp_path / "v"),
        ("reduce", "--store", store, "--checkpoint", "go1_v2", "--resamples", 100, "--out", ana),
        ("report", "--out", ana),
    ):
        assert cli(*args).returncode == 0
    report = json.loads((ana / "report" / "report.json").read_text())
    assert report["warnings"] == summary["warnings"]
    assert "Warning: 4 of 4 rollouts fell before the push started" in (ana / "report" / "report.html").read_text()


def test_a_sweep_that_walks_says_nothing(tmp_path):
    r = cli("sweep", "--checkpoint", "go1_v2", *ONE_WORLD, "--store", tmp_path / "store", "--out", tmp_path / "s")
    assert r.returncode == 0 and _warnings(r.stderr) == []
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["warnings"] == []
