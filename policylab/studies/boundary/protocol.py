"""How a robot's worlds are played and judged: the protocol every sweep record names, its step counts,
the frozen failure rule on a stored track, and the size of one rollout (for a sweep's memory and disk
estimate)."""

from __future__ import annotations

import numpy as np

from policylab.envs.robots.robot import Robot
from policylab.studies.boundary import failure
from policylab.studies.boundary.constants import HORIZON_S, PUSH_DURATION_S

RECORD_BYTES = 3072  # a record's row in index.sqlite with its index entries (measured ~2.6 kB)
STORED_FRACTION = 0.9  # what a payload's deflated arrays take of their bytes (measured 0.85: Go1 and Ant rollouts)
WORLD_SIM_BYTES = 512 * 1024  # resident memory of one world's MjData while it steps (measured ~470 kB)
WORKER_BYTES = 128 * 2**20  # a worker process with the study imported (measured ~80 MB)


def n_steps(rob: Robot) -> int:
    return int(round(HORIZON_S / rob.control_dt))


def push_steps(rob: Robot) -> int:
    return int(round(PUSH_DURATION_S / rob.control_dt))


def protocol(rob: Robot) -> dict:
    m = rob.base
    friction = (
        "sliding friction of every geom set to mu"
        if rob.spec.friction_geoms == "all"
        else f"sliding friction of geoms {', '.join(rob.spec.friction_geoms)} set to mu"
    )
    return {
        "horizon_s": HORIZON_S,
        "n_steps": n_steps(rob),
        "control_dt_s": rob.control_dt,
        "physics_dt_s": float(m.opt.timestep),
        "frame_skip": rob.frame_skip,
        "push_duration_s": PUSH_DURATION_S,
        "push": f"constant horizontal force on the {rob.spec.push_body} centre of mass (xfrc_applied), direction "
        "relative to the heading at onset, fixed in the world frame for the window",
        "friction": friction,
        "bodyweight_n": round(rob.body_weight_n(), 9),
        "policy_mode": "deterministic",
        "failure": rob.thresholds(),
        "stop_at_failure": rob.spec.stop_at_failure,
        "robot": rob.identity,
        "solver": {
            "iterations": int(m.opt.iterations),
            "ls_iterations": int(m.opt.ls_iterations),
            "integrator": int(m.opt.integrator),
            "cone": int(m.opt.cone),
            "impratio": float(m.opt.impratio),
        },
        "control": rob.spec.control.model_dump(exclude_none=True),
        # a command term's vector (absent without one, so the keys of robots without a command stand)
        **({"command": rob.spec.command} if rob.spec.command is not None else {}),
    }


def payload_bytes(rob: Robot) -> int:
    """Bytes of one rollout's payload arrays before compression (the record schema in `sweep.py`, at
    most): float64 qpos, qvel, time, torso_z and uprightness per state (T + 1), ctrl and push per step (T)."""
    t = n_steps(rob)
    return 8 * ((t + 1) * (rob.nq + rob.nv + 3) + t * (rob.nu + 2))


def stored_bytes(rob: Robot, push_t0: float) -> int:
    """Disk one rollout takes in the store: its deflated payload and its row. A rollout plays to the
    horizon unless the robot's spec stops it at its failure; then it is counted halfway between the
    push's start and the horizon, as if half the worlds fell when pushed (a grid spans survival to
    failure). Measured on the default grid of go1_v2 (8 x 8 x 2 worlds): 88% fell, mostly during the
    push, the mean payload was 0.52 of the horizon's, and this estimate 1.4x what the store took."""
    states = n_steps(rob) + 1
    counted = (states + push_t0 / rob.control_dt) / 2 if rob.spec.stop_at_failure else states
    return int(payload_bytes(rob) * counted / states * STORED_FRACTION) + RECORD_BYTES


BAD_ACTION = "bad_action"  # the payload array of a rollout ended by a non-finite action: that action, (1, act_dim)


def bad_action_step(payload: dict) -> int | None:
    """The control step whose action was not finite, read from a stored payload (None: none was).

    A record made since such an action ends the rollout holds it as `BAD_ACTION`, its last state being
    that step's; a record made before stored the non-finite ctrl the action became (MuJoCo zeroed it
    and the world stepped on), so its first non-finite ctrl row names the step just the same."""
    if BAD_ACTION in payload:
        return len(payload["time"]) - 1
    ctrl = payload.get("ctrl")
    if ctrl is not None and len(ctrl):
        bad = ~np.isfinite(ctrl).all(axis=1)
        if bad.any():
            return int(np.argmax(bad))
    return None


def classify(
    rob: Robot, qpos: np.ndarray, qvel: np.ndarray, time: np.ndarray, bad_action_step: int | None = None
) -> dict:
    """The frozen failure rule of `rob` on one stored track."""
    return failure.classify(
        qpos,
        qvel,
        time,
        rob.control_dt,
        rule=rob.thresholds(),
        root_qpos=rob.root_qpos,
        bad_action_step=bad_action_step,
    )
