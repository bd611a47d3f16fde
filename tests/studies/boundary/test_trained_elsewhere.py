"""A policy trained elsewhere plugs in as it is: a torch actor-critic in the common trainers' Go1
layout, exported with a fixed batch of 1 and two outputs, runs through sweep, verify, reduce, select,
replay, clips and report with nothing but a spec file written here (tests/support/trainer_layout.py)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from tests.support.boundary_fixtures import cli
from tests.support.trainer_layout import ACT, OBS, export_policy, spec_file

# The stand-still policy settles every seed to one standing pose by 2 s, so its boundary is a step
# (survives 40 %BW, falls at 42, whatever the seed); pushed at 0.5 s out of a noisier reset, the seeds
# differ and the 40 %BW cells are mixed, which gives select and replay boundary worlds to work on.
GRID = [
    "--n-mu",
    2,
    "--mu-min",
    0.5,
    "--mu-max",
    1.0,
    "--n-push",
    3,
    "--push-min",
    30,
    "--push-max",
    50,
    "--seeds-per-cell",
    4,
    "--push-t0",
    0.5,
]
RESET = {"qpos_uniform": 0.1, "qpos_noise_on": "joints", "qvel_normal": 0.5}


@pytest.mark.slow
def test_trainer_layout_policy_runs_every_stage(tmp_path):
    spec = spec_file(tmp_path / "spec", reset=RESET)
    policy = export_policy(tmp_path / "policy" / "go1_joystick.onnx")
    model = onnx.load(str(policy))  # as the trainers export it: batch fixed at 1, actions beside the critic
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, OBS]
    assert [o.name for o in model.graph.output] == ["continuous_actions", "value"]

    res = cli("robot", spec, "--out", tmp_path / "card")
    assert res.returncode == 0, res.stderr
    card = json.loads((tmp_path / "card" / "robot.json").read_text())
    assert card["observation"]["size"] == OBS and card["action_size"] == ACT and not card["warnings"]
    assert [r["slice"] for r in card["observation"]["layout"]] == [
        [0, 3],
        [3, 6],
        [6, 9],
        [9, 21],
        [21, 33],
        [33, 45],
        [45, 48],
    ]

    store, ana = tmp_path / "store", tmp_path / "ana"
    res = cli("sweep", "--robot", spec, "--checkpoint", policy, *GRID, "--store", store, "--out", tmp_path / "sweep")
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    counts = summary["counts"]
    assert counts["missing"] == counts["diverged"] == 0 and counts["survived"] > 0 and counts["failed"] > 0, counts
    assert summary["protocol"]["command"] == [0.5, 0.0, 0.0]
    assert summary["protocol"]["control"]["mode"] == "position"

    res = cli(
        "verify", "--robot", spec, "--checkpoint", policy, "--store", store, "--sample", 4, "--out", tmp_path / "verify"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    eq = json.loads((tmp_path / "verify" / "equivalence.json").read_text())
    assert eq["passed"] and eq["harness_vs_plain_loop"]["identical"] == 2
    for args in (
        ("reduce", "--store", store, "--checkpoint", policy.stem, "--out", ana),
        ("select", "--out", ana, "--n-boundary", 2, "--n-recoveries", 1),
        ("replay", "--out", ana, "--checkpoint", policy),
        ("clips", "--out", ana, "--width", 64, "--height", 48, "--workers", 1),
        ("report", "--out", ana),
    ):
        res = cli(*args)
        assert res.returncode == 0, (args[0], res.stdout, res.stderr)
    replays = json.loads((ana / "replay" / "replays.json").read_text())
    eqs = replays["equivalence_summary"]
    assert eqs["checked"] > 0 and eqs["bitwise_equal"] == eqs["checked"]
    assert any(p.suffix == ".mp4" for p in (ana / "clips").rglob("*"))
    assert (ana / "report" / "report.html").is_file()


@pytest.mark.slow  # torch's import and export: about 15 s on a loaded machine
def test_fixed_batch_one_acts_row_by_row_as_a_batch_would(tmp_path):
    """The loader runs a batch-1 file row by row; each row equals the same network run alone."""
    from policylab.policies import onnx as onnx_policy

    path = export_policy(tmp_path / "p.onnx", steps=5)
    pol = onnx_policy.load(path, OBS, ACT, output="continuous_actions")
    assert pol.batch_one
    x = np.random.default_rng(0).standard_normal((5, OBS))
    together = pol.act(x)
    assert together.shape == (5, ACT)
    for i in range(5):
        assert np.array_equal(pol.act(x[i : i + 1]), together[i : i + 1])


@pytest.mark.slow  # torch's import and export: about 15 s on a loaded machine
def test_policy_that_does_not_fit_the_spec_is_one_line_and_writes_nothing(tmp_path):
    """A 48-input policy against a spec whose observation has 51 values (a 3-value offset of a wider
    command) is refused before anything is written, naming the checkpoint and both sizes."""
    policy = export_policy(tmp_path / "p.onnx", steps=5)
    spec = spec_file(
        tmp_path / "spec",
        observation=[
            {"term": "sensor", "name": "local_linvel"},
            {"term": "sensor", "name": "gyro"},
            {"term": "site_gravity", "name": "imu"},
            {"term": "joint_pos_rel"},
            {"term": "joint_vel"},
            {"term": "last_action"},
            {"term": "command", "value": [0.0] * 6},
        ],
    )
    res = cli(
        "sweep",
        "--robot",
        spec,
        "--checkpoint",
        policy,
        *GRID,
        "--store",
        tmp_path / "store",
        "--out",
        tmp_path / "sweep",
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"policylab: error: checkpoint: {policy}: input 'obs' takes 48 observation values; "
        "the go1_trained_elsewhere robot gives 51"
    )
    assert not (tmp_path / "store").exists() and not (tmp_path / "sweep").exists()


def test_robot_command_warns_when_the_zero_policy_never_survives(tmp_path):
    """An uprightness threshold no standing robot meets: every zero-policy world fails, which is a warning."""
    spec = spec_file(
        tmp_path / "spec", failure={"torso_z_fail_m": 0.15, "uprightness_fail": 0.99999, "rule_version": 1}
    )
    res = cli("robot", spec, "--zero-policy-worlds", 2, "--out", tmp_path / "card")
    assert res.returncode == 0, res.stderr
    assert "zero policy: survived 0 of 2 nominal worlds" in res.stdout
    assert "warning: the zero policy survived 0 of 2 nominal worlds" in res.stdout
    res = cli("robot", tmp_path / "nope.json", "--out", tmp_path / "card2")
    assert res.returncode == 2 and res.stderr.startswith("policylab: error: spec: unknown robot")
    assert not (tmp_path / "card2").exists()


@pytest.mark.slow  # torch's import and export: about 15 s on a loaded machine
def test_normalisation_beside_the_policy_file_is_applied_and_names_the_policy(tmp_path):
    from policylab.errors import BadInput
    from policylab.policies import onnx as onnx_policy
    from policylab.studies.boundary.checkpoint import policy_record, resolve_checkpoint, robot_policy

    spec = spec_file(tmp_path / "spec")
    policy = export_policy(tmp_path / "p" / "net.onnx", steps=5)
    plain = resolve_checkpoint(str(policy), str(spec))
    assert plain.as_dict() == {"name": "net", "sha256": plain.sha256}  # no file beside: the keys stand
    mean, std = np.linspace(-1, 1, OBS), np.linspace(0.5, 2, OBS)
    beside = policy.with_suffix(".obs_norm.json")
    beside.write_text(json.dumps({"mean": mean.tolist(), "std": std.tolist()}))
    ckpt = resolve_checkpoint(str(policy), str(spec))
    assert ckpt.obs_norm_sha256 and ckpt.as_dict()["obs_norm_sha256"] == ckpt.obs_norm_sha256
    assert policy_record(ckpt)["params"]["obs_norm_sha256"] == ckpt.obs_norm_sha256
    x = np.random.default_rng(2).standard_normal((3, OBS))
    raw = onnx_policy.load(policy, OBS, ACT, output="continuous_actions")
    assert np.array_equal(robot_policy(policy, ckpt.robot).act(x), raw.act((x - mean) / std))
    beside.write_text(json.dumps({"mean": [0.0] * 47, "std": [1.0] * 47}))
    with pytest.raises(BadInput, match="mean and std need 48 values each"):
        resolve_checkpoint(str(policy), str(spec))
    beside.write_text(json.dumps({"mean": [0.0] * 48, "std": [1.0] * 48}))
    twice = spec_file(tmp_path / "spec2", normalization={"mean": [0.0] * 48, "std": [1.0] * 48})
    with pytest.raises(BadInput, match="already normalises; keep one of them"):
        resolve_checkpoint(str(policy), str(twice))
