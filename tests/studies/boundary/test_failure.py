"""The failure rule on constructed trajectories: censoring, first crossing, divergence first."""

import numpy as np

from policylab.studies.boundary import failure

DT = 0.05


def _upright(n=101, z=0.6):
    qpos = np.zeros((n, 15))
    qpos[:, 2] = z
    qpos[:, 3] = 1.0  # identity quaternion
    return qpos, np.zeros((n, 14)), np.arange(n) * DT


def test_survivor_is_censored():
    out = failure.classify(*_upright(), DT)
    assert out["status"] == "survived" and out["t_fail"] is None and out["diverged_at"] is None
    assert out["min_uprightness"] == 1.0 and out["min_torso_z"] == 0.6


def test_first_crossing_sets_t_fail():
    qpos, qvel, t = _upright()
    qpos[30:, 2] = failure.TORSO_Z_FAIL_M - 0.01
    angle = np.pi * 0.75  # 135 deg about x: uprightness cos(135 deg) < threshold
    qpos[20:, 3], qpos[20:, 4] = np.cos(angle / 2), np.sin(angle / 2)
    out = failure.classify(qpos, qvel, t, DT)
    assert out["status"] == "failed" and out["t_fail"] == 1.0 and out["fail_reason"] == "uprightness"


def test_divergence_wins_when_earlier():
    qpos, qvel, t = _upright()
    qvel[10, 3] = np.nan
    qpos[50:, 2] = 0.0
    out = failure.classify(qpos, qvel, t, DT)
    assert out["status"] == "diverged" and out["diverged_at"] == 0.5 and out["t_fail"] is None


def test_clock_rewind_is_divergence():
    qpos, qvel, t = _upright()
    t[40:] = np.arange(61) * DT  # MuJoCo reset the simulation at step 40
    assert failure.classify(qpos, qvel, t, DT)["status"] == "diverged"
