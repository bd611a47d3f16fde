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


def test_forward_speed_is_the_mean_x_velocity_over_the_record():
    """docs/boundary.md's definition: x displacement over the record's duration (5 s for a full record, the
    failure's time for one that stops there), null for a diverged rollout."""
    qpos, qvel, t = _upright()
    qpos[:, 0] = 0.4 * t  # walks at 0.4 m/s for the whole 5 s
    assert failure.classify(qpos, qvel, t, DT)["forward_speed_mps"] == 0.4
    k = 20  # a record that stops at its failure (stop_at_failure): 1 s, walked 0.4 m
    qpos[k, 2] = failure.TORSO_Z_FAIL_M - 0.01
    out = failure.classify(qpos[: k + 1], qvel[: k + 1], t[: k + 1], DT)
    assert out["status"] == "failed" and out["forward_speed_mps"] == 0.4


def test_a_diverged_rollout_has_no_forward_speed():
    """A rollout ended by a non-finite action has only finite states, and is diverged all the same: no speed
    (it had one before, against the docs)."""
    qpos, qvel, t = _upright(n=31)
    qpos[:, 0] = 0.4 * t
    out = failure.classify(qpos, qvel, t, DT, bad_action_step=30)
    assert out["status"] == "diverged" and out["diverged_cause"] == "action"
    assert out["forward_speed_mps"] is None
