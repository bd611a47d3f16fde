"""Worlds simulated into (outcome, payload) pairs: the sweep's unit of work, and the re-simulation the
equivalence checks compare with the records.

Every world runs in the robot's batched simulator (`envs.robots.batch.run_closed_loop`) with the
study's push protocol; worlds never interact, so a chunk's size, order and thread count do not change
a single bit of any world.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policylab import portable_math
from policylab.envs.robots.batch import ModelChanges, run_closed_loop
from policylab.envs.robots.robot import Robot
from policylab.rollout.ensure import Planned
from policylab.studies.boundary.checkpoint import Checkpoint, robot_policy
from policylab.studies.boundary.protocol import BAD_ACTION, classify, n_steps, push_steps
from policylab.studies.boundary.world import World


def simulate_worlds(checkpoint_path: str, worlds: list[World], rob: Robot, nthread: int = 1) -> list[tuple[dict, dict]]:
    """(outcome, payload) for each world, simulated as one batch. Pure in its inputs."""
    policy = robot_policy(checkpoint_path, rob)
    dt = rob.control_dt
    k0 = np.array([int(round(w.push_t0 / dt)) for w in worlds])
    traj = run_closed_loop(
        rob,
        policy.act,
        [w.mu for w in worlds],
        [w.seed for w in worlds],
        n_steps=n_steps(rob),
        force_n=np.array([w.push_pct / 100.0 * rob.body_weight_n(w.payload_kg) for w in worlds]),
        dir_deg=np.array([w.push_dir for w in worlds]),
        push_k0=k0,
        n_push=push_steps(rob),
        nthread=nthread,
        **axis_changes(worlds, rob),
    )
    out = []
    for i in range(len(worlds)):
        n = int(traj["n_states"][i])
        qpos, qvel, t = traj["qpos"][i, :n], traj["qvel"][i, :n], traj["time"][i, :n]
        payload = {
            "qpos": qpos,
            "qvel": qvel,
            "time": t,
            "torso_z": rob.torso_z(qpos).copy(),
            "uprightness": rob.uprightness(qpos),
            "ctrl": traj["ctrl"][i, : n - 1],
            "push": traj["push"][i, : n - 1],
        }
        k_bad = int(traj["bad_action_step"][i])
        if k_bad >= 0:  # only then, so a valid rollout's payload (and its sha256) is what it always was
            payload[BAD_ACTION] = traj["action"][i, k_bad][None].copy()
        out.append((classify(rob, qpos, qvel, t, bad_action_step=k_bad if k_bad >= 0 else None), payload))
    return out


def axis_changes(worlds: list[World], rob: Robot) -> dict:
    """The later axes of the catalogue (`axes.py`) as `run_closed_loop`'s per-world model changes, action
    delays and velocity kicks; empty when no world sets one (a friction x push chunk). A slope turns
    gravity about the world y axis by fdlibm's sin and cos (`portable_math`), so its bytes do not depend on
    the CPU."""
    if not any(w.extra for w in worlds):
        return {}
    g = float(-rob.base.opt.gravity[2])
    gravity = None
    if any(w.slope_deg for w in worlds):
        gravity = np.tile(rob.base.opt.gravity, (len(worlds), 1))
        for i, w in enumerate(worlds):
            if w.slope_deg:
                a = w.slope_deg * (np.pi / 180.0)
                gravity[i] = (-g * portable_math.sin(a), 0.0, -g * portable_math.cos(a))
    return {
        "model": ModelChanges(
            payload_kg=[w.payload_kg for w in worlds], motor_scale=[w.motor_scale for w in worlds], gravity=gravity
        ),
        "action_delay": np.array([w.action_delay for w in worlds]),
        "kick_mps": np.array([w.kick_mps for w in worlds]),
    }


def run_chunk(work: dict) -> list[tuple[dict, dict]]:
    """Executor work: one chunk of worlds (module-level so processes and Ray can pickle it; the robot
    travels as its reference and is rebuilt from the same spec file)."""
    worlds = [World(**w) for w in work["worlds"]]
    return simulate_worlds(work["checkpoint_path"], worlds, work["robot"], work["nthread"])


@dataclass(frozen=True)
class SweepRunner:
    """The boundary study's batch runner: chunks of `chunk` worlds, each simulated as one batch on
    `nthread` threads."""

    ckpt: Checkpoint
    chunk: int
    nthread: int
    run = staticmethod(run_chunk)

    def pack(self, todo: list[Planned]) -> list[tuple[list[Planned], dict]]:
        units = [todo[i : i + self.chunk] for i in range(0, len(todo), self.chunk)]
        return [
            (
                u,
                {
                    "checkpoint_path": str(self.ckpt.path),
                    "worlds": [vars(p.detail.world) for p in u],
                    "nthread": self.nthread,
                    "robot": self.ckpt.robot,
                },
            )
            for u in units
        ]
