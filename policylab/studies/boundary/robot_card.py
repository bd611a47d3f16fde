"""`policylab boundary robot SPEC`: a robot spec checked against its model and described, before any sweep."""

from __future__ import annotations

import mujoco
import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import Robot
from policylab.envs.robots.robot import robot as load_robot
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.result import Result
from policylab.rollout.seeds import named_range
from policylab.studies.boundary.constants import MU_RANGE
from policylab.studies.boundary.protocol import classify, n_steps
from policylab.studies.boundary.requests import RobotRequest

ZERO_POLICY_SEEDS = named_range("boundary", "robot")


def _names(m: mujoco.MjModel, kind: mujoco.mjtObj, n: int) -> list[str]:
    return [mujoco.mj_id2name(m, kind, i) or f"#{i}" for i in range(n)]


def observation_layout(rob: Robot) -> list[dict]:
    """Each term's slice of one observation frame, in order."""
    rows, at = [], 0
    for t in rob.terms:
        s = t.spec
        span = f"[{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}]"
        label = s.term + (f"[{s.name}]" if s.name else "") + (span if s.term in ("qpos", "qvel") else "")
        rows.append(
            {
                "term": label,
                "slice": [at, at + t.width],
                "width": t.width,
                **{
                    k: v
                    for k, v in s.model_dump(exclude_none=True).items()
                    if k in ("scale", "offset", "clip", "initial", "value", "hz") and v not in (1.0, 0.0)
                },
            }
        )
        at += t.width
    return rows


def zero_policy_survival(rob: Robot, n: int) -> dict:
    """The zero policy in `n` nominal worlds (seeds of the `robot` range): how many survive the horizon."""
    seeds = ZERO_POLICY_SEEDS.first(n)
    traj = run_closed_loop(
        rob, lambda obs: np.zeros((len(obs), rob.act_dim)), [None] * n, list(seeds), n_steps=n_steps(rob), nthread=2
    )
    status = []
    for i in range(n):
        k = int(traj["n_states"][i])
        status.append(classify(rob, traj["qpos"][i, :k], traj["qvel"][i, :k], traj["time"][i, :k])["status"])
    return {
        "worlds": n,
        "survived": status.count("survived"),
        "failed": status.count("failed"),
        "diverged": status.count("diverged"),
        "seeds": [seeds[0], seeds[-1]],
    }


def contact_friction(rob: Robot, mus: tuple[float, float] = (MU_RANGE[0], 1.0), seconds: float = 1.0) -> dict:
    """The friction MuJoCo gives the robot's floor contacts (`Robot.floor_contacts`) at two mu values: the
    zero policy's first state with such a contact, from the home pose (the same state at both mu: nothing
    touches before it). The spec's check (`Robot._check_friction_reach`) reads the model's mixing rule; this
    reads what the simulator does. BadInput naming ``friction_geoms`` when the frictions are equal."""
    pairs = {frozenset(p) for p in rob.floor_contacts(rob.base)}
    seen = {}
    for mu in mus:
        m = rob.model(mu)
        d = mujoco.MjData(m)
        d.qpos[:] = rob.nominal_qpos
        d.ctrl[:] = rob.ctrl(np.zeros((1, rob.act_dim)))[0]
        mujoco.mj_forward(m, d)
        for _ in range(round(seconds / m.opt.timestep)):
            touching = [c for c in d.contact[: d.ncon] if frozenset((int(c.geom1), int(c.geom2))) in pairs]
            if touching:
                break
            mujoco.mj_step(m, d)
        seen[mu] = [float(c.friction[0]) for c in touching]
    lo, hi = (seen[mu] for mu in mus)
    if not lo:
        return {"mu": list(mus), "contacts": 0, "note": f"no floor contact within {seconds:g} s of the home pose"}
    if lo == hi:
        raise BadInput(
            "friction_geoms",
            f"robot spec {rob.spec_file}: the robot's floor contacts have friction "
            f"{lo[0]:g} at mu {mus[0]:g} and at mu {mus[1]:g}: the friction axis does not reach them; list "
            "the geoms whose friction the contacts take",
        )
    return {"mu": list(mus), "contacts": len(lo), "friction": {f"{mu:g}": seen[mu] for mu in mus}}


def describe(rob: Robot, n_zero: int) -> dict:
    m, s = rob.base, rob.spec
    joints = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(j)) for j in m.actuator_trnid[:, 0]]
    actuators = _names(m, mujoco.mjtObj.mjOBJ_ACTUATOR, m.nu)
    sensors = [
        {
            "name": n,
            "type": mujoco.mjtSensor(int(m.sensor_type[i])).name.removeprefix("mjSENS_").lower(),
            "dim": int(m.sensor_dim[i]),
        }
        for i, n in enumerate(_names(m, mujoco.mjtObj.mjOBJ_SENSOR, m.nsensor))
    ]
    survival = zero_policy_survival(rob, n_zero)
    return {
        "robot": rob.ref,
        "name": s.name,
        "mjcf": str(rob.mjcf),
        "identity": rob.identity,
        "bodies": _names(m, mujoco.mjtObj.mjOBJ_BODY, m.nbody)[1:],
        "sites": _names(m, mujoco.mjtObj.mjOBJ_SITE, m.nsite),
        "actuators": [{"name": a, "joint": j} for a, j in zip(actuators, joints)],
        "policy_joints": [joints[i] for i in rob.policy_joints],
        "sensors": sensors,
        "control": {
            **s.control.model_dump(exclude_none=True),
            "control_dt_s": rob.control_dt,
            "physics_dt_s": float(m.opt.timestep),
            "frame_skip": rob.frame_skip,
        },
        "home_torso_z_m": float(rob.nominal_qpos[rob.root_qpos + 2]),
        "failure": rob.thresholds(),
        "observation": {
            "layout": observation_layout(rob),
            "frame_size": rob.frame_dim,
            "history": s.history.model_dump() if s.history else None,
            "normalized": s.normalization is not None,
            "size": rob.obs_dim,
        },
        "action_size": rob.act_dim,
        "policy_output": s.policy_output,
        "floor_contacts": [
            [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"#{g}" for g in pair]
            for pair in rob.floor_contacts(m)
        ],
        "contact_friction": contact_friction(rob),
        "zero_policy": survival,
        "warnings": (
            [
                f"the zero policy survived 0 of {survival['worlds']} nominal worlds: check the failure "
                "thresholds, the keyframe and the control gains"
            ]
            if survival["survived"] == 0
            else []
        ),
    }


def run(req: RobotRequest) -> Result:
    """`policylab boundary robot SPEC`: check the spec, describe it into OUT/robot.json."""
    rob = load_robot(req.spec)
    card = describe(rob, req.zero_policy_worlds)
    claim_out_dir(req.out, {"robot": rob.ref, "identity": rob.identity, "zero_policy_worlds": req.zero_policy_worlds})
    write_json(req.out / "robot.json", card)
    z = card["zero_policy"]
    layout = ", ".join(f"{r['term']} {r['width']}" for r in card["observation"]["layout"])
    hist = card["observation"]["history"]
    lines = (
        f"{card['name']}: {len(card['bodies'])} bodies, {rob.act_dim} actuators ({rob.spec.control.mode} control, "
        f"{rob.control_dt:g} s control step), {len(card['sensors'])} sensors",
        f"observation {rob.obs_dim} values"
        + (f" ({hist['length']} frames of {rob.frame_dim})" if hist else "")
        + f": {layout}; action {rob.act_dim} values",
        f"zero policy: survived {z['survived']} of {z['worlds']} nominal worlds",
        _friction_line(card["contact_friction"]),
        *(f"warning: {w}" for w in card["warnings"]),
    )
    return Result(req.out / "robot.json", headlines=lines)


def _friction_line(c: dict) -> str:
    if not c["contacts"]:
        return f"friction axis: {c['note']}, not checked in simulation"
    lo, hi = (c["friction"][f"{mu:g}"] for mu in c["mu"])
    return (
        f"friction axis: {c['contacts']} floor contact(s) take friction {min(lo):g} at mu {c['mu'][0]:g} and "
        f"{min(hi):g} at mu {c['mu'][1]:g}"
    )
