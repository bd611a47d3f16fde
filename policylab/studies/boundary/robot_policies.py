"""What a robot's spec folder says about its policies (``<name>.policies.json``): the default checkpoint and
the ARS configs `policylab boundary train` trains (docs/boundary.md, "A robot is a spec folder")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Optional

from pydantic import Field

from policylab.config import StrictModel
from policylab.envs.robots.spec import DEFAULT_ROBOT, available, load_json_file, robot_ref, spec_path
from policylab.errors import BadInput

SUFFIX = ".policies.json"


class TrainSettings(StrictModel):
    """An ARS config as a spec folder gives it: everything but the robot, which is the folder's."""

    name: str
    reward: Literal["gait", "ant_v5"] = "gait"
    seed: int = 0
    iterations: int = Field(150, ge=1)
    directions: int = Field(16, ge=1)
    top: int = Field(8, ge=1)
    step_size: float = 0.02
    noise: float = 0.03
    horizon_steps: int = Field(200, ge=1)
    target_speed: float = 1.0
    lateral_cost: float = 0.5
    yaw_cost: float = 0.3
    alive_bonus: float = 0.5
    ctrl_cost: float = 0.02
    friction_range: Optional[tuple[float, float]] = (0.4, 1.0)  # None: the model's friction
    push_pct_max: float = 0.0  # 0: no pushes
    push_window_s: tuple[float, float] = (1.0, 4.0)
    push_duration_s: float = 0.5
    eval_every: int = 25
    eval_seeds: int = 32
    eval_steps: Optional[int] = Field(None, ge=1)  # None: horizon_steps
    save_every: int = 5
    init_from: Optional[str] = None  # fine-tune: start from this committed checkpoint, its whitening frozen
    # gait prior: the starting weights map the gait clock (phase sin, cos) to a trot: thigh action
    # prior_thigh * sin(psi), knee action prior_knee * cos(psi), psi = clock phase + leg offset
    prior_thigh: float = 0.0
    prior_knee: float = 0.0
    prior_thigh_idx: tuple[int, ...] = (1, 4, 7, 10)  # actuator order FL, FR, RL, RR (hip, thigh, calf)
    prior_knee_idx: tuple[int, ...] = (2, 5, 8, 11)
    prior_leg_offset: tuple[float, ...] = (0.0, 3.141592653589793, 3.141592653589793, 0.0)  # FL+RR vs FR+RL
    prior_worlds: int = 16


class TrainConfig(TrainSettings):
    """An ARS config on its robot, as training runs and records it."""

    # `envs.robots.spec.robot_ref` of the folder's robot: a shipped name, or a spec file's resolved path
    robot: str


class TrainEntry(StrictModel):
    """One config of a policies file's ``train``: what it trains, in words, and the ARS settings."""

    description: str = Field(min_length=1)  # what `--help` says the config trains
    config: TrainSettings


class RobotPolicies(StrictModel):
    """A ``<name>.policies.json`` (none beside a spec: no default named, no config)."""

    default_checkpoint: Optional[str] = Field(None, min_length=1)
    train: dict[str, TrainEntry] = Field(default_factory=dict)


def policies_path(robot: str | os.PathLike | None) -> Path:
    """Where a robot's policies file lies (a shipped name or a spec path; None: the default robot)."""
    spec = spec_path(robot)
    return spec.with_name(spec.stem + SUFFIX)


def robot_policies(robot: str | os.PathLike | None) -> RobotPolicies:
    """The validated policies of a robot's spec folder (none when it holds no policies file)."""
    path = policies_path(robot)
    return load_json_file(path, RobotPolicies, "robot policies") if path.is_file() else RobotPolicies()


def default_checkpoint(robot: str | os.PathLike | None) -> str:
    """The checkpoint a command plays on `robot` when none is named (None: no --robot, so the default robot's):
    the name its folder gives, or the absolute path of the file it gives, else ``<spec file name>_v0``."""
    named = robot_policies(robot).default_checkpoint
    if named is None:
        return f"{spec_path(robot).stem}_v0"
    if Path(named).suffix:
        return str(policies_path(robot).resolve().parent / named)
    return named


DEFAULT_CHECKPOINT = default_checkpoint(DEFAULT_ROBOT)


def _entries(robot: str | os.PathLike | None) -> Iterator[tuple[str, str, TrainEntry]]:
    """(config name, robot reference, entry) of the robot's configs; with no robot, every shipped robot's,
    whose names must not clash (`--config` alone picks one)."""
    seen: dict[str, str] = {}
    for r in [robot] if robot is not None else available():
        for key, entry in robot_policies(r).train.items():
            if key in seen:
                raise BadInput("config", f"the {seen[key]} and {r} robots' spec folders both name config {key!r}")
            seen[key] = str(r)
            yield key, robot_ref(r), entry


def train_configs(robot: str | os.PathLike | None = None) -> dict[str, TrainConfig]:
    """The configs ``--config`` names on `robot` (a shipped name or a spec path; None: every shipped robot's)."""
    return {key: TrainConfig(**entry.config.model_dump(), robot=ref) for key, ref, entry in _entries(robot)}


def train_help() -> str:
    """The shipped configs, each with what it trains, for ``--help``."""
    return ", ".join(f"{key} ({entry.description})" for key, _, entry in _entries(None))
