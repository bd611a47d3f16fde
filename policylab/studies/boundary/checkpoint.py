"""The policy a sweep plays: a committed checkpoint by name or a user's policy file, resolved once
together with the robot it is checked against.

A committed checkpoint's record or name says its robot (``go1_v2`` -> ``go1_imu``, ``ant_v1`` -> ``ant``),
so naming one is enough; a policy file's sizes must fit the robot's observation and action. Anything that does not
resolve is `BadInput` naming the field, before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from policylab.envs.robots.robot import Robot, commanded_robot, robot as load_robot
from policylab.envs.robots.spec import available as available_robots
from policylab.errors import BadInput
from policylab.hashing import sha256_hex
from policylab.policies.files import SUFFIXES, load_policy, obs_norm_file
from policylab.studies.boundary.constants import CHECKPOINT_DIR, default_checkpoint


@dataclass(frozen=True)
class Checkpoint:
    name: str
    path: Path
    sha256: str
    robot: Robot
    obs_norm_sha256: str | None = None  # the normalisation file beside the policy file, when there is one

    def as_dict(self) -> dict:
        """What names the policy in records and keys (the normalisation only when present, so the keys of
        policies without one stand)."""
        return {"name": self.name, "sha256": self.sha256,
                **({"obs_norm_sha256": self.obs_norm_sha256} if self.obs_norm_sha256 else {})}


def available_checkpoints() -> list[str]:
    return sorted(p.stem for suffix in SUFFIXES for p in CHECKPOINT_DIR.glob(f"*{suffix}"))


def committed_record(name: str) -> dict:
    """The training record beside a committed checkpoint (``<name>.json``), or {} for none."""
    path = CHECKPOINT_DIR / f"{name}.json"
    return json.loads(path.read_text()) if _committed(name) is not None and path.is_file() else {}


def robot_of_checkpoint_name(name: str) -> str | None:
    """A committed checkpoint's robot: the one its record names (``go1_v2`` -> ``go1_imu``), else the
    robot its name starts with (``go1_v0`` -> ``go1``). An ARS record keeps the robot's identity (its name
    and its files' sha256) where a learn record keeps the name alone."""
    recorded = committed_record(name).get("robot")
    named = recorded.get("name") if isinstance(recorded, dict) else recorded
    if named is not None:
        return named
    for r in sorted(available_robots(), key=len, reverse=True):
        if name.startswith(f"{r}_"):
            return r
    return None


def resolve_checkpoint(spec: str | None, robot: str | None = None, command: list[float] | None = None) -> Checkpoint:
    """A committed checkpoint by name (e.g. ``go1_v2``, ``ant_v0``) or the path of a policy file (.npz
    linear, .onnx network; None: the robot's default, `constants.default_checkpoint`), checked against the
    robot (`robot`: a shipped name or spec path; None: the committed checkpoint's own robot, else the
    default robot), whose command term carries `command` when given (`commanded_robot`; a committed
    checkpoint whose record names the command it was trained for carries that one by default). Unknown is
    bad input, and so is a file its loader refuses (not a policy file, corrupt, or sizes that do not fit
    the robot), and a command the robot cannot take."""
    if spec is None:
        spec = default_checkpoint(None if robot is None else load_robot(robot).spec.name)
    if robot is None and _committed(spec) is not None:
        robot = robot_of_checkpoint_name(spec)
    if command is None and _committed(spec) is not None:
        command = committed_record(spec).get("command")  # what the network was trained to follow
    rob = load_robot(robot)
    return checkpoint_on(spec, rob if command is None else commanded_robot(rob, command))


def _committed(spec: str) -> Path | None:
    return next((CHECKPOINT_DIR / f"{spec}{sfx}" for sfx in SUFFIXES if (CHECKPOINT_DIR / f"{spec}{sfx}").is_file()),
                None)


def checkpoint_on(spec: str, rob: Robot) -> Checkpoint:
    """A committed checkpoint's name or a policy file's path, checked against a robot already built (a
    stored sweep's, which may be rebuilt from the store's copy of its spec)."""
    path = _committed(spec) or Path(spec)
    if not path.is_file() or path.suffix.lower() not in SUFFIXES:
        raise BadInput(
            "checkpoint", f"unknown checkpoint {spec!r}; expected one of {', '.join(available_checkpoints())} or the "
            "path of a .npz or .onnx policy file"
        )
    robot_policy(path, rob)
    norm = obs_norm_file(path)
    return Checkpoint(path.stem, path, sha256_hex(path.read_bytes()), rob,
                      None if norm is None else sha256_hex(norm.read_bytes()))


def robot_policy(path: str | Path, rob: Robot):
    """The policy file `path` opened for `rob`: checked against its observation and action sizes, an ONNX
    file's action output named by the spec's ``policy_output``."""
    if rob.spec.normalization is not None and obs_norm_file(path) is not None:
        raise BadInput("checkpoint", f"{obs_norm_file(path)} normalises the observation that the robot spec's "
                       "normalization already normalises; keep one of them")
    return load_policy(path, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot", output=rob.spec.policy_output)


def policy_record(ckpt: Checkpoint) -> dict:
    """The policy part of a rollout record: the policy file's kind and the checkpoint it names."""
    kind = SUFFIXES.get(ckpt.path.suffix.lower(), "linear")
    norm = {"obs_norm_sha256": ckpt.obs_norm_sha256} if ckpt.obs_norm_sha256 else {}
    return {"name": kind, "params": {"checkpoint": ckpt.name, "sha256": ckpt.sha256, **norm}}
