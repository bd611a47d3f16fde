"""Closed-loop batched Ant rollouts with a timed horizontal push: the one simulator of the study.

Training, the sweep and the equivalence gate all call `run_closed_loop`, so "the world a record
describes" and "the world the policy was trained in" are simulated by the same code.

Push protocol: during control steps ``k0 <= k < k0 + n_push`` a constant horizontal force of
``force_n`` newtons acts on the torso's centre of mass (``xfrc_applied``). Its direction is
``dir_deg`` counter-clockwise from the torso heading captured at the first push step (90 = to
the robot's left), then fixed in the world frame for the whole window. With control dt 0.05 s the
sweep's window [2.0 s, 2.5 s) is steps 40..49.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from policylab.envs import ant


def run_closed_loop(
    policy: Callable[[np.ndarray], np.ndarray],
    mus: list[float | None],
    seeds: list[int],
    *,
    n_steps: int,
    force_n: np.ndarray | None = None,
    dir_deg: np.ndarray | None = None,
    push_k0: np.ndarray | None = None,
    n_push: int = 0,
    nthread: int = 2,
) -> dict[str, np.ndarray]:
    """Play `policy` in B worlds for `n_steps` control steps.

    Returns arrays with the batch first: ``qpos`` (B, T+1, nq), ``qvel`` (B, T+1, nv),
    ``time`` (B, T+1), ``ctrl`` (B, T, nu) and ``push`` (B, T, 2) (the world-frame force applied
    during step k). Index 0 is the reset state.
    """
    n = len(seeds)
    force_n = np.zeros(n) if force_n is None else np.asarray(force_n, dtype=float)
    dir_rad = np.deg2rad(np.zeros(n) if dir_deg is None else np.asarray(dir_deg, dtype=float))
    push_k0 = np.full(n, -1) if push_k0 is None else np.asarray(push_k0, dtype=int)
    with ant.AntBatch(mus, seeds, nthread=nthread) as batch:
        nq, nv, nu = batch.qpos.shape[1], batch.qvel.shape[1], batch.models[0].nu if n else 8
        qpos = np.empty((n, n_steps + 1, nq))
        qvel = np.empty((n, n_steps + 1, nv))
        time = np.empty((n, n_steps + 1))
        ctrl = np.empty((n, n_steps, nu))
        push = np.zeros((n, n_steps, 2))
        qpos[:, 0], qvel[:, 0], time[:, 0] = batch.qpos, batch.qvel, batch.time
        angle = np.zeros(n)
        pushed = push_k0 >= 0
        for k in range(n_steps):
            onset = push_k0 == k
            if onset.any():
                angle[onset] = ant.heading(batch.qpos[onset]) + dir_rad[onset]
            active = pushed & (k >= push_k0) & (k < push_k0 + n_push)
            if active.any():
                push[active, k, 0] = force_n[active] * np.cos(angle[active])
                push[active, k, 1] = force_n[active] * np.sin(angle[active])
            ctrl[:, k] = policy(ant.observe(batch.qpos, batch.qvel))  # a new array: a policy may keep it
            batch.step(ctrl[:, k], push[:, k])
            qpos[:, k + 1], qvel[:, k + 1], time[:, k + 1] = batch.qpos, batch.qvel, batch.time
    return {"qpos": qpos, "qvel": qvel, "time": time, "ctrl": ctrl, "push": push}
