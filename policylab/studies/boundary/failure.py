"""The failure rule: frozen thresholds, decided once per rollout when it is recorded.

Fails below `TORSO_Z_FAIL_M` or `UPRIGHTNESS_FAIL`; survival is right-censored; diverged is a separate class
(docs/boundary.md, "The Ant's failure rule")."""

from __future__ import annotations

import numpy as np

TORSO_Z_FAIL_M = 0.30
UPRIGHTNESS_FAIL = 0.50  # tilt > 60 deg, the original's tilt threshold
RULE_VERSION = 1


def before_push(status: str, t_fail: float | None, push_t0: float) -> bool:
    """A failure at a state no push had acted on (the robot fell walking): the push force acts during the
    control step that starts at push_t0, so the first pushed state comes after it. Such a failure counts
    in survival like any other; reports count and label it apart."""
    return status == "failed" and t_fail is not None and t_fail <= push_t0 + 1e-9


def walking_warning(failed_before_push: int, rollouts: int, push_t0: float) -> str | None:
    """The line a sweep, and its report, give when most of its rollouts fell before the push started: no push
    had acted on them, so the robot does not walk in nominal conditions and the map measures that, not the
    pushes. More often a wrong spec (a valid but wrong joint_order, a keyframe, gains) or a policy trained on
    another robot than a policy that cannot walk; None when at most half fell so."""
    if not rollouts or 2 * failed_before_push <= rollouts:
        return None
    return (
        f"{failed_before_push} of {rollouts} rollouts fell before the push started ({push_t0:g} s): the policy "
        "does not walk on this robot without a push, so the map shows that, not the pushes; check the robot "
        "spec (joint_order, keyframe, gains) and that the policy was trained on this robot"
    )


def thresholds() -> dict:
    return {"torso_z_fail_m": TORSO_Z_FAIL_M, "uprightness_fail": UPRIGHTNESS_FAIL, "rule_version": RULE_VERSION}


def classify(
    qpos: np.ndarray,
    qvel: np.ndarray,
    time: np.ndarray,
    dt: float,
    rule: dict | None = None,
    root_qpos: int = 0,
    bad_action_step: int | None = None,
) -> dict:
    """Outcome of one rollout from its states (T+1 rows at control rate, row 0 the reset state).

    `rule` is a robot's frozen thresholds ({torso_z_fail_m, uprightness_fail, ...}; None: the Ant's,
    above) and `root_qpos` where the torso's free joint starts in qpos. A record that stopped at its
    failure (a robot spec with ``stop_at_failure``) has fewer rows; its last row is the failure.
    `bad_action_step` is the control step whose action was not finite (None: every action was); the
    record ends at that step's state. Only a diverged outcome carries ``diverged_cause`` and
    ``diverged_step``, so every other rollout's outcome has neither key.

    ``forward_speed_mps`` is the torso's mean x velocity over the record: its x displacement divided by the
    record's duration (the horizon, or the failure's time for a record that stops there, so a robot that
    walked briskly and fell is not reported as slow), null for a diverged rollout or one with a non-finite
    state.
    """
    z_fail = TORSO_Z_FAIL_M if rule is None else rule["torso_z_fail_m"]
    up_fail = UPRIGHTNESS_FAIL if rule is None else rule["uprightness_fail"]
    n = len(time)
    expected = np.arange(n) * dt
    finite = np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1) & np.isfinite(time)
    bad = ~finite | (np.abs(time - expected) > 1e-6)
    z = qpos[:, root_qpos + 2]
    qx, qy = qpos[:, root_qpos + 4], qpos[:, root_qpos + 5]
    up = 1.0 - 2.0 * (qx * qx + qy * qy)
    with np.errstate(invalid="ignore"):
        low = z < z_fail
        tilted = up < up_fail
    fell = low | tilted
    fell[0] = False  # the reset state is never a failure
    k_div = int(np.argmax(bad)) if bad.any() else None
    cause = "state"
    if bad_action_step is not None and (k_div is None or bad_action_step < k_div):
        k_div, cause = bad_action_step, "action"
    k_fail = int(np.argmax(fell)) if fell.any() else None
    ok = finite & ~bad
    outcome = {
        "min_uprightness": float(up[ok].min()),
        "min_torso_z": float(z[ok].min()),
        "forward_speed_mps": None,
        "t_fail": None,
        "fail_reason": None,
        "diverged_at": None,
    }
    if k_div is not None and (k_fail is None or k_div <= k_fail):
        outcome.update(status="diverged", diverged_at=round(k_div * dt, 6), diverged_cause=cause, diverged_step=k_div)
    elif k_fail is not None:
        reason = "torso_z" if low[k_fail] else "uprightness"
        if low[k_fail] and tilted[k_fail]:
            reason = "torso_z+uprightness"
        outcome.update(status="failed", t_fail=round(k_fail * dt, 6), fail_reason=reason)
    else:
        outcome.update(status="survived")
    if outcome["status"] != "diverged" and ok.all():
        outcome["forward_speed_mps"] = float((qpos[-1, root_qpos] - qpos[0, root_qpos]) / (dt * (n - 1)))
    return outcome
