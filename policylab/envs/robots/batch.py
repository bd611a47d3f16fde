"""A robot from its spec (`spec.py`) as a batch of independent CPU MuJoCo worlds, and the closed loop.

`Robot` compiles the spec's MJCF with the spec's physics overrides, checks every name the spec uses
against the model, and knows the robot's observation, action mapping, reset draw, torso pose and
failure rule. `RobotBatch` steps B worlds (each with its own friction and seeded initial state) on a
`mujoco.batch.Batch`: every world's integration state (time, qpos, qvel, ``qacc_warmstart``, ctrl,
applied forces) is one row, a step runs ``mj_step`` `frame_skip` times per world on `nthread` threads
with the GIL released, so a world is bit-identical alone, in any batch, at any position and thread
count, and equal to ``mj_step(model, data, nstep=frame_skip)`` on a persistent `MjData` per world
(Gymnasium's loop, for the Ant). Per-world friction is an expanded (per-simulation) `geom_friction`.

`run_closed_loop` plays a policy in such a batch with the study's push protocol. With the spec's
``stop_at_failure`` a world stops stepping at the first state the frozen failure rule marks (fell or
diverged) and its record ends there; the others are unaffected (worlds never interact).
"""

from __future__ import annotations

import hashlib
import os
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable

import mujoco
import mujoco.batch
import numpy as np

from policylab.errors import BadInput
from policylab.envs.robots.spec import FIELD, RobotSpec, load_spec, mjcf_path, spec_path

_INTEGRATORS = {"euler": mujoco.mjtIntegrator.mjINT_EULER, "rk4": mujoco.mjtIntegrator.mjINT_RK4,
                "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}
_CONES = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}


def _id(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str, what: str, spec_file: Path) -> int:
    i = mujoco.mj_name2id(m, kind, name)
    if i < 0:
        raise BadInput(FIELD, f"robot spec {spec_file}: the model has no {what} named {name!r}")
    return i


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Robot:
    """A robot spec compiled against its model. Build with `robot(name_or_path)` (cached)."""

    def __init__(self, spec: RobotSpec, spec_file: Path):
        self.spec, self.spec_file = spec, Path(spec_file)
        self.mjcf = mjcf_path(spec, spec_file)
        if not self.mjcf.is_file():
            raise BadInput(FIELD, f"robot spec {spec_file}: MJCF {self.mjcf} not found")
        try:
            base = mujoco.MjModel.from_xml_path(str(self.mjcf))
        except ValueError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BadInput(FIELD, f"robot spec {spec_file}: MJCF {self.mjcf} does not compile ({first})") from None
        f = spec_file
        self.torso = _id(base, mujoco.mjtObj.mjOBJ_BODY, spec.torso_body, "body", f)
        self.push_body = _id(base, mujoco.mjtObj.mjOBJ_BODY, spec.push_body, "body", f)
        jnt = base.body_jntadr[self.torso]
        if jnt < 0 or base.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
            raise BadInput(FIELD, f"robot spec {f}: torso body {spec.torso_body!r} needs a free joint")
        self.root_qpos = int(base.jnt_qposadr[jnt])
        self.root_dof = int(base.jnt_dofadr[jnt])
        if spec.friction_geoms == "all":
            self.friction_geoms = np.arange(base.ngeom)
        else:
            self.friction_geoms = np.array([_id(base, mujoco.mjtObj.mjOBJ_GEOM, g, "geom", f)
                                            for g in spec.friction_geoms])
        if base.nu < 1:
            raise BadInput(FIELD, f"robot spec {f}: the model has no actuators")
        self.key = None if spec.keyframe is None else _id(base, mujoco.mjtObj.mjOBJ_KEY, spec.keyframe, "keyframe", f)
        # actuated joints (one per actuator, in actuator order)
        if not (base.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT).all():
            raise BadInput(FIELD, f"robot spec {f}: every actuator must drive a joint")
        jids = base.actuator_trnid[:, 0]
        self.joint_qpos = base.jnt_qposadr[jids].astype(int)
        self.joint_dof = base.jnt_dofadr[jids].astype(int)
        c = spec.control
        if c.force_limits is not None and len(c.force_limits) != base.nu:
            raise BadInput(FIELD, f"robot spec {f}: control.force_limits has {len(c.force_limits)} values; the "
                           f"model has {base.nu} actuators")
        self._apply_overrides(base)
        self.base = base
        self.nominal_qpos = (base.key_qpos[self.key] if self.key is not None else base.qpos0).copy()
        self.nominal_joints = self.nominal_qpos[self.joint_qpos].copy()
        self.nq, self.nv, self.nu = base.nq, base.nv, base.nu
        self.obs_dim = sum(self._term_width(t) for t in spec.observation)
        self.act_dim = base.nu

    # -- the model ------------------------------------------------------------------------------
    def _apply_overrides(self, m: mujoco.MjModel) -> None:
        s, o, f = self.spec, self.spec.model, self.spec_file
        if m.opt.timestep != s.physics_dt:
            m.opt.timestep = s.physics_dt
        if o.iterations is not None:
            m.opt.iterations = o.iterations
        if o.ls_iterations is not None:
            m.opt.ls_iterations = o.ls_iterations
        if o.integrator is not None:
            m.opt.integrator = _INTEGRATORS[o.integrator]
        if o.cone is not None:
            m.opt.cone = _CONES[o.cone]
        if o.impratio is not None:
            m.opt.impratio = o.impratio
        if o.eulerdamp is False:
            m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP
        if o.contact_geoms is not None:
            if o.floor_geom is None:
                raise BadInput(FIELD, f"robot spec {f}: model.contact_geoms needs model.floor_geom")
            floor = _id(m, mujoco.mjtObj.mjOBJ_GEOM, o.floor_geom, "geom", f)
            feet = [_id(m, mujoco.mjtObj.mjOBJ_GEOM, g, "geom", f) for g in o.contact_geoms]
            m.geom_contype[:] = 0
            m.geom_conaffinity[:] = 0
            m.geom_contype[floor] = 1
            m.geom_conaffinity[feet] = 1
            m.geom_priority[feet] = 0
            if o.contact_condim is not None:
                m.geom_condim[feet] = o.contact_condim
                m.geom_condim[floor] = o.contact_condim
        if o.joint_damping is not None:
            m.dof_damping[self.joint_dof] = o.joint_damping
        c = s.control
        if c.mode == "pd":  # motors become position servos: force = kp (target - q) - kd qdot
            m.actuator_gaintype[:] = mujoco.mjtGain.mjGAIN_FIXED
            m.actuator_gainprm[:] = 0.0
            m.actuator_gainprm[:, 0] = c.kp
            m.actuator_biastype[:] = mujoco.mjtBias.mjBIAS_AFFINE
            m.actuator_biasprm[:] = 0.0
            m.actuator_biasprm[:, 1] = -c.kp
            m.actuator_biasprm[:, 2] = -c.kd
            m.actuator_ctrllimited[:] = 0
        if c.force_limits is not None:
            lim = np.asarray(c.force_limits, dtype=float)
            m.actuator_forcelimited[:] = 1
            m.actuator_forcerange[:] = np.stack([-lim, lim], axis=1)

    @lru_cache(maxsize=None)
    def model(self, mu: float | None = None) -> mujoco.MjModel:
        """The compiled model with sliding friction `mu` on the spec's friction geoms (None: the model's).
        Cached; never mutate it."""
        if mu is None:
            return self.base
        m = mujoco.MjModel.from_xml_path(str(self.mjcf))
        self._apply_overrides(m)
        m.geom_friction[self.friction_geoms, 0] = mu
        return m

    def render_model(self) -> mujoco.MjModel:
        """A private copy for rendering (a renderer sizes its buffers on it)."""
        m = mujoco.MjModel.from_xml_path(str(self.mjcf))
        self._apply_overrides(m)
        return m

    @cached_property
    def identity(self) -> dict:
        """What names this robot in records and gate files: its name and the sha256 of the spec file and
        of the MJCF file (the files the model is compiled from, besides included files and meshes)."""
        return {"name": self.spec.name, "spec_sha256": _sha256_file(self.spec_file),
                "mjcf_sha256": _sha256_file(self.mjcf)}

    @property
    def control_dt(self) -> float:
        return float(self.spec.physics_dt * self.spec.frame_skip)

    @property
    def frame_skip(self) -> int:
        return self.spec.frame_skip

    def body_weight_n(self) -> float:
        """m * g of the robot (the torso's subtree), the unit of push magnitudes (% bodyweight)."""
        m = self.base
        return float(m.body_subtreemass[self.torso] * -m.opt.gravity[2])

    # -- state ----------------------------------------------------------------------------------
    def reset_state(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Initial (qpos, qvel) of a world's seed: the nominal pose plus uniform qpos noise (on every qpos,
        or on the joints only), then Gaussian qvel noise, from ``np.random.default_rng(seed)``. For the
        Ant this is exactly Gymnasium's ``Ant-v5.reset(seed=seed)``."""
        r = self.spec.reset
        rng = np.random.default_rng(seed)
        qpos = self.nominal_qpos.copy()
        if r.qpos_noise_on == "all":
            qpos = self.nominal_qpos + rng.uniform(-r.qpos_uniform, r.qpos_uniform, size=self.nq)
        else:
            qpos[self.joint_qpos] += rng.uniform(-r.qpos_uniform, r.qpos_uniform, size=len(self.joint_qpos))
        qvel = r.qvel_normal * rng.standard_normal(self.nv)
        return qpos, qvel

    def torso_z(self, qpos: np.ndarray) -> np.ndarray:
        return qpos[..., self.root_qpos + 2]

    def uprightness(self, qpos: np.ndarray) -> np.ndarray:
        """z of the torso's up axis, 1 - 2(qx^2 + qy^2): 1 upright, 0 on its side, -1 on its back."""
        qx, qy = qpos[..., self.root_qpos + 4], qpos[..., self.root_qpos + 5]
        return 1.0 - 2.0 * (qx * qx + qy * qy)

    def heading(self, qpos: np.ndarray) -> np.ndarray:
        """Yaw (rad) of the torso's forward (x) axis in the world frame."""
        a = self.root_qpos + 3
        w, x, y, z = (qpos[..., a + i] for i in range(4))
        return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))

    # -- observation and action -----------------------------------------------------------------
    def _term_width(self, t) -> int:
        if t.term in ("qpos", "qvel"):
            n = self.nq if t.term == "qpos" else self.nv
            width = len(range(n)[slice(t.start, t.stop)])
            if width < 1:
                raise BadInput(FIELD, f"robot spec {self.spec_file}: observation {t.term}[{t.start}:{t.stop}] is empty")
            return width
        if t.term in ("joint_pos_rel", "joint_vel"):
            return self.nu
        return {"height": 1, "gravity_body": 3, "linvel_body": 3, "angvel_body": 3, "phase": 2}[t.term]

    def _rotation_t(self, qpos: np.ndarray) -> np.ndarray:
        """(B, 3, 3) world-to-torso rotations from the free joint quaternion (normalised)."""
        q = qpos[:, self.root_qpos + 3: self.root_qpos + 7]
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        w, x, y, z = q.T
        r = np.empty((len(q), 3, 3))
        r[:, 0, 0], r[:, 0, 1], r[:, 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
        r[:, 1, 0], r[:, 1, 1], r[:, 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
        r[:, 2, 0], r[:, 2, 1], r[:, 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
        return r.transpose(0, 2, 1)

    def observe(self, qpos: np.ndarray, qvel: np.ndarray, time: np.ndarray,
                out: np.ndarray | None = None) -> np.ndarray:
        """The policy's observation for a batch: (B, nq), (B, nv), (B,) -> (B, obs_dim), elementwise per row."""
        parts = []
        rt = None
        for t in self.spec.observation:
            if t.term == "qpos":
                p = qpos[:, t.start:t.stop]
            elif t.term == "qvel":
                p = qvel[:, t.start:t.stop]
            elif t.term == "height":
                p = qpos[:, self.root_qpos + 2: self.root_qpos + 3]
            elif t.term == "angvel_body":
                p = qvel[:, self.root_dof + 3: self.root_dof + 6]
            elif t.term in ("gravity_body", "linvel_body"):
                rt = self._rotation_t(qpos) if rt is None else rt
                v = np.broadcast_to([0.0, 0.0, -1.0], (len(qpos), 3)) if t.term == "gravity_body" \
                    else qvel[:, self.root_dof: self.root_dof + 3]
                p = np.einsum("bij,bj->bi", rt, v)
            elif t.term == "joint_pos_rel":
                p = qpos[:, self.joint_qpos] - self.nominal_joints
            elif t.term == "joint_vel":
                p = qvel[:, self.joint_dof]
            else:  # phase
                ang = 2.0 * np.pi * t.hz * time
                p = np.stack([np.sin(ang), np.cos(ang)], axis=1)
            parts.append(p if t.scale == 1.0 else p * t.scale)
        if len(parts) == 1:
            if out is None:
                return np.array(parts[0])
            out[...] = parts[0]
            return out
        return np.concatenate(parts, axis=1, out=out)

    def ctrl(self, action: np.ndarray) -> np.ndarray:
        """Actuator ctrl from the policy's action: clipped; torque mode: scaled torque (or the action
        itself); pd mode: the nominal joint pose + action_scale * action (position targets)."""
        c = self.spec.control
        a = np.clip(action, -c.action_clip, c.action_clip)
        if c.mode == "pd":
            return self.nominal_joints + c.action_scale * a
        return a if c.action_scale is None else c.action_scale * a

    # -- failure rule ---------------------------------------------------------------------------
    def thresholds(self) -> dict:
        f = self.spec.failure
        return {"torso_z_fail_m": f.torso_z_fail_m, "uprightness_fail": f.uprightness_fail,
                "rule_version": f.rule_version}

    def fallen(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """Per world: the state fails the frozen rule or is not finite (the loop's early stop)."""
        f = self.spec.failure
        with np.errstate(invalid="ignore"):
            bad = (self.torso_z(qpos) < f.torso_z_fail_m) | (self.uprightness(qpos) < f.uprightness_fail)
        return bad | ~np.isfinite(qpos).all(axis=1) | ~np.isfinite(qvel).all(axis=1)


@lru_cache(maxsize=None)
def _robot_cached(path: str, mtime_ns: int, size: int) -> Robot:
    return Robot(load_spec(path), Path(path))


def robot(name_or_path: str | os.PathLike | None = None) -> Robot:
    """The robot of a shipped name (`go1`, `ant`; None: the default) or a spec path; BadInput if it does
    not load."""
    p = spec_path(name_or_path).resolve()
    st = p.stat()
    return _robot_cached(str(p), st.st_mtime_ns, st.st_size)


class RobotBatch:
    """B independent worlds of `robot`, each with its own friction (None: the model's) and seed.

    `step(ctrl, push_xy, ids)` advances the worlds `ids` (None: all) by one control step with actuator
    `ctrl` and a world-frame horizontal force `push_xy` on the push body's centre of mass. `qpos`, `qvel`
    and `time` are live read-only (B, ...) views, current after every step.
    """

    def __init__(self, rob: Robot, mus: list[float | None], seeds: list[int], nthread: int = 2):
        if len(mus) != len(seeds):
            raise ValueError("one friction per seed")
        self.robot = rob
        n = len(seeds)
        self._batch = None
        if not n:
            self.qpos, self.qvel, self.time = np.empty((0, rob.nq)), np.empty((0, rob.nv)), np.empty(0)
            return
        b = mujoco.batch.Batch(rob.base, n, max(1, min(nthread, n)))
        if any(mu is not None for mu in mus):
            friction = b.expand("geom_friction")
            for i, mu in enumerate(mus):
                if mu is not None:
                    friction[i, rob.friction_geoms, 0] = mu
        b.reset()  # the model defaults (time 0, no warm start, zero ctrl and forces), as a new MjData
        qpos, qvel = b.bind("qpos"), b.bind("qvel")
        for i, seed in enumerate(seeds):
            qpos[i], qvel[i] = rob.reset_state(seed)
        b.forward()  # as MujocoEnv.set_state does (changes no state, so not the trajectory)
        self._batch = b
        self._ctrl = b.bind("ctrl")
        self._push = b.bind("xfrc_applied")[:, rob.push_body, :2]
        self.qpos, self.qvel, self.time = _read_only(qpos), _read_only(qvel), _read_only(b.bind("time"))

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

    def close(self) -> None:
        self._batch = None

    def __enter__(self) -> "RobotBatch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    nthread: int = 2,
    stop_at_failure: bool | None = None,
    policy_ids: bool = False,
) -> dict[str, np.ndarray]:
    """Play `policy` ((B, obs_dim) -> (B, act_dim) actions) in B worlds for `n_steps` control steps.

    Push protocol: during control steps ``k0 <= k < k0 + n_push`` a constant horizontal force of
    ``force_n`` newtons acts on the push body's centre of mass (``xfrc_applied``), ``dir_deg``
    counter-clockwise from the torso heading captured at the first push step, then fixed in the world
    frame.

    Returns arrays with the batch first: ``qpos`` (B, T+1, nq), ``qvel`` (B, T+1, nv), ``time``
    (B, T+1), ``ctrl`` (B, T, nu), ``action`` (B, T, act_dim) and ``push`` (B, T, 2) (the world-frame
    force applied during step k), index 0 the reset state, and ``n_states`` (B,): how many states each
    world has (T+1, or fewer when it stopped at its failure; rows past that are NaN).
    """
    n = len(seeds)
    stop = rob.spec.stop_at_failure if stop_at_failure is None else stop_at_failure
    force_n = np.zeros(n) if force_n is None else np.asarray(force_n, dtype=float)
    dir_rad = np.deg2rad(np.zeros(n) if dir_deg is None else np.asarray(dir_deg, dtype=float))
    push_k0 = np.full(n, -1) if push_k0 is None else np.asarray(push_k0, dtype=int)
    nq, nv, nu = rob.nq, rob.nv, rob.nu
    fill = np.nan if stop else 0.0
    qpos = np.full((n, n_steps + 1, nq), fill)
    qvel = np.full((n, n_steps + 1, nv), fill)
    time = np.full((n, n_steps + 1), fill)
    ctrl = np.full((n, n_steps, nu), fill)
    action = np.full((n, n_steps, rob.act_dim), fill)
    push = np.zeros((n, n_steps, 2))
    n_states = np.full(n, n_steps + 1)
    with RobotBatch(rob, mus, seeds, nthread=nthread) as batch:
        if not n:
            return {"qpos": qpos, "qvel": qvel, "time": time, "ctrl": ctrl, "action": action, "push": push,
                    "n_states": n_states}
        qpos[:, 0], qvel[:, 0], time[:, 0] = batch.qpos, batch.qvel, batch.time
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
                push[active, k, 0] = force_n[active] * np.cos(angle[active])
                push[active, k, 1] = force_n[active] * np.sin(angle[active])
            obs = rob.observe(batch.qpos[sel], batch.qvel[sel], batch.time[sel])
            if policy_ids:
                a = np.asarray(policy(obs, np.arange(n) if ids is None else ids), dtype=float)
            else:
                a = np.asarray(policy(obs), dtype=float)
            c = rob.ctrl(a)
            action[sel, k] = a
            ctrl[sel, k] = c
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
    return {"qpos": qpos, "qvel": qvel, "time": time, "ctrl": ctrl, "action": action, "push": push,
            "n_states": n_states}


def plain_loop(rob: Robot, policy: Callable[[np.ndarray], np.ndarray], mu: float | None, seed: int, *, n_steps: int,
               force_n: float = 0.0, dir_deg: float = 0.0, push_k0: int = -1, n_push: int = 0,
               stop_at_failure: bool | None = None) -> dict[str, np.ndarray]:
    """One world in a plain per-world MuJoCo loop (one `MjData`, ``mj_step(nstep=frame_skip)`` per control
    step, the policy called on a batch of one): the reference `RobotBatch` must reproduce bitwise.
    Returns qpos, qvel, time (n, ...) and ctrl (n - 1, nu), n the number of states."""
    stop = rob.spec.stop_at_failure if stop_at_failure is None else stop_at_failure
    m = rob.model(mu)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = rob.reset_state(seed)
    mujoco.mj_forward(m, d)
    qpos, qvel, time, ctrl = [d.qpos.copy()], [d.qvel.copy()], [d.time], []
    angle = 0.0
    for k in range(n_steps):
        if k == push_k0:
            angle = float(rob.heading(d.qpos)) + np.deg2rad(dir_deg)
        on = push_k0 >= 0 and push_k0 <= k < push_k0 + n_push
        d.xfrc_applied[rob.push_body, 0] = force_n * np.cos(angle) if on else 0.0
        d.xfrc_applied[rob.push_body, 1] = force_n * np.sin(angle) if on else 0.0
        obs = rob.observe(d.qpos[None], d.qvel[None], np.array([d.time]))
        c = rob.ctrl(np.asarray(policy(obs), dtype=float))[0]
        d.ctrl[:] = c
        mujoco.mj_step(m, d, nstep=rob.frame_skip)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        time.append(d.time)
        ctrl.append(c.copy())
        if stop and (rob.fallen(d.qpos[None], d.qvel[None])[0] or abs(d.time - (k + 1) * rob.control_dt) > 1e-6):
            break
    return {"qpos": np.array(qpos), "qvel": np.array(qvel), "time": np.array(time), "ctrl": np.array(ctrl)}
