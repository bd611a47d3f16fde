"""Invalid actions are never falls: a policy that gives a non-finite action mid-rollout ends that rollout
as `diverged` (cause ``action``, its step recorded), and `verify` and `reduce` refuse such a sweep
unless --keep-diverged asks for it.

Both policies are finite at the zero observation (their loaders' probe passes) and turn non-finite once
the Go1's gait clock passes a threshold (observation entries 34 and 35 are sin and cos of 2 pi 2 t):
an ONNX network exported from torch (0 x sqrt(0.9 + sin): NaN once sin < -0.9, at t = 0.34 s), and a
linear `.npz` whose weights overflow (a product gives -inf from the first step, which the clip maps
to -1; a second product overflows to +inf once sin > 0.9, at t = 0.1 s, and -inf + inf is NaN).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from policylab.envs.robots.robot import robot
from policylab.policies import linear
from policylab.rollout.store import Store
from policylab.studies.boundary.protocol import BAD_ACTION
from tests.support.boundary_fixtures import cli

GO1 = robot("go1")
SIN = GO1.obs_dim - 2  # the phase term's sin(2 pi hz t); the spec's last term
GRID = (
    "--n-mu",
    "2",
    "--mu-min",
    "0.3",
    "--mu-max",
    "1.0",
    "--n-push",
    "2",
    "--push-min",
    "20",
    "--push-max",
    "80",
    "--seeds-per-cell",
    "2",
)


def nan_onnx(path):
    """A torch network exported to ONNX: small finite actions until the clock's sin falls below -0.9, then NaN."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(GO1.obs_dim, GO1.act_dim)
            torch.nn.init.constant_(self.lin.weight, 0.0)
            torch.nn.init.constant_(self.lin.bias, 0.01)

        def forward(self, x):
            return self.lin(x) + 0.0 * torch.sqrt(0.9 + x[:, SIN : SIN + 1])

    buf = io.BytesIO()
    torch.onnx.export(
        Net(),
        (torch.zeros(1, GO1.obs_dim),),
        buf,
        dynamo=False,
        input_names=["obs"],
        output_names=["action"],
        dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}},
    )
    path.write_bytes(buf.getvalue())
    return path


def overflowing_npz(path):
    """A linear policy whose products overflow: gravity's z (about -1) / 0.5 x 1e308 is -inf from the start;
    sin / 0.5 x 1e308 is +inf once sin > 0.9; their sum is NaN."""
    w = np.zeros((GO1.act_dim, GO1.obs_dim))
    w[0, 2] = 1e308
    w[0, SIN] = 1e308
    std = np.ones(GO1.obs_dim)
    std[[2, SIN]] = 0.5
    linear.save(path, linear.LinearPolicy(w, np.zeros(GO1.obs_dim), std))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("make, step", [(nan_onnx, 17), (overflowing_npz, 5)], ids=["onnx", "npz"])
def test_non_finite_action_is_diverged_never_failed(tmp_path, make, step):
    policy = make(tmp_path / f"broken{'.onnx' if make is nan_onnx else '.npz'}")
    store, out = tmp_path / "store", tmp_path / "sweep"
    r = cli("sweep", "--robot", "go1", "--checkpoint", policy, *GRID, "--store", store, "--out", out)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["counts"] == {"survived": 0, "failed": 0, "diverged": 8, "missing": 0}
    assert summary["diverged_causes"] == {"action": 8, "state": 0}
    assert "diverged 8 (8 from a non-finite action)" in r.stdout
    with Store(store) as s:
        records = list(s.records("boundary"))
        assert len(records) == 8
        for rec in records:
            o = rec.outcome
            assert (o["status"], o["diverged_cause"], o["diverged_step"]) == ("diverged", "action", step)
            assert o["diverged_at"] == pytest.approx(step * GO1.control_dt)
            p = s.payload(rec.key)
            assert len(p["time"]) == step + 1 and len(p["ctrl"]) == step  # ends at the state the action was for
            assert np.isfinite(p["ctrl"]).all() and np.isfinite(p["qpos"]).all()
            assert not np.isfinite(p[BAD_ACTION]).all()

    name = policy.stem
    refused = cli("verify", "--robot", "go1", "--checkpoint", policy, "--store", store, "--out", tmp_path / "v")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "keep_diverged" in refused.stderr and "8 diverged" in refused.stderr
    assert not (tmp_path / "v").exists()
    refused = cli("reduce", "--store", store, "--checkpoint", name, "--out", tmp_path / "a")
    assert refused.returncode == 2 and "--keep-diverged" in refused.stderr and not (tmp_path / "a").exists()

    kept = cli(
        "verify",
        "--robot",
        "go1",
        "--checkpoint",
        policy,
        "--store",
        store,
        "--out",
        tmp_path / "v",
        "--sample",
        "4",
        "--keep-diverged",
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr
    eq = json.loads((tmp_path / "v" / "equivalence.json").read_text())
    assert eq["diverged"] == {"action": 8, "state": 0, "kept": True} and eq["passed"]
    kept = cli("reduce", "--store", store, "--checkpoint", name, "--out", tmp_path / "a", "--keep-diverged")
    assert kept.returncode == 0, kept.stderr
    reduction = json.loads((tmp_path / "a" / "reduce.json").read_text())
    assert reduction["totals"] == {"failed": 0, "censored": 0, "diverged": 8}
    assert reduction["diverged_causes"] == {"action": 8, "state": 0}
    assert reduction["rule_check"]["agree"] == 8  # the rule, re-applied to each payload, finds the action too
    assert "8 diverged (8 from a non-finite action)" in kept.stdout


def test_a_stored_payload_names_its_invalid_action():
    """`bad_action_step` reads the step from a record made under this rule (`bad_action`) and from one made
    before it (the non-finite ctrl it stored), so reduce's rule check flags an old "failed" record of a NaN
    action; a fall before the invalid action stays a fall (the earliest event wins)."""
    from policylab.studies.boundary.protocol import bad_action_step, classify

    rob = robot("go1")
    n = 6
    qpos = np.tile(rob.reset_state(1_000_000)[0], (n, 1))
    qvel = np.zeros((n, rob.nv))
    time = np.arange(n) * rob.control_dt
    ctrl = np.zeros((n - 1, rob.nu))
    assert bad_action_step({"time": time, "ctrl": ctrl}) is None
    assert bad_action_step({"time": time, "ctrl": ctrl, BAD_ACTION: np.full((1, rob.act_dim), np.nan)}) == n - 1
    ctrl[3, 0] = np.nan  # a record made before: MuJoCo zeroed the ctrl and stepped on
    assert bad_action_step({"time": time, "ctrl": ctrl}) == 3
    o = classify(rob, qpos, qvel, time, bad_action_step=3)
    assert (o["status"], o["diverged_cause"], o["diverged_step"], o["t_fail"]) == ("diverged", "action", 3, None)
    fallen = qpos.copy()
    fallen[2:, rob.root_qpos + 2] = 0.05  # torso below the fail height from state 2 on
    o = classify(rob, fallen, qvel, time, bad_action_step=3)
    assert (o["status"], o["t_fail"]) == ("failed", round(2 * rob.control_dt, 6)) and "diverged_cause" not in o
