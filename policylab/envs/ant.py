"""Gymnasium's MuJoCo Ant (v5) as a batch of independent CPU MuJoCo worlds.

Why not `gymnasium.make("Ant-v5")` in the hot loop: one Python env per world is the slow baseline
(see benchmarks/bench_boundary_sweep.py). `AntBatch` steps many worlds with the *same* arithmetic
as `Ant-v5.step` (``mj_step(model, data, nstep=5)`` continuing each world's own state, solver
warm start included, exactly as Gymnasium's persistent `MjData` does) on MuJoCo's own threaded
`mujoco.batch.Batch`: one C call per control step for the whole batch, GIL released. A world's
result does not depend on the batch size, batch order or thread count, and equals a persistent
`MjData` per world bitwise, blow-up resets included (tested).

Why not `mujoco.rollout` per control step: it restarts every call from `mjSTATE_FULLPHYSICS`,
which has no `qacc_warmstart` (it takes an initial warm start but does not return the one it ends
with), so a closed loop chunked that way drifts from a continuous simulation (measured 4.6e-3 in
qpos after 100 control steps) and would not match Gymnasium. Open loop over a whole rollout, given
the initial warm start, it reproduces the sweep's records bitwise: benchmarks/bench_boundary_sweep.py
uses it that way as the speed reference.

Model facts (mujoco 4.0.0, gymnasium 1.4.0 `ant.xml`): nq 15, nv 14, nu 8, timestep 0.01 s, RK4,
frame_skip 5 -> control dt 0.05 s; mass 0.91088 kg; every robot geom and the floor have sliding
friction 1.0 and MuJoCo mixes a contact's friction with `max`, so a world's friction `mu` is set
on *all* geoms (patching only the floor would leave every contact at 1.0).
"""

from __future__ import annotations

import os
from functools import lru_cache

import mujoco
import mujoco.batch
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
    mass (`xfrc_applied`); `qpos` (B, nq), `qvel` (B, nv) and `time` (B,) are live read-only views
    of the worlds' state, current after every step (copy them to keep them).

    The worlds are a `mujoco.batch.Batch`: each world's integration state (time, qpos, qvel,
    ``qacc_warmstart``, ctrl, applied forces) is one row, and a step loads the row into one of the
    batch's per-thread `MjData`, calls ``mj_step`` 5 times and saves the row back, on `nthread`
    threads (the caller's included) with the GIL released. The row holds everything ``mj_step``
    reads, so this is bit-identical to ``mj_step(model, data, nstep=5)`` on a persistent `MjData`
    per world, i.e. to Gymnasium's loop, at any thread count (tested bitwise against that loop and
    against the store).
    """

    def __init__(self, mus: list[float | None], seeds: list[int], nthread: int = 2):
        if len(mus) != len(seeds):
            raise ValueError("one friction per seed")
        self.models = [model(mu) for mu in mus]
        self.torso = torso_id()
        n = len(seeds)
        base = model()
        self._batch = None
        if not n:
            self.qpos, self.qvel, self.time = np.empty((0, base.nq)), np.empty((0, base.nv)), np.empty(0)
            return
        b = mujoco.batch.Batch(base, n, max(1, min(nthread, n)))
        b.set_models(self.models if len(set(map(id, self.models))) > 1 else self.models[0])
        b.reset()  # the model defaults (time 0, no warm start, zero ctrl and forces), as a new MjData
        qpos, qvel = b.bind("qpos"), b.bind("qvel")
        for i, seed in enumerate(seeds):
            qpos[i], qvel[i] = reset_state(seed)
        b.forward()  # as MujocoEnv.set_state does (changes no state, so not the trajectory)
        self._batch = b
        self._ctrl = b.bind("ctrl")
        self._push = b.bind("xfrc_applied")[:, self.torso, :2]
        self.qpos, self.qvel, self.time = _read_only(qpos), _read_only(qvel), _read_only(b.bind("time"))

    def step(self, ctrl: np.ndarray, push_xy: np.ndarray) -> None:
        if self._batch is None:
            return
        self._ctrl[...] = ctrl
        self._push[...] = push_xy
        self._batch.step(nstep=FRAME_SKIP)

    def close(self) -> None:
        self._batch = None

    def __enter__(self) -> "AntBatch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view
