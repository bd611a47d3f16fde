"""A robot (`robot.py`) as a batch of independent CPU MuJoCo worlds, and the closed loop.

A world is bit-identical alone, in any batch, at any position and thread count; `play` stops a world at a
non-finite action, before it is applied (docs/boundary.md, "Module notes")."""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import mujoco.batch
import numpy as np

from policylab import portable_math
from policylab.envs.robots.robot import Robot


class RobotBatch:
    """B independent worlds of `robot`, each with its own friction (None: the model's) and seed.

    `step(ctrl, push_xy, ids)` advances the worlds `ids` (None: all) by one control step with actuator
    `ctrl` and a world-frame horizontal force `push_xy` on the push body's centre of mass; `kick(dv_xy, ids)`
    changes the worlds' trunk velocity before their next step. `qpos`, `qvel` and `time` are live read-only
    (B, ...) views, current after every step.

    `model` sets other per-world model values (`Perturbations.model`); a world it leaves at the model's
    values runs on the model's own numbers, whatever its neighbours change, so it stays bit-identical.
    """

    def __init__(
        self,
        rob: Robot,
        mus: list[float | None],
        seeds: list[int],
        nthread: int = 2,
        model: dict[str, np.ndarray] | None = None,
    ):
        if len(mus) != len(seeds):
            raise ValueError("one friction per seed")
        self.robot = rob
        n = len(seeds)
        self._batch = None
        if not n:
            self.qpos, self.qvel, self.time = np.empty((0, rob.nq)), np.empty((0, rob.nv)), np.empty(0)
            self.derived = {}
            return
        b = mujoco.batch.Batch(rob.base, n, max(1, min(nthread, n)))
        if any(mu is not None for mu in mus):
            friction = b.expand("geom_friction")
            for i, mu in enumerate(mus):
                if mu is not None:
                    friction[i, rob.friction_geoms, 0] = mu
        if model:
            _set_model(b, rob, model)
        b.reset()  # the model defaults (time 0, no warm start, zero ctrl and forces), as a new MjData
        qpos, qvel = b.bind("qpos"), b.bind("qvel")
        for i, seed in enumerate(seeds):
            qpos[i], qvel[i] = rob.reset_state(seed)
        derived = {f: b.bind(f) for f in rob.data_fields}  # bound before forward, so they hold the reset state's
        b.forward()  # as MujocoEnv.set_state does (changes no state, so not the trajectory)
        self._batch = b
        self._ctrl = b.bind("ctrl")
        self._push = b.bind("xfrc_applied")[:, rob.push_body, :2]
        self._trunk_v = qvel[:, rob.root_dof : rob.root_dof + 2]  # the free joint's linear velocity, x and y
        self.qpos, self.qvel, self.time = _read_only(qpos), _read_only(qvel), _read_only(b.bind("time"))
        self.derived = derived

    def source(self, sel=slice(None)) -> dict[str, np.ndarray]:
        """What the observation reads of the worlds `sel`: state rows and the derived fields the spec needs."""
        return {
            "qpos": self.qpos[sel],
            "qvel": self.qvel[sel],
            "time": self.time[sel],
            **{f: a[sel] for f, a in self.derived.items()},
        }

    def step(self, ctrl: np.ndarray, push_xy: np.ndarray, ids: np.ndarray | None = None) -> None:
        if self._batch is None:
            return
        if ids is None:
            self._ctrl[...] = ctrl
            self._push[...] = push_xy
        else:
            self._ctrl[ids] = ctrl
            self._push[ids] = push_xy
        self._batch.step(ids=ids, nstep=self.robot.frame_skip)

    def kick(self, dv_xy: np.ndarray, ids: np.ndarray) -> None:
        """Add the world-frame horizontal velocity `dv_xy` (len(ids), 2) to the worlds `ids`' free joint (its
        linear velocity, in the world frame in MuJoCo): every body of the robot hangs from it, so the whole
        robot gains `dv_xy` at once and its joints and spin stay as they were. Nothing else changes."""
        if self._batch is not None:
            self._trunk_v[ids] += dv_xy

    def close(self) -> None:
        self._batch = None

    def __enter__(self) -> RobotBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Model fields that are inputs of MuJoCo's derived constants (mj_setConst): a world that changes one has them
# recomputed, so that it is the world a model compiled with those values would be.
CONST_INPUTS = frozenset({"body_mass", "body_inertia", "opt.gravity"})


class Perturbations:
    """How each world of a batch differs from the robot's nominal world: one record, a row per world, built
    once before the first step and read by `play` (the boundary study's axes each fill their part,
    `studies.boundary.axes`). Every field is at its nominal value until set:

    - `mu` (B,): sliding friction of the spec's friction geoms (NaN: the model's);
    - `push`, `push_unit_n` (B,): a horizontal push of ``push * push_unit_n`` newtons (a caller that gives
      newtons leaves the unit at 1; the study gives a fraction of the body weight and sets the unit to the
      world's weight), `dir_deg` (B,) its direction, counter-clockwise from the torso heading at onset, and
      `push_k0` (B,) the control step it starts at (-1: never);
    - `kick_mps` (B,): a velocity kick at `push_k0`, in the push's direction;
    - `action_delay` (B,): control steps between an action and its use;
    - `model`: per-world values of model fields ({name: (B, ...)}, `model_field`; ``opt.gravity`` for an
      option). A world whose rows equal the model's runs on the model's own numbers, whatever its
      neighbours change, so it stays bit-identical.
    """

    def __init__(self, rob: Robot, n: int):
        self.robot = rob
        self.mu = np.full(n, np.nan)
        self.push = np.zeros(n)
        self.push_unit_n = np.ones(n)
        self.dir_deg = np.zeros(n)
        self.push_k0 = np.full(n, -1)
        self.kick_mps = np.zeros(n)
        self.action_delay = np.zeros(n, dtype=int)
        self.model: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.mu)

    def model_field(self, name: str) -> np.ndarray:
        """The worlds' values of model field `name` (B, ...), the model's own until changed: write into it."""
        if name not in self.model:
            self.model[name] = np.repeat(_model_value(self.robot.base, name)[None], len(self), axis=0)
        return self.model[name]

    @property
    def mus(self) -> list[float | None]:
        """The frictions as `RobotBatch` takes them (None: the model's)."""
        return [None if np.isnan(m) else float(m) for m in self.mu]


def _model_value(model: mujoco.MjModel, name: str) -> np.ndarray:
    """A model field by its `mujoco.batch` name (``opt.gravity`` for an option)."""
    owner, _, field = name.rpartition(".")
    return np.asarray(getattr(model.opt if owner == "opt" else model, field))


def _set_model(b: mujoco.batch.Batch, rob: Robot, fields: dict[str, np.ndarray]) -> None:
    """Write the worlds' model values `fields` (`Perturbations.model`) into the batch: only the rows that
    differ from the model's, and MuJoCo's derived constants recomputed for the worlds whose `CONST_INPUTS`
    changed."""
    const = np.zeros(b.nsim, dtype=bool)
    for name, values in fields.items():
        changed = (values != _model_value(rob.base, name)).reshape(len(values), -1).any(axis=1)
        if changed.any():
            b.expand(name)[changed] = values[changed]
            if name in CONST_INPUTS:
                const |= changed
    if const.any():
        b.set_const(np.flatnonzero(const))


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def run_closed_loop(
    rob: Robot,
    policy: Callable[[np.ndarray], np.ndarray],
    mus: list[float | None],
    seeds: list[int],
    *,
    n_steps: int,
    force_n: np.ndarray | None = None,
    dir_deg: np.ndarray | None = None,
    push_k0: np.ndarray | None = None,
    n_push: int = 0,
    kick_mps: np.ndarray | None = None,
    nthread: int = 2,
    stop_at_failure: bool | None = None,
    policy_ids: bool = False,
) -> dict[str, np.ndarray]:
    """`play` in worlds of the robot's own model that differ by friction (`mus`, None: the model's), a
    push of ``force_n`` newtons in direction ``dir_deg`` from step ``push_k0`` and a kick of ``kick_mps``
    (each (B,) or None: none): the perturbation record these fill, for callers that need no other."""
    worlds = Perturbations(rob, len(seeds))
    worlds.mu[:] = [np.nan if mu is None else mu for mu in mus]
    for name, values in (("push", force_n), ("dir_deg", dir_deg), ("push_k0", push_k0), ("kick_mps", kick_mps)):
        if values is not None:
            getattr(worlds, name)[:] = values
    return play(
        rob,
        policy,
        worlds,
        seeds,
        n_steps=n_steps,
        n_push=n_push,
        nthread=nthread,
        stop_at_failure=stop_at_failure,
        policy_ids=policy_ids,
    )


def play(
    rob: Robot,
    policy: Callable[[np.ndarray], np.ndarray],
    worlds: Perturbations,
    seeds: list[int],
    *,
    n_steps: int,
    n_push: int = 0,
    nthread: int = 2,
    stop_at_failure: bool | None = None,
    policy_ids: bool = False,
) -> dict[str, np.ndarray]:
    """Play `policy` ((B, obs_dim) -> (B, act_dim) actions) for `n_steps` control steps in B worlds: each
    the robot perturbed as its row of `worlds` says, from the initial state its seed draws.

    Push protocol: during control steps ``k0 <= k < k0 + n_push`` a constant horizontal force of
    ``push * push_unit_n`` newtons acts on the push body's centre of mass (``xfrc_applied``), ``dir_deg``
    counter-clockwise from the torso heading captured at the first push step, then fixed in the world
    frame. A velocity kick of ``kick_mps`` m/s in the same direction is added to the free joint's linear
    velocity once, at the push's first step, after the policy has acted on that step's state and before
    its physics (`RobotBatch.kick`): the push of the common trainers' protocols, on its own or with a
    push. A world without one (0) is not touched.

    ``action_delay`` delays each world's actions by that many control steps: the action computed at step
    k is applied at step k + d, the zero action before the first arrives (``action`` records what the
    policy computed, ``ctrl`` what was applied).

    Returns arrays with the batch first: ``qpos`` (B, T+1, nq), ``qvel`` (B, T+1, nv), ``time``
    (B, T+1), ``ctrl`` (B, T, nu), ``action`` (B, T, act_dim) and ``push`` (B, T, 2) (the world-frame
    force applied during step k), index 0 the reset state, ``n_states`` (B,): how many states each
    world has (T+1, or fewer when it stopped at its failure or at a non-finite action; rows past that
    are NaN, or zero without ``stop_at_failure``), ``bad_action_step`` (B,): the control step whose
    action was not finite (its row in ``action`` holds it; the world's last state is that step's), -1
    where every action was finite, and ``kick`` (B, 2): the world-frame velocity change each world got
    (zero where none).
    """
    n = len(seeds)
    stop = rob.spec.stop_at_failure if stop_at_failure is None else stop_at_failure
    force_n = worlds.push * worlds.push_unit_n
    dir_rad = np.deg2rad(worlds.dir_deg)
    push_k0 = worlds.push_k0.astype(int)
    nq, nv, nu = rob.nq, rob.nv, rob.nu
    fill = np.nan if stop else 0.0
    qpos = np.full((n, n_steps + 1, nq), fill)
    qvel = np.full((n, n_steps + 1, nv), fill)
    time = np.full((n, n_steps + 1), fill)
    ctrl = np.full((n, n_steps, nu), fill)
    action = np.full((n, n_steps, rob.act_dim), fill)
    push = np.zeros((n, n_steps, 2))
    kick_mps = worlds.kick_mps
    kick = np.zeros((n, 2))
    n_states = np.full(n, n_steps + 1)
    bad_action = np.full(n, -1)
    delay = worlds.action_delay.astype(int)
    slots = int(delay.max()) + 1 if n else 1
    queue = np.zeros((n, slots, rob.act_dim)) if slots > 1 else None  # the actions still on their way
    with RobotBatch(rob, worlds.mus, seeds, nthread=nthread, model=worlds.model) as batch:
        if not n:
            return {
                "qpos": qpos,
                "qvel": qvel,
                "time": time,
                "ctrl": ctrl,
                "action": action,
                "push": push,
                "n_states": n_states,
                "bad_action_step": bad_action,
                "kick": kick,
            }
        qpos[:, 0], qvel[:, 0], time[:, 0] = batch.qpos, batch.qvel, batch.time
        observer = rob.observer(n)
        angle = np.zeros(n)
        pushed = push_k0 >= 0
        live = np.ones(n, dtype=bool)
        if stop:
            dead = rob.fallen(batch.qpos, batch.qvel)
            dead[:] = False  # the reset state is never a failure
        ids = None  # all worlds
        for k in range(n_steps):
            sel = slice(None) if ids is None else ids
            onset = push_k0 == k
            if onset.any():
                angle[onset] = rob.heading(batch.qpos[onset]) + dir_rad[onset]
            active = pushed & (k >= push_k0) & (k < push_k0 + n_push) & live
            if active.any():
                push[active, k, 0] = force_n[active] * portable_math.cos_array(angle[active])
                push[active, k, 1] = force_n[active] * portable_math.sin_array(angle[active])
            obs = observer.observe(batch.source(sel), sel)
            if policy_ids:
                a = np.asarray(policy(obs, np.arange(n) if ids is None else ids), dtype=float)
            else:
                a = np.asarray(policy(obs), dtype=float)
            observer.acted(a, sel)
            action[sel, k] = a
            invalid = ~np.isfinite(a).all(axis=1)
            if invalid.any():
                ended = (np.arange(n) if ids is None else ids)[invalid]
                bad_action[ended] = k
                n_states[ended] = k + 1
                live[ended] = False
                a = a[~invalid]
                ids = np.flatnonzero(live)
                sel = ids
                if not len(ids):
                    break
            if queue is not None:
                rows = np.arange(n) if ids is None else ids
                queue[rows, k % slots] = a
                due = k - delay[rows]
                a = np.where((due >= 0)[:, None], queue[rows, due % slots], 0.0)
            c = rob.ctrl(a)
            ctrl[sel, k] = c
            kicked = np.flatnonzero(onset & live & (kick_mps != 0))
            if len(kicked):
                kick[kicked, 0] = kick_mps[kicked] * portable_math.cos_array(angle[kicked])
                kick[kicked, 1] = kick_mps[kicked] * portable_math.sin_array(angle[kicked])
                batch.kick(kick[kicked], kicked)
            batch.step(c, push[sel, k], ids)
            qpos[sel, k + 1], qvel[sel, k + 1], time[sel, k + 1] = batch.qpos[sel], batch.qvel[sel], batch.time[sel]
            if stop:
                idx = np.arange(n) if ids is None else ids
                expected = (k + 1) * rob.control_dt
                gone = rob.fallen(batch.qpos[sel], batch.qvel[sel]) | (np.abs(batch.time[sel] - expected) > 1e-6)
                if gone.any():
                    ended = idx[gone]
                    n_states[ended] = k + 2
                    live[ended] = False
                    ids = np.flatnonzero(live)
                    if not len(ids):
                        break
    return {
        "qpos": qpos,
        "qvel": qvel,
        "time": time,
        "ctrl": ctrl,
        "action": action,
        "push": push,
        "n_states": n_states,
        "bad_action_step": bad_action,
        "kick": kick,
    }


def plain_loop(
    rob: Robot,
    policy: Callable[[np.ndarray], np.ndarray],
    mu: float | None,
    seed: int,
    *,
    n_steps: int,
    force_n: float = 0.0,
    dir_deg: float = 0.0,
    push_k0: int = -1,
    n_push: int = 0,
    kick_mps: float = 0.0,
    stop_at_failure: bool | None = None,
) -> dict[str, np.ndarray]:
    """One world in a plain per-world MuJoCo loop (one `MjData`, ``mj_step(nstep=frame_skip)`` per control
    step, the policy called on a batch of one) with `run_closed_loop`'s push and kick: the reference
    `RobotBatch` must reproduce bitwise.
    Returns qpos, qvel, time (n, ...) and ctrl (n - 1, nu), n the number of states."""
    stop = rob.spec.stop_at_failure if stop_at_failure is None else stop_at_failure
    m = rob.model(mu)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = rob.reset_state(seed)
    mujoco.mj_forward(m, d)
    qpos, qvel, time, ctrl = [d.qpos.copy()], [d.qvel.copy()], [d.time], []
    observer = rob.observer(1)
    angle = 0.0
    for k in range(n_steps):
        if k == push_k0:
            angle = float(rob.heading(d.qpos)) + np.deg2rad(dir_deg)
        on = push_k0 >= 0 and push_k0 <= k < push_k0 + n_push
        d.xfrc_applied[rob.push_body, 0] = force_n * portable_math.cos(angle) if on else 0.0
        d.xfrc_applied[rob.push_body, 1] = force_n * portable_math.sin(angle) if on else 0.0
        src = {
            "qpos": d.qpos[None],
            "qvel": d.qvel[None],
            "time": np.array([d.time]),
            **{f: getattr(d, f)[None] for f in rob.data_fields},
        }
        a = np.asarray(policy(observer.observe(src)), dtype=float)
        if not np.isfinite(a).all():
            break  # the world ends before a non-finite action, as in `run_closed_loop`
        observer.acted(a)
        c = rob.ctrl(a)[0]
        d.ctrl[:] = c
        if k == push_k0 and kick_mps:
            d.qvel[rob.root_dof : rob.root_dof + 2] += (
                kick_mps * portable_math.cos(angle),
                kick_mps * portable_math.sin(angle),
            )
        mujoco.mj_step(m, d, nstep=rob.frame_skip)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        time.append(d.time)
        ctrl.append(c.copy())
        if stop and (rob.fallen(d.qpos[None], d.qvel[None])[0] or abs(d.time - (k + 1) * rob.control_dt) > 1e-6):
            break
    return {"qpos": np.array(qpos), "qvel": np.array(qvel), "time": np.array(time), "ctrl": np.array(ctrl)}
