"""The policy a sweep plays: a committed checkpoint by name or a user's policy file, resolved once
together with the robot it is checked against (docs/boundary.md, "Policies are files")."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from policylab.envs.robots.robot import Robot, commanded_robot
from policylab.envs.robots.robot import robot as load_robot
from policylab.envs.robots.spec import available as available_robots
from policylab.errors import BadInput
from policylab.hashing import sha256_hex
from policylab.policies.files import SUFFIXES, load_policy, named_robot, obs_norm_file
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.robot_policies import default_checkpoint


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
        return {
            "name": self.name,
            "sha256": self.sha256,
            **({"obs_norm_sha256": self.obs_norm_sha256} if self.obs_norm_sha256 else {}),
        }


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


def path_like(spec: str) -> bool:
    """A checkpoint given as a path (a policy file's suffix or a folder in it) rather than a name: names are
    file stems, so no name is path-like."""
    return Path(spec).suffix.lower() in SUFFIXES or os.sep in spec or "/" in spec


def sweep_name(spec: str) -> str:
    """The name a sweep of `spec` is stored under: a path's stem, or the name itself."""
    return Path(spec).stem if path_like(spec) else spec


def check_not_a_path(spec: str, field: str, what: str) -> None:
    """A bare name that is also an existing path here is ambiguous: one line saying how to give either."""
    if not path_like(spec) and Path(spec).exists():
        raise BadInput(
            field,
            f"{spec!r} names {what} and is also a path here; give the file as ./{spec} (a path "
            "with a folder), or run the command from another folder to mean the name",
        )


def resolve_checkpoint(spec: str | None, robot: str | None = None, command: list[float] | None = None) -> Checkpoint:
    """A committed checkpoint by name (e.g. ``go1_v2``, ``ant_v0``) or the path of a policy file (.npz
    linear, .onnx network; None: the default its robot's spec folder names, `robot_policies.default_checkpoint`),
    checked against the robot (`robot`: a shipped name or spec path; None: the committed checkpoint's own
    robot, that of the committed checkpoint a file is a copy of, else the robot the file's metadata names),
    whose command term carries `command` when given (`commanded_robot`; a committed checkpoint whose record
    names the command it was trained for carries that one by default). Unknown is bad input, and so is a file
    its loader refuses (not a policy file, corrupt, or sizes that do not fit the robot), a file no robot is
    given or named for (``robot``), and a command the robot cannot take."""
    if spec is None:
        spec = default_checkpoint(None if robot is None else load_robot(robot).ref)
    path = policy_path(spec)
    committed = spec if _committed(spec) is not None else committed_copy(path)
    if robot is None and committed is not None:
        robot = robot_of_checkpoint_name(committed)
    if command is None and committed is not None:
        command = committed_record(committed).get("command")  # what the network was trained to follow
    if robot is None:
        robot = named_robot(path)
        if robot is None:
            raise BadInput(
                "robot",
                f"{spec} is not a committed checkpoint and names no robot in its metadata, so "
                "nothing says which robot it was trained on; pass --robot (a shipped robot or a spec "
                '.json), or write the robot\'s name into the file (docs/boundary.md, "Policies are files")',
            )
        if robot not in available_robots():
            raise BadInput(
                "robot",
                f"{spec} names robot {robot!r} in its metadata, which is not a shipped robot; pass "
                "--robot with that robot's spec .json",
            )
    rob = load_robot(robot)
    return checkpoint_on(spec, rob if command is None else commanded_robot(rob, command))


def _committed(spec: str) -> Path | None:
    return next(
        (CHECKPOINT_DIR / f"{spec}{sfx}" for sfx in SUFFIXES if (CHECKPOINT_DIR / f"{spec}{sfx}").is_file()), None
    )


def committed_copy(path: Path) -> str | None:
    """The committed checkpoint whose file has `path`'s bytes (a copy of go1_v2.onnx elsewhere is go1_v2: its
    robot and command are the committed record's), or None."""
    raw = path.read_bytes()
    return next((name for name in available_checkpoints() if _committed(name).read_bytes() == raw), None)


def policy_path(spec: str) -> Path:
    """The policy file a committed checkpoint's name or a path names (`BadInput` naming ``checkpoint`` for
    anything else)."""
    path = _committed(spec) or Path(spec)
    if not path.is_file() or path.suffix.lower() not in SUFFIXES:
        raise BadInput(
            "checkpoint",
            f"unknown checkpoint {spec!r}; expected one of {', '.join(available_checkpoints())} or the "
            "path of a .npz or .onnx policy file",
        )
    return path


def checkpoint_on(spec: str, rob: Robot) -> Checkpoint:
    """A committed checkpoint's name or a policy file's path, checked against a robot already built (a
    stored sweep's, which may be rebuilt from the store's copy of its spec); a file whose metadata names
    another robot is refused."""
    path = policy_path(spec)
    named = named_robot(path)
    if named is not None and named != rob.spec.name:
        raise BadInput(
            "robot",
            f"{spec} was trained on robot {named!r} (its metadata says so), not on "
            f"{rob.spec.name!r}; pass --robot {named} (or that robot's spec .json)",
        )
    robot_policy(path, rob)
    norm = obs_norm_file(path)
    return Checkpoint(
        path.stem, path, sha256_hex(path.read_bytes()), rob, None if norm is None else sha256_hex(norm.read_bytes())
    )


def robot_policy(path: str | Path, rob: Robot):
    """The policy file `path` opened for `rob`: checked against its observation and action sizes, an ONNX
    file's action output named by the spec's ``policy_output``."""
    if rob.spec.normalization is not None and obs_norm_file(path) is not None:
        raise BadInput(
            "checkpoint",
            f"{obs_norm_file(path)} normalises the observation that the robot spec's "
            "normalization already normalises; keep one of them",
        )
    return load_policy(path, rob.obs_dim, rob.act_dim, what=f"the {rob.spec.name} robot", output=rob.spec.policy_output)


def policy_record(ckpt: Checkpoint) -> dict:
    """The policy part of a rollout record: the policy file's kind and the checkpoint it names."""
    kind = SUFFIXES.get(ckpt.path.suffix.lower(), "linear")
    norm = {"obs_norm_sha256": ckpt.obs_norm_sha256} if ckpt.obs_norm_sha256 else {}
    return {"name": kind, "params": {"checkpoint": ckpt.name, "sha256": ckpt.sha256, **norm}}
