"""The committed Ant checkpoints walk, and the Ant's ARS recipe reproduces their committed learning curves.

ant_v0 (the study's policy) must survive >= 95% of nominal seeds (measured 255/256 on the
calibration seeds). ant_v1 (the push / low-friction fine-tune) is held to >= 90% (measured
242/256 = 94.5% on the calibration seeds; see README.md).
"""

import json

import numpy as np
import pytest

from policylab.envs.robots.batch import run_closed_loop
from policylab.policies import linear
from policylab.studies.boundary import ars, failure
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.robot_policies import train_configs

NOMINAL_SEEDS = list(range(2_000_000, 2_000_040))  # 40 seeds outside every sweep's seed range


@pytest.mark.parametrize("name, min_survival", [("ant_v0", 0.95), ("ant_v1", 0.90)])
def test_nominal_survival_and_speed(name, min_survival):
    ckpt = resolve_checkpoint(name)
    rob = ckpt.robot
    policy = linear.load(ckpt.path, rob.obs_dim, rob.act_dim)
    traj = run_closed_loop(rob, policy.act, [1.0] * len(NOMINAL_SEEDS), NOMINAL_SEEDS, n_steps=100)
    outcomes = [
        failure.classify(traj["qpos"][i], traj["qvel"][i], traj["time"][i], rob.control_dt)
        for i in range(len(NOMINAL_SEEDS))
    ]
    survived = sum(o["status"] == "survived" for o in outcomes)
    assert survived / len(outcomes) >= min_survival
    speeds = np.array([o["forward_speed_mps"] for o in outcomes])
    assert speeds.mean() > 0.5
    # steady: speed over seconds 1-3 and 3-5 agree within 25%
    x = traj["qpos"][:, :, 0]
    early, late = (x[:, 60] - x[:, 20]) / 2.0, (x[:, 100] - x[:, 60]) / 2.0
    assert abs(late.mean() - early.mean()) < 0.25 * early.mean()


@pytest.mark.parametrize("config", ["v0", "v1"])
def test_the_recipe_reproduces_the_committed_first_iteration(config, tmp_path):
    """The first ARS iteration of each Ant config (its search directions, training worlds with friction
    and pushes, Ant-v5 reward and termination; v1 from ant_v0's weights and frozen whitening) gives the
    returns the committed learning curve records: v0 (no pushes) to the last bit; v1 to 1e-9, since a
    push's direction goes through the project's own trigonometric kernels (`policylab.portable_math`), which
    need not round like the libm the curve was recorded with."""
    cfg = train_configs()[config].model_copy(update={"iterations": 1, "eval_every": 0})
    _, log = ars.train(cfg, tmp_path, nthread=2)
    committed = json.loads(resolve_checkpoint(cfg.name).path.with_suffix(".json").read_text())["curve"][0]
    got, want = (log[0]["return_mean"], log[0]["return_max"]), (committed["return_mean"], committed["return_max"])
    assert got == (want if config == "v0" else pytest.approx(want, rel=1e-9, abs=0))


def test_committed_ant_training_records_match_their_checkpoints():
    for config in ("v0", "v1"):
        cfg = train_configs()[config]
        ckpt = resolve_checkpoint(cfg.name)
        info = json.loads(ckpt.path.with_suffix(".json").read_text())
        assert info["checkpoint_sha256"] == ckpt.sha256
        assert {k: v for k, v in cfg.model_dump(mode="json").items() if k in info["config"]} == info["config"]
        assert info["curve"][-1]["iteration"] == cfg.iterations
