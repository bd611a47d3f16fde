"""Worlds simulated into (outcome, payload) pairs: the sweep's unit of work, and the re-simulation the
equivalence checks compare with the records. Chunk size, order and threads change no bit of any world."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policylab.envs.robots.batch import Perturbations, play
from policylab.envs.robots.robot import Robot
from policylab.rollout.ensure import Planned
from policylab.studies.boundary.axes import CATALOGUE
from policylab.studies.boundary.checkpoint import Checkpoint, robot_policy
from policylab.studies.boundary.protocol import BAD_ACTION, classify, n_steps, push_steps
from policylab.studies.boundary.world import World


def simulate_worlds(checkpoint_path: str, worlds: list[World], rob: Robot, nthread: int = 1) -> list[tuple[dict, dict]]:
    """(outcome, payload) for each world, simulated as one batch. Pure in its inputs."""
    policy = robot_policy(checkpoint_path, rob)
    traj = play(
        rob,
        policy.act,
        perturbations(worlds, rob),
        [w.seed for w in worlds],
        n_steps=n_steps(rob),
        n_push=push_steps(rob),
        nthread=nthread,
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


def perturbations(worlds: list[World], rob: Robot) -> Perturbations:
    """The batch's record of how `worlds` differ from the robot's nominal world: each axis of the catalogue
    (`axes.py`), in order, writes the values of the worlds that set it (`Axis.apply`); an axis no world
    sets leaves its part nominal, so a friction x push chunk changes nothing of the model."""
    rec = Perturbations(rob, len(worlds))
    held = [w.axes() for w in worlds]
    for a in CATALOGUE:
        rows = [i for i, values in enumerate(held) if a.field in values]
        if rows:
            a.apply(rec, np.array(rows), np.array([held[i][a.field] for i in rows], dtype=float))
    return rec


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
                    "worlds": [p.detail.world.as_dict() for p in u],
                    "nthread": self.nthread,
                    "robot": self.ckpt.robot,
                },
            )
            for u in units
        ]
