"""A robot spec (`spec.py`) compiled against its MJCF: the `Robot` the study simulates.

`robot(name_or_path)` resolves a spec once (cached); a `Robot` pickles as its reference (`Robot.ref`)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from functools import cache, cached_property
from pathlib import Path

import mujoco
import numpy as np

from policylab import portable_math
from policylab.envs.robots.observation import TERM_FIELDS, Observer, Term
from policylab.envs.robots.spec import (
    FIELD,
    OBS_TERMS,
    SITE_TERMS,
    RobotSpec,
    load_spec,
    mjcf_path,
    robot_ref,
    spec_path,
)
from policylab.errors import BadInput

_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}
_CONES = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}


def _id(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str, what: str, spec_file: Path) -> int:
    i = mujoco.mj_name2id(m, kind, name)
    if i < 0:
        raise BadInput(FIELD, f"robot spec {spec_file}: the model has no {what} named {name!r}")
    return i


def _explicit_pairs(m: mujoco.MjModel) -> set[frozenset[int]]:
    """The geom pairs of the MJCF's ``<contact><pair>`` elements (they collide whatever their bitmasks, with
    the pair's own friction)."""
    return {frozenset(map(int, p)) for p in zip(m.pair_geom1, m.pair_geom2)}


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Robot:
    """A robot spec compiled against its model. Build with `robot(name_or_path)` (cached)."""

    uncommanded: Robot | None = None  # set by `commanded_robot`: the robot whose command vector it replaced

    def __init__(self, spec: RobotSpec, spec_file: Path, ref: str | None = None, mjcf: Path | None = None):
        self.spec, self.spec_file = spec, Path(spec_file)
        self.ref = ref or str(self.spec_file.resolve())
        self.mjcf = mjcf_path(spec, spec_file) if mjcf is None else Path(mjcf)
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
            self.friction_geoms = np.array(
                [_id(base, mujoco.mjtObj.mjOBJ_GEOM, g, "geom", f) for g in spec.friction_geoms]
            )
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
            raise BadInput(
                FIELD,
                f"robot spec {f}: control.force_limits has {len(c.force_limits)} values; the "
                f"model has {base.nu} actuators",
            )
        self._apply_overrides(base)
        self.base = base
        self.nominal_qpos = (base.key_qpos[self.key] if self.key is not None else base.qpos0).copy()
        self.nominal_joints = self.nominal_qpos[self.joint_qpos].copy()
        self.nq, self.nv, self.nu = base.nq, base.nv, base.nu
        self.act_dim = base.nu
        self.policy_joints = self._policy_joints(base)
        self.act_perm = None if spec.joint_order is None else np.argsort(self.policy_joints)
        self.terms = [self._compile(base, t) for t in spec.observation]
        self.data_fields = sorted({f for t in self.terms for f in TERM_FIELDS.get(t.spec.term, ())})
        self.frame_dim = sum(t.width for t in self.terms)
        self.obs_dim = self.frame_dim * (spec.history.length if spec.history else 1)
        self.initial_action = self._initial_action()
        self._check_contract(base)
        self._check_friction_reach(base)

    def _policy_joints(self, m: mujoco.MjModel) -> np.ndarray:
        """For each of the policy's joints (its action and joint terms), the actuator that drives it."""
        order = self.spec.joint_order
        if order is None:
            return np.arange(m.nu)
        by_joint = {
            mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(j)): a for a, j in enumerate(m.actuator_trnid[:, 0])
        }
        unknown = [n for n in order if n not in by_joint]
        if unknown or sorted(order) != sorted(by_joint):
            what = (
                f"names no actuated joint {unknown[0]!r}"
                if unknown
                else f"must name each of the {m.nu} actuated joints once ({', '.join(sorted(by_joint))})"
            )
            raise BadInput(FIELD, f"robot spec {self.spec_file}: joint_order {what}")
        return np.array([by_joint[n] for n in order])

    def _compile(self, m: mujoco.MjModel, t) -> Term:
        f = self.spec_file
        site = body = root = -1
        index = None
        if t.term in ("qpos", "qvel"):
            width = len(range(self.nq if t.term == "qpos" else self.nv)[slice(t.start, t.stop)])
            if width < 1:
                raise BadInput(FIELD, f"robot spec {f}: observation {t.term}[{t.start}:{t.stop}] is empty")
        elif t.term in ("joint_pos_rel", "joint_vel"):
            index = (self.joint_qpos if t.term == "joint_pos_rel" else self.joint_dof)[self.policy_joints]
            width = self.nu
        elif t.term == "sensor":
            s = _id(m, mujoco.mjtObj.mjOBJ_SENSOR, t.name, "sensor", f)
            index = np.arange(m.sensor_adr[s], m.sensor_adr[s] + m.sensor_dim[s])
            width = len(index)
        elif t.term in SITE_TERMS:
            site = _id(m, mujoco.mjtObj.mjOBJ_SITE, t.name, "site", f)
            body = int(m.site_bodyid[site])
            root = int(m.body_rootid[body])
            width = 3
        elif t.term == "last_action":
            width = self.nu
        elif t.term == "command":
            width = len(t.value)
        else:
            width = OBS_TERMS[t.term]
        offset = None
        if t.offset != 0.0:
            offset = np.asarray(t.offset, dtype=float)
            if offset.ndim == 1 and len(offset) != width:
                raise BadInput(
                    FIELD, f"robot spec {f}: observation {t.term} has {width} values; its offset has {len(offset)}"
                )
        home = self.nominal_qpos[index].copy() if t.term == "joint_pos_rel" else None
        return Term(t, width, index, site, body, root, offset, home)

    def _initial_action(self) -> np.ndarray:
        t = next((t for t in self.spec.observation if t.term == "last_action"), None)
        if t is None or t.initial is None:
            return np.zeros(self.act_dim)
        if len(t.initial) != self.act_dim:
            raise BadInput(
                FIELD,
                f"robot spec {self.spec_file}: last_action.initial has {len(t.initial)} values; the "
                f"robot has {self.act_dim} actuators",
            )
        return np.asarray(t.initial, dtype=float)

    def _check_contract(self, m: mujoco.MjModel) -> None:
        """What loads but cannot be run as a trained policy expects: sizes, actuators, a home pose that fails."""
        s, f = self.spec, self.spec_file
        if s.normalization is not None and len(s.normalization.mean) != self.obs_dim:
            raise BadInput(
                FIELD,
                f"robot spec {f}: normalization has {len(s.normalization.mean)} values; the "
                f"observation has {self.obs_dim}",
            )
        if s.control.mode == "position":
            servo = (
                (m.actuator_gaintype == mujoco.mjtGain.mjGAIN_FIXED)
                & (m.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE)
                & (m.actuator_biasprm[:, 0] == 0)
                & (m.actuator_biasprm[:, 1] == -m.actuator_gainprm[:, 0])
                & (m.actuator_gainprm[:, 0] > 0)
            )
            if not servo.all():
                name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, int(np.flatnonzero(~servo)[0]))
                raise BadInput(
                    FIELD,
                    f"robot spec {f}: control.mode position drives the MJCF's position actuators; "
                    f"actuator {name!r} is not one (use pd or torque)",
                )
        home_z = float(self.nominal_qpos[self.root_qpos + 2])
        if s.failure.torso_z_fail_m >= home_z:
            raise BadInput(
                FIELD,
                f"robot spec {f}: failure.torso_z_fail_m {s.failure.torso_z_fail_m:g} m is not "
                f"below the home pose's torso height {home_z:.4g} m: every rollout would fail at once",
            )

    def floor_contacts(self, m: mujoco.MjModel) -> list[tuple[int, int]]:
        """The (robot geom, floor geom) pairs whose contacts the friction axis must reach: the floor is
        ``model.floor_geom`` (else every geom of the world body); the robot's side is ``model.contact_geoms``,
        else the listed friction geoms that collide with the floor, else every robot geom that does."""
        o = self.spec.model
        body = m.geom_bodyid
        floors = (
            [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, o.floor_geom)]
            if o.floor_geom
            else [int(g) for g in np.flatnonzero(body == 0)]
        )
        explicit = _explicit_pairs(m)

        def collide(a: int, b: int) -> bool:
            return (
                bool(m.geom_contype[a] & m.geom_conaffinity[b] or m.geom_contype[b] & m.geom_conaffinity[a])
                or frozenset((a, b)) in explicit
            )

        robot = [int(g) for g in np.flatnonzero(body != 0) if any(collide(int(g), f) for f in floors)]
        if o.contact_geoms is not None:
            robot = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in o.contact_geoms]
        elif self.spec.friction_geoms != "all" and set(robot) & set(map(int, self.friction_geoms)):
            robot = [g for g in robot if g in set(map(int, self.friction_geoms))]
        return [(g, f) for g in robot for f in floors if collide(g, f)]

    def _check_friction_reach(self, m: mujoco.MjModel) -> None:
        """Refuse a spec whose friction axis does not reach a contact of the robot with the floor. MuJoCo
        gives a contact the friction of the geom with the higher ``priority``, and only at equal priority
        the larger of the two (`mj_contactParam`); an explicit ``<pair>`` has its own friction and a
        condim-1 contact none. So a spec listing the feet alone, over a floor of higher priority (or of
        equal priority and friction 1, for every mu below 1), sets a friction no contact uses: every
        world of a friction row would be the same world."""
        listed, explicit = set(map(int, self.friction_geoms)), _explicit_pairs(m)
        name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"#{g}"  # noqa: E731
        for g, f in self.floor_contacts(m):
            pg, pf = int(m.geom_priority[g]), int(m.geom_priority[f])
            governs = [g] if pg > pf else [f] if pf > pg else [g, f]
            condim = int(m.geom_condim[governs[0]]) if len(governs) == 1 else int(max(m.geom_condim[[g, f]]))
            missing = [x for x in governs if x not in listed]
            why = None
            if frozenset((g, f)) in explicit:
                why = "an explicit <pair> in the MJCF sets that contact's friction"
            elif condim == 1:
                why = "that contact is frictionless (condim 1)"
            elif missing and len(governs) == 1:
                why = (
                    f"{name(governs[0])!r} has the higher priority ({max(pg, pf)} against {min(pg, pf)}), so "
                    f"MuJoCo takes its friction alone, and it is not in friction_geoms"
                )
            elif missing:
                why = (
                    f"at equal priority MuJoCo takes the larger friction of the two, and {name(missing[0])!r} "
                    f"(friction {m.geom_friction[missing[0], 0]:g}) is not in friction_geoms, so no lower mu "
                    "reaches the contact"
                )
            if why:
                raise BadInput(
                    FIELD,
                    f"robot spec {self.spec_file}: friction_geoms do not reach the contact of "
                    f"{name(g)!r} with the floor {name(f)!r}: {why}; list the geom whose friction the "
                    "contact takes (or set the priorities) so that mu changes the contact",
                )

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

    @cache  # noqa: B019 (robots are few and live as long as the process)
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
        return {
            "name": self.spec.name,
            "spec_sha256": _sha256_file(self.spec_file),
            "mjcf_sha256": _sha256_file(self.mjcf),
        }

    @property
    def control_dt(self) -> float:
        return float(self.spec.physics_dt * self.spec.frame_skip)

    @property
    def frame_skip(self) -> int:
        return self.spec.frame_skip

    def mass_kg(self, payload_kg: float = 0.0) -> float:
        """m of the robot: the torso's subtree, plus a payload it carries."""
        return float(self.base.body_subtreemass[self.torso] + payload_kg)

    def body_weight_n(self, payload_kg: float = 0.0) -> float:
        """m * g of the robot (`mass_kg`), the unit of push magnitudes (% bodyweight)."""
        return float(self.mass_kg(payload_kg) * -self.base.opt.gravity[2])

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
        num, den = np.asarray(2.0 * (w * z + x * y)), np.asarray(1.0 - 2.0 * (y * y + z * z))
        return portable_math.atan2_array(num.reshape(-1), den.reshape(-1)).reshape(num.shape)

    # -- observation and action -----------------------------------------------------------------
    def rotation_t(self, qpos: np.ndarray) -> np.ndarray:
        """(B, 3, 3) world-to-torso rotations from the free joint quaternion (normalised)."""
        q = qpos[:, self.root_qpos + 3 : self.root_qpos + 7]
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        w, x, y, z = q.T
        r = np.empty((len(q), 3, 3))
        r[:, 0, 0], r[:, 0, 1], r[:, 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
        r[:, 1, 0], r[:, 1, 1], r[:, 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
        r[:, 2, 0], r[:, 2, 1], r[:, 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
        return r.transpose(0, 2, 1)

    def observer(self, n: int) -> Observer:
        """The observation state of `n` worlds of one closed loop (previous actions, history)."""
        return Observer(self, n)

    def observe(self, qpos: np.ndarray, qvel: np.ndarray, time: np.ndarray) -> np.ndarray:
        """The observation of states alone, (B, nq), (B, nv), (B,) -> (B, obs_dim): only for a spec whose
        terms read nothing but the state (no sensors, sites, previous action or history), e.g. to
        whiten stored states when training."""
        if self.data_fields or self.spec.history is not None or any(t.spec.term == "last_action" for t in self.terms):
            raise ValueError(f"{self.spec.name}'s observation needs a closed loop's Observer")
        return self.observer(len(qpos)).observe({"qpos": qpos, "qvel": qvel, "time": time})

    def ctrl(self, action: np.ndarray) -> np.ndarray:
        """Actuator ctrl from the policy's action (in `joint_order`, then in actuator order): clipped; torque
        mode: scaled torque (or the action itself); pd and position modes: the nominal joint pose +
        action_scale * action (position targets of the spec's servos, or of the MJCF's own)."""
        c = self.spec.control
        a = action if c.action_clip is None else np.clip(action, -c.action_clip, c.action_clip)
        if self.act_perm is not None:
            a = a[..., self.act_perm]
        if c.mode in ("pd", "position"):
            return self.nominal_joints + c.action_scale * a
        return a if c.action_scale is None else c.action_scale * a

    # -- failure rule ---------------------------------------------------------------------------
    def thresholds(self) -> dict:
        f = self.spec.failure
        return {
            "torso_z_fail_m": f.torso_z_fail_m,
            "uprightness_fail": f.uprightness_fail,
            "rule_version": f.rule_version,
        }

    def fallen(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """Per world: the state fails the frozen rule or is not finite (the loop's early stop)."""
        f = self.spec.failure
        with np.errstate(invalid="ignore"):
            bad = (self.torso_z(qpos) < f.torso_z_fail_m) | (self.uprightness(qpos) < f.uprightness_fail)
        return bad | ~np.isfinite(qpos).all(axis=1) | ~np.isfinite(qvel).all(axis=1)

    def __reduce__(self):
        if self.uncommanded is not None:
            return commanded_robot, (self.uncommanded, list(self.spec.command))
        if self.mjcf != mjcf_path(self.spec, self.spec_file):
            return robot_from_copy, (self.ref, str(self.spec_file), str(self.mjcf))
        return robot, (self.ref,)


@cache
def _robot_cached(ref: str, path: str, mtime_ns: int, size: int) -> Robot:
    return Robot(load_spec(path), Path(path), ref)


def robot(name_or_path: str | os.PathLike | None = None) -> Robot:
    """The robot of a shipped name (`go1`, `ant`; None: the default) or a spec path; BadInput if it does
    not load."""
    ref = robot_ref(name_or_path)
    p = spec_path(ref).resolve()
    st = p.stat()
    return _robot_cached(ref, str(p), st.st_mtime_ns, st.st_size)


@cache
def _copy_cached(ref: str, spec_file: str, mjcf: str, mtime_ns: int, size: int) -> Robot:
    return Robot(load_spec(spec_file), Path(spec_file), ref, Path(mjcf))


def robot_from_copy(ref: str, spec_file: str | os.PathLike, mjcf: str | os.PathLike) -> Robot:
    """The robot `ref` rebuilt from a byte copy of its spec file (`spec_file`, so its identity is the
    original's) and its MJCF where the original spec named it (`mjcf`): how a store's sweep outlives a
    spec file that was moved or deleted after it. BadInput if it does not load."""
    p = Path(spec_file).resolve()
    st = p.stat()
    return _copy_cached(ref, str(p), str(Path(mjcf).resolve()), st.st_mtime_ns, st.st_size)


def commanded_robot(rob: Robot, command: Sequence[float]) -> Robot:
    """`rob` with its command term's vector set to `command` (a sweep's ``--command``): the spec's
    `value` is the default, and a sweep may ask for another without a new spec file. The robot keeps
    its reference and identity (same files); the command it carries is in the protocol, and so in the
    keys. Bad input naming ``command`` when the spec has no command term, or the length or a value is
    wrong."""
    current = rob.spec.command
    if current is None:
        raise BadInput(
            "command",
            f"the {rob.spec.name} robot's spec has no command term in its observation; "
            "--command only sets the vector of one",
        )
    values = [float(c) for c in command]
    if len(values) != len(current):
        raise BadInput(
            "command", f"the {rob.spec.name} robot's command term takes {len(current)} values, got {len(values)}"
        )
    if not all(math.isfinite(v) for v in values):
        raise BadInput("command", f"every value must be a finite number, got {', '.join(map(str, values))}")
    spec = rob.spec.model_copy(
        update={
            "observation": [
                t.model_copy(update={"value": values}) if t.term == "command" else t for t in rob.spec.observation
            ]
        }
    )
    out = Robot(spec, rob.spec_file, rob.ref, rob.mjcf)
    out.uncommanded = rob.uncommanded or rob
    return out
