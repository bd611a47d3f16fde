"""The committed Go1 checkpoints walk and survive nominal worlds; the training recipe resumes after a kill
to the bytes an uninterrupted run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import robot
from policylab.policies import linear
from policylab.studies.boundary import checkpoint, protocol
from policylab.studies.boundary.robot_policies import TrainConfig, train_configs

NOMINAL_SEEDS = list(range(2_000_000, 2_000_040))  # 40 seeds outside every sweep's and training's seed range


@pytest.mark.parametrize("name, min_survival, min_speed", [("go1_v0", 0.95, 0.5), ("go1_v1", 0.90, 0.1)])
def test_go1_nominal_survival_and_speed(name, min_survival, min_speed):
    ckpt = checkpoint.resolve_checkpoint(name)
    assert ckpt.robot.ref == "go1"
    rob = robot("go1")
    policy = linear.load(ckpt.path, rob.obs_dim, rob.act_dim)
    traj = run_closed_loop(rob, policy.act, [1.0] * len(NOMINAL_SEEDS), NOMINAL_SEEDS, n_steps=protocol.n_steps(rob))
    survived = traj["n_states"] == protocol.n_steps(rob) + 1
    assert survived.mean() >= min_survival
    x = traj["qpos"][survived, :, 0]
    speed = (x[:, -1] - x[:, 0]) / 5.0
    assert speed.mean() > min_speed
    early, late = (x[:, 150] - x[:, 50]) / 2.0, (x[:, 250] - x[:, 150]) / 2.0  # seconds 1-3 vs 3-5
    assert abs(late.mean() - early.mean()) < 0.25 * early.mean()


def test_committed_training_records_match_their_checkpoints():
    for name in ("go1_v0", "go1_v1"):
        ckpt = checkpoint.resolve_checkpoint(name)
        info = json.loads(ckpt.path.with_suffix(".json").read_text())
        assert info["checkpoint_sha256"] == ckpt.sha256
        assert TrainConfig(**info["config"]) == train_configs("go1")[name]
        assert info["curve"][-1]["iteration"] == train_configs("go1")[name].iterations
    a, b = train_configs("go1")["go1_v0"], train_configs("go1")["go1_v1"]
    changed = {k for k in type(a).model_fields if getattr(a, k) != getattr(b, k)} - {"name", "seed"}
    assert changed == {"push_pct_max"}  # the one deliberate change of the retrain


TINY = dict(
    iterations=4, directions=2, top=1, horizon_steps=20, eval_every=2, eval_seeds=2, save_every=1, prior_worlds=2
)
RUN = (
    "import sys, pathlib; from policylab.studies.boundary import ars, robot_policies; "
    f"cfg = robot_policies.train_configs('go1')['go1_v0'].model_copy(update={{**{TINY!r}, 'name': 'tiny'}}); "
    "ars.train_and_save(cfg, pathlib.Path(sys.argv[1]), nthread=1)"
)


def test_training_resumes_after_a_kill_to_the_same_bytes(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run([sys.executable, "-c", RUN, str(whole)], check=True, capture_output=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    state = killed / "tiny.train-state.json"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if state.is_file() and json.loads(state.read_text())["iteration"] >= 1:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "tiny.npz").exists()  # really interrupted before the end
    at = json.loads(state.read_text())["iteration"]
    assert 1 <= at < 4
    subprocess.run([sys.executable, "-c", RUN, str(killed)], check=True, capture_output=True)
    assert (killed / "tiny.npz").read_bytes() == (whole / "tiny.npz").read_bytes()
    assert (killed / "tiny.json").read_bytes() == (whole / "tiny.json").read_bytes()
