"""The velocity kick (the `kick` axis's physics, `envs/robots/batch.py`): it changes the free joint's
horizontal velocity and nothing else, once, at the push start, in the push's direction; a world without
one runs bit for bit as before; the batch and the plain per-world loop agree on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from policylab.envs.robots.batch import RobotBatch, plain_loop, run_closed_loop
from policylab.envs.robots.robot import robot
from policylab.policies import linear


def test_kick_changes_only_the_free_joints_horizontal_velocity():
    rob = robot("go1")
    with RobotBatch(rob, [0.5, 0.5], [7, 7], nthread=1) as b:
        ctrl = rob.ctrl(np.zeros((2, rob.act_dim)))
        for _ in range(3):
            b.step(ctrl, np.zeros((2, 2)))
        qpos, qvel, t = b.qpos.copy(), b.qvel.copy(), b.time.copy()
        dv = np.array([[0.3, -1.25]])
        b.kick(dv, np.array([1]))
        assert np.array_equal(b.qpos, qpos) and np.array_equal(b.time, t)
        assert b.qvel[0].tobytes() == qvel[0].tobytes()  # its neighbour untouched
        expected = qvel[1].copy()
        expected[rob.root_dof : rob.root_dof + 2] += dv[0]
        assert b.qvel[1].tobytes() == expected.tobytes()
        assert rob.root_dof == 0 and np.array_equal(b.qvel[1, 2:], qvel[1, 2:])  # z, spin and joints unchanged


@pytest.fixture(scope="module")
def runs():
    """A walker-ish linear policy on the Go1 in four worlds of one seed: no kick (the argument left out),
    kicks of 0, 1.0 m/s to the left and 0.6 m/s straight ahead, with no push."""
    rob = robot("go1")
    rng = np.random.default_rng(3)
    policy = linear.LinearPolicy(
        0.02 * rng.standard_normal((rob.act_dim, rob.obs_dim)), np.zeros(rob.obs_dim), np.ones(rob.obs_dim)
    )
    k0, n = 20, 30
    kw = dict(n_steps=n, push_k0=np.full(3, k0), n_push=25, stop_at_failure=False)
    plain = run_closed_loop(rob, policy.act, [0.6] * 3, [11] * 3, dir_deg=np.zeros(3), **kw)
    kicked = run_closed_loop(
        rob,
        policy.act,
        [0.6] * 3,
        [11] * 3,
        dir_deg=np.array([0.0, 90.0, 0.0]),
        kick_mps=np.array([0.0, 1.0, 0.6]),
        **kw,
    )
    return rob, policy, k0, n, plain, kicked


def test_kick_acts_once_at_the_push_start_in_the_push_direction(runs):
    rob, _, k0, _, plain, kicked = runs
    for f in ("qpos", "qvel", "time", "ctrl", "action"):  # a kick of 0 is no kick at all
        assert kicked[f][0].tobytes() == plain[f][0].tobytes()
    assert not kicked["kick"][0].any() and not plain["kick"].any()
    for i, (mag, rel) in ((1, (1.0, 90.0)), (2, (0.6, 0.0))):
        # nothing changes up to the state the policy acts on at the push start, including that action
        assert kicked["qvel"][i, : k0 + 1].tobytes() == plain["qvel"][i, : k0 + 1].tobytes()
        assert kicked["ctrl"][i, : k0 + 1].tobytes() == plain["ctrl"][i, : k0 + 1].tobytes()
        heading = float(rob.heading(kicked["qpos"][i, k0]))
        ang = heading + math.radians(rel)
        assert kicked["kick"][i] == pytest.approx(mag * np.array([math.cos(ang), math.sin(ang)]), abs=1e-12)
        # the step after the kick: the trunk moves with the kick's velocity change, less what the
        # contacts took in 0.02 s
        gained = (kicked["qvel"][i, k0 + 1, :2] - plain["qvel"][i, k0 + 1, :2]) @ kicked["kick"][i] / mag
        assert 0.8 * mag < gained <= 1.0 * mag + 1e-9
    # no push: the kick is the only perturbation
    assert not kicked["push"].any()


def test_kick_in_the_batch_equals_the_plain_loop(runs):
    rob, policy, k0, n, _, kicked = runs
    for i, (mag, rel) in enumerate(((0.0, 0.0), (1.0, 90.0), (0.6, 0.0))):
        ref = plain_loop(
            rob, policy.act, 0.6, 11, n_steps=n, dir_deg=rel, push_k0=k0, n_push=25, kick_mps=mag, stop_at_failure=False
        )
        assert ref["qpos"].tobytes() == kicked["qpos"][i].tobytes()
        assert ref["qvel"].tobytes() == kicked["qvel"][i].tobytes()
