"""The learned network judged as every sweep plays it: the exported file, loaded by the one policy
loader, in nominal worlds (friction 1.0, no push) for 5 s on the boundary study's evaluation seeds:
survival and speed at its own command (`nominal`), and how it follows other commands (`tracking`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import Robot, commanded_robot
from policylab.policies.files import load_policy
from policylab.rollout.seeds import named_range

NOMINAL_S = 5.0
NOMINAL_MU = 1.0


def nominal(policy_file: Path, rob: Robot, worlds: int, command_vx: float, nthread: int = 2) -> dict:
    """Survival and forward speed of `worlds` nominal worlds: a world survives when the frozen failure
    rule never marks it in 5 s; its speed is its trunk's displacement along its initial heading over
    the 5 s (survivors only). Within 20% of the command is the issue's bar for walking at it."""
    traj, survived = _play(_load(policy_file, rob), rob, worlds, nthread)
    heading = rob.heading(traj["qpos"][:, 0])
    xy = traj["qpos"][:, :, rob.root_qpos : rob.root_qpos + 2]
    d = xy[:, -1] - xy[:, 0]
    speed = (d[:, 0] * np.cos(heading) + d[:, 1] * np.sin(heading)) / NOMINAL_S
    mean_speed = float(speed[survived].mean()) if survived.any() else None
    return {
        "worlds": worlds,
        "friction": NOMINAL_MU,
        "seconds": NOMINAL_S,
        "seed_range": "boundary.evaluation",
        "survived": int(survived.sum()),
        "survival": float(survived.mean()),
        "speed_mps": mean_speed,
        "command_mps": command_vx,
        "speed_within_20pct": None if mean_speed is None else bool(abs(mean_speed - command_vx) <= 0.2 * command_vx),
    }


# commands across the trainers' range (vx, vy m/s, yaw rate rad/s): forward slow and fast, backward,
# sideways and turning on the spot
TRACKING_COMMANDS = ((0.5, 0.0, 0.0), (1.0, 0.0, 0.0), (-0.5, 0.0, 0.0), (0.0, 0.5, 0.0), (0.0, 0.0, 1.0))
SETTLE_S = 1.0  # the start, from standing, is left out of the mean velocity


def body_velocity(rob: Robot, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(worlds, steps - 1) forward and lateral velocity in the trunk's heading frame (m/s) and yaw rate
    (rad/s) between consecutive control steps of `qpos` (worlds, steps, nq)."""
    heading = rob.heading(qpos)
    v = np.diff(qpos[:, :, rob.root_qpos : rob.root_qpos + 2], axis=1) / rob.control_dt
    c, s = np.cos(heading[:, :-1]), np.sin(heading[:, :-1])
    turn = (np.diff(heading, axis=1) + np.pi) % (2 * np.pi) - np.pi
    return c * v[..., 0] + s * v[..., 1], -s * v[..., 0] + c * v[..., 1], turn / rob.control_dt


def tracking(policy_file: Path, rob: Robot, worlds: int, commands=TRACKING_COMMANDS, nthread: int = 2) -> dict:
    """How the network follows each command in `commands` in nominal worlds: the mean body-frame velocity
    (forward, lateral, yaw rate) of the survivors over the 5 s after the first second, from the trunk's
    displacement and heading between control steps. A command is tracked when its largest component is
    met within 20% (the issue's bar) by the survivors' mean, and at least 99% of the worlds survive."""
    policy = _load(policy_file, rob)
    settle = int(round(SETTLE_S / rob.control_dt))
    out = []
    for command in commands:
        traj, survived = _play(policy, commanded_robot(rob, command), worlds, nthread)
        achieved = [
            float(x.mean()) if survived.any() else None for x in body_velocity(rob, traj["qpos"][survived, settle:])
        ]
        main = int(np.argmax(np.abs(command)))
        met = achieved[main] is not None and abs(achieved[main] - command[main]) <= 0.2 * abs(command[main])
        out.append(
            {
                "command": list(command),
                "survival": float(survived.mean()),
                "achieved": [None if a is None else round(a, 4) for a in achieved],
                "tracked": bool(met and survived.mean() >= 0.99),
            }
        )
    return {
        "worlds": worlds,
        "friction": NOMINAL_MU,
        "seconds": NOMINAL_S,
        "settle_s": SETTLE_S,
        "commands": out,
        "tracked": sum(c["tracked"] for c in out),
    }


def _load(policy_file: Path, rob: Robot):
    return load_policy(policy_file, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot")


def _play(policy, rob: Robot, worlds: int, nthread: int) -> tuple[dict, np.ndarray]:
    """`worlds` nominal worlds on the evaluation seeds for 5 s: the trajectories, and which survived (the
    frozen failure rule never marked them)."""
    seeds = list(named_range("boundary", "evaluation").first(worlds))
    n_steps = int(round(NOMINAL_S / rob.control_dt))
    traj = run_closed_loop(rob, policy.act, [NOMINAL_MU] * worlds, seeds, n_steps=n_steps, nthread=nthread)
    return traj, traj["n_states"] == n_steps + 1
