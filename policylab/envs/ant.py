"""Gymnasium's MuJoCo Ant (v5) as a batch of independent CPU MuJoCo worlds.

Why not `gymnasium.make("Ant-v5")` in the hot loop: one Python env per world is the slow baseline
(see benchmarks/bench_boundary_sweep.py). `AntBatch` steps many worlds with the *same* arithmetic
as `Ant-v5.step` (``mj_step(model, data, nstep=5)`` on a persistent `MjData`, so the solver
warm-start carries over exactly as in Gymnasium) and spreads the worlds over threads; MuJoCo
releases the GIL inside `mj_step`. Each world only ever touches its own `MjData`, so results are
bit-identical for any batch size, batch order and thread count (tested).

Why not `mujoco.rollout` per control step: it restarts every call from `mjSTATE_FULLPHYSICS`,
which has no `qacc_warmstart`, so a closed loop chunked that way drifts from a continuous
simulation (measured 4.6e-3 in qpos after 100 control steps) and would not match Gymnasium.

Model facts (mujoco 4.0.0, gymnasium 1.4.0 `ant.xml`): nq 15, nv 14, nu 8, timestep 0.01 s, RK4,
frame_skip 5 -> control dt 0.05 s; mass 0.91088 kg; every robot geom and the floor have sliding
friction 1.0 and MuJoCo mixes a contact's friction with `max`, so a world's friction `mu` is set
on *all* geoms (patching only the floor would leave every contact at 1.0).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import mujoco
import numpy as np

FRAME_SKIP = 5
RESET_NOISE_SCALE = 0.1  # Ant-v5 default
OBS_DIM = 27  # qpos[2:] (13) + qvel (14): Ant-v5's default observation (no contact forces)
ACT_DIM = 8  # nu: one torque per hip and ankle joint
TORSO = "torso"


def xml_path() -> str:
    """The Ant model that ships inside the gymnasium package (nothing downloaded)."""
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "ant.xml")


@lru_cache(maxsize=None)
def model(mu: float | None = None) -> mujoco.MjModel:
    """The Ant model with sliding friction `mu` on every geom (None: the XML's 1.0). Cached; never mutate."""
    m = mujoco.MjModel.from_xml_path(xml_path())
    if mu is not None:
        m.geom_friction[:, 0] = mu
    return m


def torso_id() -> int:
    return mujoco.mj_name2id(model(), mujoco.mjtObj.mjOBJ_BODY, TORSO)


def body_weight_n() -> float:
    """m * g of the whole robot (torso subtree), the unit of push magnitudes (% bodyweight)."""
    m = model()
    return float(m.body_subtreemass[torso_id()] * -m.opt.gravity[2])


def control_dt() -> float:
    return float(model().opt.timestep * FRAME_SKIP)


def reset_state(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Initial (qpos, qvel) exactly as `Ant-v5.reset(seed=seed)` draws them.

    ``np.random.default_rng(seed)`` is Gymnasium's `np_random` for an int seed; the draw order
    (uniform qpos noise of scale 0.1, then 0.1 * standard-normal qvel) is Ant-v5's `reset_model`.
    This is the only thing a world's seed drives.
    """
    m = model()
    rng = np.random.default_rng(seed)
    qpos = m.qpos0 + rng.uniform(-RESET_NOISE_SCALE, RESET_NOISE_SCALE, size=m.nq)
    qvel = RESET_NOISE_SCALE * rng.standard_normal(m.nv)
    return qpos, qvel


def observe(qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """Ant-v5 observation for a batch: (B, nq), (B, nv) -> (B, 27)."""
    return np.concatenate([qpos[:, 2:], qvel], axis=1)


def uprightness(qpos: np.ndarray) -> np.ndarray:
    """z-component of the torso's up axis, 1 - 2(qx^2 + qy^2): 1 upright, 0 on its side, -1 on its back."""
    qx, qy = qpos[..., 4], qpos[..., 5]
    return 1.0 - 2.0 * (qx * qx + qy * qy)


def heading(qpos: np.ndarray) -> np.ndarray:
    """Yaw (rad) of the torso's forward (x) axis in the world frame."""
    w, x, y, z = (qpos[..., 3 + i] for i in range(4))
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class AntBatch:
    """B independent Ant worlds, each with its own friction and seeded initial state.

    `step(ctrl, push_xy)` advances every world by one control step (5 physics steps) with
    `ctrl` (B, 8) and a world-frame horizontal force `push_xy` (B, 2) on the torso's centre of
    mass (`xfrc_applied`), then returns nothing; read `qpos`, `qvel`, `time` afterwards.
    """

    def __init__(self, mus: list[float | None], seeds: list[int], nthread: int = 2):
        if len(mus) != len(seeds):
            raise ValueError("one friction per seed")
        self.models = [model(mu) for mu in mus]
        self.datas = [mujoco.MjData(m) for m in self.models]
        self.torso = torso_id()
        n = len(seeds)
        self.qpos = np.empty((n, self.models[0].nq)) if n else np.empty((0, 15))
        self.qvel = np.empty((n, self.models[0].nv)) if n else np.empty((0, 14))
        self.time = np.empty(n)
        for i, (d, seed) in enumerate(zip(self.datas, seeds)):
            d.qpos[:], d.qvel[:] = reset_state(seed)
            mujoco.mj_forward(self.models[i], d)  # as MujocoEnv.set_state does
            self._read(i)
        self._slices = [s for s in np.array_split(np.arange(n), max(1, min(nthread, n))) if len(s)]
        self._pool = ThreadPoolExecutor(len(self._slices)) if len(self._slices) > 1 else None

    def _read(self, i: int) -> None:
        d = self.datas[i]
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
        self.time[i] = d.time

    def _step_slice(self, idx: np.ndarray, ctrl: np.ndarray, push_xy: np.ndarray) -> None:
        t = self.torso
        for i in idx:
            m, d = self.models[i], self.datas[i]
            d.ctrl[:] = ctrl[i]
            d.xfrc_applied[t, 0] = push_xy[i, 0]
            d.xfrc_applied[t, 1] = push_xy[i, 1]
            mujoco.mj_step(m, d, nstep=FRAME_SKIP)
            self._read(i)

    def step(self, ctrl: np.ndarray, push_xy: np.ndarray) -> None:
        if self._pool is None:
            for idx in self._slices:
                self._step_slice(idx, ctrl, push_xy)
            return
        for fut in [self._pool.submit(self._step_slice, idx, ctrl, push_xy) for idx in self._slices]:
            fut.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> "AntBatch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
