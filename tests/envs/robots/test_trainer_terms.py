"""Observation terms and actuation of policies trained elsewhere (`envs.robots.observation`, the go1_imu
spec), and the spec checks that refuse what cannot run as trained: one line naming the robot field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from policylab.envs.robots.batch import plain_loop, run_closed_loop
from policylab.envs.robots.robot import robot
from policylab.errors import BadInput
from tests.support.trainer_layout import spec_dict


def _spec(tmp_path, name="s", **changes):
    d = spec_dict(**changes)
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(d))
    return p


def test_site_terms_read_what_the_imu_sensors_read(tmp_path):
    """site_linvel / site_angvel at the imu site equal the velocimeter and gyro there, site_gravity the
    imu frame's view of gravity, on every recorded step of a pushed closed loop."""
    obs = [
        {"term": "sensor", "name": "local_linvel"},
        {"term": "site_linvel", "name": "imu"},
        {"term": "sensor", "name": "gyro"},
        {"term": "site_angvel", "name": "imu"},
        {"term": "site_gravity", "name": "imu"},
        {"term": "gravity_body"},
    ]
    rob = robot(_spec(tmp_path, observation=obs))
    seen = []
    run_closed_loop(
        rob,
        lambda o: (seen.append(o.copy()), np.zeros((len(o), 12)))[1],
        [None, 0.5],
        [1, 2],
        n_steps=60,
        force_n=np.array([40.0, 60.0]),
        push_k0=np.array([10, 20]),
        n_push=10,
    )
    o = np.concatenate(seen)
    np.testing.assert_allclose(o[:, 3:6], o[:, 0:3], atol=1e-9)
    np.testing.assert_allclose(o[:, 9:12], o[:, 6:9], atol=1e-12)
    # the imu frame is the trunk frame; MuJoCo's site frames (like its sensors) are those of the last physics
    # step's start, as a trainer reads them after mj_step, so they lag the state by one physics step
    np.testing.assert_array_equal(o[:2, 12:15], o[:2, 15:18])  # at reset (after mj_forward) they agree exactly
    lag = np.abs(o[:, 12:15] - o[:, 15:18]).max()
    assert 0 < lag < 0.01
    assert np.abs(o[:, 0:3]).max() > 0.05  # the robot moved


def test_last_action_command_scale_offset_clip_history_and_normalization(tmp_path):
    obs = [
        {"term": "last_action", "initial": [0.25] * 12},
        {"term": "command", "value": [0.5, 0.0, -1.0], "offset": [0.5, 0.0, 0.0], "scale": 2.0, "clip": 1.5},
    ]
    rob = robot(
        _spec(
            tmp_path,
            observation=obs,
            history={"length": 3, "newest_first": True},
            normalization={"mean": [0.0] * 45, "std": [2.0] * 45},
        )
    )
    assert (rob.frame_dim, rob.obs_dim) == (15, 45)
    seen = []
    acts = iter([np.full((1, 12), 0.1), np.full((1, 12), 0.2), np.full((1, 12), 0.3)])
    plain_loop(rob, lambda o: (seen.append(o[0].copy()), next(acts))[1], None, 1, n_steps=3)
    cmd = [0.0, 0.0, -1.5]  # 2 * ([0.5, 0, -1] - [0.5, 0, 0]) clipped to 1.5
    f = lambda a: np.array([a] * 12 + cmd) / 2.0  # noqa: E731
    np.testing.assert_array_equal(seen[0], np.concatenate([f(0.25)] * 3))  # the reset frame repeated
    np.testing.assert_array_equal(seen[1], np.concatenate([f(0.1), f(0.25), f(0.25)]))  # newest first
    np.testing.assert_array_equal(seen[2], np.concatenate([f(0.2), f(0.1), f(0.25)]))


def test_stateful_observation_is_the_same_bits_alone_and_in_a_batch(tmp_path):
    """Previous actions and histories are per world: a world in a batch (whose neighbours fall and stop)
    plays as it does alone in the plain loop."""
    rob = robot(_spec(tmp_path, history={"length": 2}))
    # newest frame's previous action and joint velocities, and the older frame's joint angles
    pol = lambda o: np.tanh(0.3 * o[:, 81:93] - 0.02 * o[:, 69:81] + 0.1 * o[:, 9:21])  # noqa: E731
    seeds = [5, 6, 7]
    batch = run_closed_loop(
        rob,
        pol,
        [1.0, 0.3, 1.0],
        seeds,
        n_steps=80,
        force_n=np.array([0.0, 400.0, 0.0]),
        push_k0=np.array([-1, 5, -1]),
        n_push=25,
    )
    assert batch["n_states"][1] < 81  # the pushed neighbour fell and stopped
    for i in (0, 2):
        alone = plain_loop(rob, pol, 1.0 if i != 1 else 0.3, seeds[i], n_steps=80)
        assert np.array_equal(alone["qpos"], batch["qpos"][i, : len(alone["qpos"])])


def test_position_control_drives_the_mjcf_actuators_around_home_in_the_policy_joint_order(tmp_path):
    rob = robot("go1_imu")
    a = np.linspace(-1, 1, 12)[None]
    np.testing.assert_array_equal(rob.ctrl(a), rob.nominal_joints + 0.5 * a)  # no clip: action_clip null
    assert rob.base.actuator_gainprm[0, 0] == 35.0  # the MJCF's own servos, untouched
    order = [
        "FR_hip_joint",
        "FR_thigh_joint",
        "FR_calf_joint",
        "FL_hip_joint",
        "FL_thigh_joint",
        "FL_calf_joint",
        "RR_hip_joint",
        "RR_thigh_joint",
        "RR_calf_joint",
        "RL_hip_joint",
        "RL_thigh_joint",
        "RL_calf_joint",
    ]
    swapped = robot(_spec(tmp_path, joint_order=order, observation=[{"term": "joint_pos_rel"}]))
    c = swapped.ctrl(a)[0]
    np.testing.assert_array_equal(c[[3, 4, 5, 0, 1, 2]], swapped.nominal_joints[[3, 4, 5, 0, 1, 2]] + 0.5 * a[0, :6])
    q = swapped.nominal_qpos.copy()
    q[7] += 0.3  # FL hip: the policy's fourth joint
    o = swapped.observer(1).observe({"qpos": q[None], "qvel": np.zeros((1, swapped.nv)), "time": np.zeros(1)})
    assert o[0, 3] == pytest.approx(0.3) and np.count_nonzero(o) == 1


def test_go1_imu_stands_under_the_zero_policy():
    rob = robot("go1_imu")
    t = run_closed_loop(rob, lambda o: np.zeros((len(o), 12)), [None] * 4, [1, 2, 3, 4], n_steps=250)
    assert (t["n_states"] == 251).all()
    assert rob.obs_dim == 48 and rob.data_fields == ["sensordata", "site_xmat"]


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"failure": {"torso_z_fail_m": 0.3, "uprightness_fail": 0.5, "rule_version": 1}},
            "failure.torso_z_fail_m 0.3 m is not below the home pose's torso height 0.278 m",
        ),
        (
            {"observation": [{"term": "sensor", "name": "imu_velocimeter"}]},
            "the model has no sensor named 'imu_velocimeter'",
        ),
        ({"observation": [{"term": "site_gravity", "name": "base_imu"}]}, "the model has no site named 'base_imu'"),
        ({"observation": [{"term": "sensor"}]}, "observation.0: Value error, sensor needs name"),
        ({"observation": [{"term": "last_action", "initial": [0.0] * 3}]}, "last_action.initial has 3 values"),
        (
            {"observation": [{"term": "command", "value": [1.0, 0.0], "offset": [1.0, 2.0, 3.0]}]},
            "observation command has 2 values; its offset has 3",
        ),
        (
            {"normalization": {"mean": [0.0] * 47, "std": [1.0] * 47}},
            "normalization has 47 values; the observation has 48",
        ),
        ({"joint_order": ["FL_hip_joint"]}, "joint_order must name each of the 12 actuated joints once"),
        ({"joint_order": ["knee"] * 12}, "joint_order names no actuated joint 'knee'"),
        ({"mjcf": "../go1/scene.xml"}, "MJCF"),
    ],
)
def test_spec_checks_are_one_line_naming_the_robot_field(tmp_path, changes, message):
    with pytest.raises(BadInput) as e:
        robot(_spec(tmp_path, **changes))
    assert e.value.field == "robot" and message in e.value.message and "\n" not in e.value.message


def test_position_mode_refuses_motors(tmp_path):
    """The shipped go1.xml has motors: position control would drive them as torques, so it is refused."""
    with pytest.raises(BadInput) as e:
        robot(_spec(tmp_path, mjcf=str(robot("go1").mjcf), observation=[{"term": "joint_pos_rel"}]))
    assert "actuator 'FL_hip' is not one" in e.value.message
