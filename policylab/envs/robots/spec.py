"""A robot is a spec file, not code: a JSON document that tells the study everything it needs.

Every field: docs/boundary.md, "Spec reference"; any problem on loading is `BadInput` naming ``robot``."""

from __future__ import annotations

import json
import math
import os
from functools import cache
from pathlib import Path
from typing import Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from policylab.errors import BadInput

M = TypeVar("M", bound=BaseModel)

SPECS_DIR = Path(__file__).parent / "specs"
# No --robot and no --checkpoint: the robot of the boundary study's default policy (go1_v4, a PPO network
# trained on this spec, which its folder's go1_imu.policies.json names). A policy file given alone plays on
# the robot its metadata names, never on this one (studies/boundary/checkpoint.py).
DEFAULT_ROBOT = "go1_imu"
FIELD = "robot"

# observation terms: name -> width (None: depends on the model)
OBS_TERMS = {
    "qpos": None,  # qpos[start:stop]
    "qvel": None,  # qvel[start:stop]
    "height": 1,  # torso height (free joint z)
    "gravity_body": 3,  # gravity direction in the torso frame (unit vector)
    "linvel_body": 3,  # torso linear velocity in the torso frame
    "angvel_body": 3,  # torso angular velocity in the torso frame (free joint qvel[3:6])
    "joint_pos_rel": None,  # actuated joint angles minus the nominal pose
    "joint_vel": None,  # actuated joint velocities
    "phase": 2,  # sin, cos of 2 pi hz t (a gait clock; t = simulation time)
    "sensor": None,  # a named MuJoCo sensor's sensordata (its dim)
    "site_gravity": 3,  # gravity direction in a named site's frame (site_xmat.T @ [0, 0, -1])
    "site_linvel": 3,  # linear velocity of a named site's origin in the site's frame (a velocimeter's reading)
    "site_angvel": 3,  # angular velocity in a named site's frame (a gyro's reading)
    "last_action": None,  # the policy's previous action as it returned it (initial: zeros or `initial`)
    "command": None,  # a constant command vector (`value`), part of the protocol the sweep records
}
SITE_TERMS = ("site_gravity", "site_linvel", "site_angvel")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ObsTerm(_Strict):
    """One term of the observation: ``clip(scale * (raw - offset), -clip, clip)`` of the term's raw value."""

    term: Literal[
        "qpos",
        "qvel",
        "height",
        "gravity_body",
        "linvel_body",
        "angvel_body",
        "joint_pos_rel",
        "joint_vel",
        "phase",
        "sensor",
        "site_gravity",
        "site_linvel",
        "site_angvel",
        "last_action",
        "command",
    ]
    start: Optional[int] = Field(None, ge=0)
    stop: Optional[int] = Field(None, ge=0)
    hz: Optional[float] = Field(None, gt=0, le=100)
    name: Optional[str] = Field(None, min_length=1)  # sensor: the sensor's name; site_*: the site's name
    initial: Optional[list[float]] = None  # last_action: its value before the first action (default zeros)
    value: Optional[list[float]] = Field(None, min_length=1)  # command: the constant vector
    scale: float = Field(1.0, gt=0)
    offset: Union[float, list[float]] = 0.0  # subtracted before scaling (one value, or one per entry)
    clip: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _fields_fit_term(self) -> ObsTerm:
        if (self.start is not None or self.stop is not None) and self.term not in ("qpos", "qvel"):
            raise ValueError(f"start/stop only apply to qpos and qvel, not {self.term}")
        if (self.hz is None) != (self.term != "phase"):
            raise ValueError("phase needs hz (and only phase takes it)")
        if (self.name is None) == (self.term in ("sensor", *SITE_TERMS)):
            raise ValueError(f"{self.term} {'needs' if self.name is None else 'takes no'} name (a sensor or site name)")
        if self.initial is not None and self.term != "last_action":
            raise ValueError("initial only applies to last_action")
        if (self.value is None) == (self.term == "command"):
            raise ValueError("command needs value (and only command takes it)")
        return self


class Control(_Strict):
    mode: Literal["torque", "pd", "position"]
    action_clip: Optional[float] = Field(1.0, gt=0)  # null: the action unclipped
    action_scale: Optional[float] = Field(None, gt=0)  # pd: radians per unit action
    kp: Optional[float] = Field(None, gt=0)
    kd: Optional[float] = Field(None, ge=0)
    force_limits: Optional[list[float]] = None  # pd: |torque| per actuator, N m

    @model_validator(mode="after")
    def _pd_has_gains(self) -> Control:
        if self.mode == "pd" and (self.kp is None or self.kd is None or self.action_scale is None):
            raise ValueError("pd control needs kp, kd and action_scale")
        if self.mode == "position" and self.action_scale is None:
            raise ValueError("position control needs action_scale")
        if self.mode != "pd" and (self.kp is not None or self.kd is not None):
            raise ValueError(f"{self.mode} control takes no kp/kd (position control uses the MJCF's gains)")
        if self.force_limits is not None and any(f <= 0 for f in self.force_limits):
            raise ValueError("force_limits must be positive")
        return self


class ModelOverrides(_Strict):
    iterations: Optional[int] = Field(None, ge=1, le=1000)
    ls_iterations: Optional[int] = Field(None, ge=1, le=1000)
    integrator: Optional[Literal["euler", "rk4", "implicit", "implicitfast"]] = None
    cone: Optional[Literal["pyramidal", "elliptic"]] = None
    impratio: Optional[float] = Field(None, gt=0)
    eulerdamp: Optional[bool] = None
    contact_geoms: Optional[list[str]] = None  # only these geoms (and the floor) collide
    floor_geom: Optional[str] = None
    contact_condim: Optional[Literal[1, 3, 4, 6]] = None
    joint_damping: Optional[float] = Field(None, ge=0)


class Reset(_Strict):
    qpos_uniform: float = Field(0.0, ge=0, le=1.0)
    qpos_noise_on: Literal["all", "joints"] = "all"
    qvel_normal: float = Field(0.0, ge=0, le=10.0)


class Failure(_Strict):
    torso_z_fail_m: float = Field(gt=0)
    uprightness_fail: float = Field(ge=-1, le=1)
    rule_version: int = Field(ge=1)
    frozen: str = ""
    calibration: dict = Field(default_factory=dict)


class History(_Strict):
    """The policy sees its last `length` observations stacked (before the first step: the reset
    observation repeated)."""

    length: int = Field(ge=1, le=64)
    newest_first: bool = False


class Normalization(_Strict):
    """Whitening outside the network: the policy gets (observation - mean) / std, over the stacked vector."""

    mean: list[float] = Field(min_length=1)
    std: list[float] = Field(min_length=1)

    @model_validator(mode="after")
    def _sizes(self) -> Normalization:
        if len(self.mean) != len(self.std):
            raise ValueError(f"mean has {len(self.mean)} values, std {len(self.std)}")
        if any(s <= 0 for s in self.std):
            raise ValueError("std must be positive")
        return self


class Render(_Strict):
    camera_distance: float = Field(3.5, gt=0)
    camera_elevation: float = -20.0
    geom_groups: list[int] = [0, 1, 2]  # the geom groups clips draw


class RobotSpec(_Strict):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    mjcf: str = Field(min_length=1)
    env: str = Field(min_length=1)  # the name records carry (e.g. gymnasium-mujoco/Ant-v5)
    torso_body: str
    push_body: str
    friction_geoms: Union[Literal["all"], list[str]]
    keyframe: Optional[str] = None
    model: ModelOverrides = ModelOverrides()
    control: Control
    physics_dt: float = Field(gt=0, le=0.1)
    control_dt: float = Field(gt=0, le=1.0)
    reset: Reset = Reset()
    observation: list[ObsTerm] = Field(min_length=1)
    history: Optional[History] = None
    normalization: Optional[Normalization] = None
    joint_order: Optional[list[str]] = Field(None, min_length=1)  # the policy's joints, by MJCF joint name
    policy_output: Optional[str] = Field(None, min_length=1)  # the ONNX output that holds the action
    failure: Failure
    stop_at_failure: bool = False
    render: Render = Render()
    license: str = ""

    @field_validator("friction_geoms")
    @classmethod
    def _some_geoms(cls, v):
        if isinstance(v, list) and not v:
            raise ValueError("name at least one geom, or 'all'")
        return v

    @model_validator(mode="after")
    def _steps_divide(self) -> RobotSpec:
        ratio = self.control_dt / self.physics_dt
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError(f"control_dt {self.control_dt} must be a whole multiple of physics_dt {self.physics_dt}")
        return self

    @property
    def frame_skip(self) -> int:
        return int(round(self.control_dt / self.physics_dt))

    @property
    def command(self) -> Optional[list[float]]:
        """The command vector the observation carries (None: no command term)."""
        return next((t.value for t in self.observation if t.term == "command"), None)


def available() -> list[str]:
    """The shipped robots: each folder under specs/ with a <name>.json."""
    return sorted(p.name for p in SPECS_DIR.iterdir() if (p / f"{p.name}.json").is_file())


def robot_ref(name_or_path: str | os.PathLike | None = None) -> str:
    """What records keep to rebuild a robot: a shipped robot's name (None: the default robot), or the
    resolved path of a spec file."""
    s = str(DEFAULT_ROBOT if name_or_path is None else name_or_path)
    if "/" not in s and not s.endswith(".json") and (SPECS_DIR / s / f"{s}.json").is_file():
        return s
    return str(spec_path(s).resolve())


def spec_path(name_or_path: str | os.PathLike | None) -> Path:
    """The spec file of a shipped robot name (None: the default robot) or a path to a .json spec."""
    if name_or_path is None:
        name_or_path = DEFAULT_ROBOT
    s = str(name_or_path)
    shipped = SPECS_DIR / s / f"{s}.json"
    if "/" not in s and not s.endswith(".json") and shipped.is_file():
        return shipped
    p = Path(s)
    if not p.is_file():
        raise BadInput(
            FIELD, f"unknown robot {s!r}; expected one of {', '.join(available())} or the path of a .json robot spec"
        )
    return p


def first_error(exc: ValidationError) -> str:
    """A validation error's first problem as one line, ``where: what`` (a bad file's `BadInput` says no more)."""
    e = exc.errors()[0]
    where = ".".join(str(x) for x in e["loc"]) or "(top level)"
    return f"{where}: {e['msg']}"


@cache
def _load_cached(path: str, mtime_ns: int, size: int, model: type[BaseModel], what: str) -> BaseModel:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(FIELD, f"cannot read {what} {p} ({exc})") from None
    except json.JSONDecodeError as exc:
        raise BadInput(FIELD, f"{what} {p} is not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise BadInput(FIELD, f"{what} {p} must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadInput(FIELD, f"{what} {p}: {first_error(exc)}") from None


def load_json_file(path: str | os.PathLike, model: type[M], what: str) -> M:
    """`model` validated from the JSON file at `path`, read once per version of the file; a bad file is one
    `BadInput` naming the robot field and `what` the file is ("robot spec", "robot policies")."""
    p = Path(path).resolve()
    st = p.stat()
    return _load_cached(str(p), st.st_mtime_ns, st.st_size, model, what)


def load_spec(path: str | os.PathLike) -> RobotSpec:
    """The validated spec in `path` (schema only; `batch.Robot` checks it against the model)."""
    return load_json_file(path, RobotSpec, "robot spec")


def mjcf_path(spec: RobotSpec, path: Path) -> Path:
    """Where the spec's MJCF lies: relative to the spec file, or inside the gymnasium package."""
    if spec.mjcf.startswith("gymnasium:"):
        import gymnasium

        return Path(gymnasium.__file__).parent / spec.mjcf.removeprefix("gymnasium:")
    p = Path(spec.mjcf)
    return p if p.is_absolute() else (Path(path).resolve().parent / p)


def finite(x: float) -> bool:
    return math.isfinite(x)
