"""The learned network judged as every sweep plays it: the exported file, loaded by the one policy
loader, in nominal worlds (friction 1.0, no push) for 5 s on the boundary study's evaluation seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import Robot
from policylab.policies.files import load_policy
from policylab.rollout.seeds import named_range

NOMINAL_S = 5.0
NOMINAL_MU = 1.0


def nominal(policy_file: Path, rob: Robot, worlds: int, command_vx: float, nthread: int = 2) -> dict:
    """Survival and forward speed of `worlds` nominal worlds: a world survives when the frozen failure
    rule never marks it in 5 s; its speed is its trunk's displacement along its initial heading over
    the 5 s (survivors only). Within 20% of the command is the issue's bar for walking at it."""
    policy = load_policy(policy_file, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot")
    seeds = list(named_range("boundary", "evaluation").first(worlds))
    n_steps = int(round(NOMINAL_S / rob.control_dt))
    traj = run_closed_loop(rob, policy.act, [NOMINAL_MU] * worlds, seeds, n_steps=n_steps, nthread=nthread)
    survived = traj["n_states"] == n_steps + 1
    heading = rob.heading(traj["qpos"][:, 0])
    xy = traj["qpos"][:, :, rob.root_qpos: rob.root_qpos + 2]
    d = xy[:, -1] - xy[:, 0]
    speed = (d[:, 0] * np.cos(heading) + d[:, 1] * np.sin(heading)) / NOMINAL_S
    mean_speed = float(speed[survived].mean()) if survived.any() else None
    return {"worlds": worlds, "friction": NOMINAL_MU, "seconds": NOMINAL_S, "seed_range": "boundary.evaluation",
            "survived": int(survived.sum()), "survival": float(survived.mean()),
            "speed_mps": mean_speed, "command_mps": command_vx,
            "speed_within_20pct": None if mean_speed is None else bool(abs(mean_speed - command_vx) <= 0.2 * command_vx)}
