"""A sweep outlives its input files: the store keeps a copy of the robot spec and of the policy file
(`kept_files.py`), so moving the spec and deleting the policy after a sweep breaks no later stage, and
`replay` re-simulates with the sweep's own policy without --checkpoint."""

from __future__ import annotations

import json
import shutil

import pytest

from policylab.envs.robots.robot import robot
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.kept_files import kept_name
from tests.support.boundary_fixtures import cli

GRID = (
    "--n-mu",
    "2",
    "--mu-min",
    "0.5",
    "--mu-max",
    "1.0",
    "--n-push",
    "5",
    "--push-min",
    "10",
    "--push-max",
    "50",
    "--seeds-per-cell",
    "4",
)  # go1_v0's boundary lies inside: cells with 0 < S < 1 to replay


def user_spec(folder):
    """The shipped Go1 spec as a user's file: written to `folder`, its MJCF named by absolute path."""
    go1 = robot("go1")
    data = json.loads(go1.spec_file.read_text())
    data["mjcf"] = str(go1.mjcf.resolve())
    path = folder / "my_go1.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.mark.slow
def test_moved_spec_and_deleted_policy_break_nothing(tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    spec = user_spec(inputs)
    policy = inputs / "walker.npz"
    shutil.copy(resolve_checkpoint("go1_v0").path, policy)
    store, ana = tmp_path / "store", tmp_path / "ana"
    assert cli("sweep", "--robot", spec, "--checkpoint", policy, *GRID, "--store", store).returncode == 0
    assert (tmp_path / "store-sweep-walker" / "sweep.json").is_file()  # the default output folder, beside the store
    r = cli("verify", "--robot", spec, "--checkpoint", policy, "--store", store, "--sample", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    with Store(store) as s:
        kept = s.get_meta(kept_name("walker"))
    assert (store / kept["spec"]).read_bytes() == spec.read_bytes()
    assert (store / kept["policy"]).read_bytes() == policy.read_bytes()

    spec.rename(tmp_path / "elsewhere.json")  # the spec moves, the policy is gone
    policy.unlink()
    for args in (
        ("reduce", "--store", store, "--checkpoint", "walker", "--resamples", "100", "--out", ana),
        ("select", "--out", ana, "--n-boundary", "2", "--n-recoveries", "0"),
        ("replay", "--out", ana),  # re-simulates with the store's copy of the policy
        ("clips", "--out", ana, "--width", "96", "--height", "72", "--workers", "1"),
        ("rrd", "--out", ana),
        ("report", "--out", ana),
    ):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    replays = json.loads((ana / "replay" / "replays.json").read_text())
    assert replays["equivalence_summary"]["checked"] >= 1
    assert replays["equivalence_summary"]["bitwise_equal"] == replays["equivalence_summary"]["checked"]
    assert json.loads((ana / "clips" / "clips.json").read_text())
    assert json.loads((ana / "rrd" / "rrd.json").read_text())


def test_a_sweep_without_its_mjcf_is_refused_in_one_line(tmp_path):
    """The store keeps the spec, not the model: a moved MJCF is named, exit 2, nothing written."""
    go1 = robot("go1")
    model = tmp_path / "model"
    shutil.copytree(go1.mjcf.parent, model)
    data = json.loads(go1.spec_file.read_text())
    data["mjcf"] = str(model / go1.mjcf.name)
    spec = tmp_path / "g.json"
    spec.write_text(json.dumps(data))
    store = tmp_path / "store"
    r = cli(
        "sweep",
        "--robot",
        spec,
        "--checkpoint",
        "go1_v0",
        "--n-mu",
        "1",
        "--n-push",
        "1",
        "--seeds-per-cell",
        "1",
        "--store",
        store,
    )
    assert r.returncode == 0, r.stderr
    spec.unlink()
    shutil.rmtree(model)
    r = cli("reduce", "--store", store, "--checkpoint", "go1_v0", "--out", tmp_path / "ana", "--keep-diverged")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "MJCF" in r.stderr and "gone or changed" in r.stderr
    assert not (tmp_path / "ana").exists()
