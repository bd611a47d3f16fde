"""The perturbation axes a boundary world can vary: one catalogue, as data (docs/boundary.md, "Perturbation axes").

Light (stdlib only): the request models read it for their help and bounds."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from policylab.errors import BadInput
from policylab.studies.boundary.constants import DEFAULT_DIR, DEFAULT_T0, MU_RANGE, MU_RES, PUSH_RANGE, T0_RANGE, T0_RES


@dataclass(frozen=True)
class Axis:
    name: str  # the axis's name on the command line and in records (`--row-axis payload`)
    field: str  # the name a world's value of it has: in records, on the probe's form, as `World` attribute
    label: str  # axis label on charts
    unit: str
    lo: float
    hi: float
    resolution: float
    default: float  # the value of every world that does not set it
    key_name: str  # its name in a world's cache key
    key_format: str  # how its value is written there
    always_keyed: bool  # in every key (the original four) or only when set
    applied: str  # how the simulation applies it
    # apply(record, rows, values): write `values` (array) of the worlds `rows` (indices) into the batch's
    # `Perturbations` record; called once per batch, in catalogue order, for the worlds that set the axis
    apply: Callable[[Any, Any, Any], None] = field(compare=False, repr=False)
    periodic: bool = False  # a direction: taken modulo 360, never out of range

    def check(self, value: float, field: str | None = None) -> float:
        """`value` rounded to the resolution; bad input (naming `field`, default the axis) when outside the range."""
        v = float(value)
        if not math.isfinite(v):
            raise BadInput(field or self.name, f"{self.name} must be a finite number, got {value}")
        if self.periodic:
            return _round_to(v % 360.0, self.resolution) % 360.0
        if not (self.lo <= v <= self.hi):
            raise BadInput(
                field or self.name,
                f"{self.name} {value:g} {self.unit} outside the clamp range {self.lo:g}-{self.hi:g}".replace("  ", " "),
            )
        return _round_to(v, self.resolution)

    def is_set(self, value: float) -> bool:
        """Whether a world's `value` of this axis enters its key (always, for the original four)."""
        return self.always_keyed or value != self.default

    def key_part(self, value: float) -> str:
        return f"{self.key_name}={format(value, self.key_format)}"

    def as_dict(self) -> dict:
        """The axis as data (what pages and records show; not its apply function)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "apply"}


def _round_to(value: float, res: float) -> float:
    return round(round(value / res) * res, 6)


# -- how each axis applies itself: writes its worlds' values into the batch's perturbation record --------


def _friction(rec, rows, values) -> None:
    rec.mu[rows] = values


def _push(rec, rows, values) -> None:
    """A push in %BW: a fraction of the world's weight (the robot's, until a payload adds its own)."""
    rec.push[rows] = values / 100.0
    rec.push_unit_n[rows] = rec.robot.body_weight_n()


def _push_dir(rec, rows, values) -> None:
    rec.dir_deg[rows] = values


def _push_t0(rec, rows, values) -> None:
    rec.push_k0[rows] = [int(round(float(v) / rec.robot.control_dt)) for v in values]


def _payload(rec, rows, values) -> None:
    """Mass on the torso, and the weight a %BW push is of (after `_push`, in catalogue order)."""
    rec.model_field("body_mass")[rows, rec.robot.torso] += values
    rec.push_unit_n[rows] = [rec.robot.body_weight_n(float(v)) for v in values]


def _motor(rec, rows, values) -> None:
    rec.model_field("actuator_gainprm")[rows, :, 0] *= values[:, None]
    rec.model_field("actuator_biasprm")[rows, :, :3] *= values[:, None, None]
    rec.model_field("actuator_forcerange")[rows] *= values[:, None, None]


def _delay(rec, rows, values) -> None:
    rec.action_delay[rows] = values


def _slope(rec, rows, values) -> None:
    """Gravity turned about the world y axis by fdlibm's sin and cos (`portable_math`), so its bytes do not
    depend on the CPU."""
    from policylab import portable_math

    g = float(-rec.robot.base.opt.gravity[2])
    gravity = rec.model_field("opt.gravity")
    for i, v in zip(rows, values, strict=True):
        a = float(v) * (math.pi / 180.0)
        gravity[i] = (-g * portable_math.sin(a), 0.0, -g * portable_math.cos(a))


def _kick(rec, rows, values) -> None:
    rec.kick_mps[rows] = values


_G = "9.81 m/s^2 (the model's gravity)"
_BUILT_IN: tuple[Axis, ...] = (
    Axis(
        "friction",
        "mu",
        "friction mu",
        "",
        *MU_RANGE,
        MU_RES,
        1.0,
        "mu",
        ".4f",
        True,
        "sliding friction of the robot spec's friction geoms (the Go1: its feet and the floor; MuJoCo takes a "
        "contact's larger value), written per world into the batch's geom_friction",
        apply=_friction,
    ),
    Axis(
        "push",
        "push_pct",
        "lateral push (% bodyweight)",
        "%BW",
        *PUSH_RANGE,
        0.5,
        0.0,
        "push",
        ".2f",
        True,
        "a constant horizontal force of push/100 x (robot mass + payload) x g on the push body's centre of mass "
        "(xfrc_applied) for 0.5 s; %BW is of the weight including any payload (a grid rounds its evenly spaced "
        "values to whole %BW)",
        apply=_push,
    ),
    Axis(
        "push_dir",
        "push_dir",
        "push direction (deg)",
        "deg",
        0.0,
        355.0,
        5.0,
        DEFAULT_DIR,
        "dir",
        ".2f",
        True,
        "counter-clockwise from the torso's heading at the push onset (90 = to the robot's left), then fixed in "
        "the world frame",
        apply=_push_dir,
        periodic=True,
    ),
    Axis(
        "push_t0",
        "push_t0",
        "push start (s)",
        "s",
        *T0_RANGE,
        T0_RES,
        DEFAULT_T0,
        "t0",
        ".2f",
        True,
        "the control step the push starts at, push_t0 / control_dt",
        apply=_push_t0,
    ),
    Axis(
        "payload",
        "payload_kg",
        "torso payload (kg)",
        "kg",
        0.0,
        10.0,
        0.1,
        0.0,
        "payload",
        ".2f",
        False,
        "mass added to the torso body at its centre of mass (a point mass: the inertia tensor is unchanged), "
        "then MuJoCo's derived constants recomputed for that world (mj_setConst); the push's %BW counts it",
        apply=_payload,
    ),
    Axis(
        "motor",
        "motor_scale",
        "motor strength (x nominal)",
        "x",
        0.5,
        1.5,
        0.01,
        1.0,
        "motor",
        ".3f",
        False,
        "every actuator's force law scaled: gain and bias (for position servos kp and kd, so the same target "
        "gives scale x the torque) and the force limits",
        apply=_motor,
    ),
    Axis(
        "delay",
        "action_delay",
        "action delay (control steps)",
        "steps",
        0.0,
        5.0,
        1.0,
        0.0,
        "delay",
        ".0f",
        False,
        "the action the policy computes at control step k is applied at step k + delay; before the first one "
        "arrives the robot holds the zero action (the home pose under pd and position control, no torque under "
        "torque control); the policy's own previous-action input is what it computed",
        apply=_delay,
    ),
    Axis(
        "slope",
        "slope_deg",
        "floor slope (deg)",
        "deg",
        -10.0,
        10.0,
        0.5,
        0.0,
        "slope",
        ".2f",
        False,
        f"gravity tilted, not the floor: gravity of {_G} turned by slope degrees about the world y axis, so the "
        "flat floor acts as a slope rising along +x (the robot's initial walking direction: uphill for positive "
        "slopes); heights, uprightness and the failure rule stay measured from the floor, and the observation's "
        "gravity term (computed from the torso's orientation against the floor's normal) does not see the tilt",
        apply=_slope,
    ),
    Axis(
        "kick",
        "kick_mps",
        "velocity kick (m/s)",
        "m/s",
        0.0,
        3.0,
        0.01,
        0.0,
        "kick",
        ".2f",
        False,
        "an instantaneous change of the robot's horizontal velocity by kick m/s at the push start, in the push's "
        "direction (push_dir from the torso's heading at onset): added once to the free joint's world-frame linear "
        "velocity after the policy has acted on that step's state and before its physics, so every body gains it "
        "and the joints and spin are unchanged (the push of the common trainers' protocols; with or without a "
        "push)",
        apply=_kick,
    ),
)
AXES: dict[str, Axis] = {a.name: a for a in _BUILT_IN}  # the catalogue, in order; grows by `register`
CATALOGUE = AXES.values()  # every axis, in order (a live view: a registered axis is in it)


def register(a: Axis) -> Axis:
    """Add `a` to the catalogue, after the others: every stage (grids, search, records, keys, the batch,
    reduce, report, the probe's form) takes it from there. It joins a world's key only where a world sets
    it, so it must not be keyed always (every existing key stands), and its name, field and key name must
    be new."""
    if a.always_keyed:
        raise ValueError(f"{a.name}: a new axis is keyed only where a world sets it (always_keyed=False)")
    if not a.lo <= a.default <= a.hi:
        raise ValueError(f"{a.name}: default {a.default:g} outside {a.lo:g}-{a.hi:g}")
    for attr in ("name", "field", "key_name"):
        if any(getattr(a, attr) == getattr(b, attr) for b in CATALOGUE):
            raise ValueError(f"{a.name}: an axis with {attr} {getattr(a, attr)!r} is in the catalogue")
    AXES[a.name] = a
    return a


def by_field(name: str) -> Axis:
    """The axis whose values a world records as `name`."""
    return next(a for a in CATALOGUE if a.field == name)


def later_axes() -> list[Axis]:
    """The axes a world's key and record name only where it sets them (all but the original four)."""
    return [a for a in CATALOGUE if not a.always_keyed]


def names() -> list[str]:
    return list(AXES)


def axis(name: str, field: str = "axis") -> Axis:
    """The catalogue's axis `name`; bad input naming `field` otherwise."""
    try:
        return AXES[name]
    except KeyError:
        raise BadInput(field, f"unknown axis {name!r}; expected one of {', '.join(AXES)}") from None


def lattice(a: Axis, lo: float, hi: float, n: int, field: str, check=None) -> tuple[float, ...]:
    """`n` values of axis `a` evenly spaced over [lo, hi], checked and rounded (by `check(value, field)`,
    default the axis's own); values that collide at the resolution are bad input."""
    check = check or a.check
    if n < 1:
        raise BadInput(field, "needs at least 1 value")
    if n > 1 and not lo < hi:
        raise BadInput(field, f"range {lo:g}-{hi:g} must be increasing")
    check(lo, field)
    check(hi, field)
    import numpy as np  # here, not at the top: request models import this module, and --help loads no numpy

    values = tuple(check(float(v), field) for v in (np.linspace(lo, hi, n) if n > 1 else [lo]))
    if len(set(values)) != n:
        raise BadInput(field, f"{n} values in {lo:g}-{hi:g} collide at the resolution {a.resolution:g}")
    return values


def parse_axis(spec: str, field: str, check=None) -> tuple[Axis, tuple[float, ...]]:
    """One ``AXIS=LO:HI:N`` (evenly spaced) or ``AXIS=V1,V2,...``: the axis and its values, each checked and
    rounded (by `check(axis, value, field)`, default the axis's own); values repeating at the resolution
    are bad input."""
    name, sep, values = spec.partition("=")
    a = axis(name.strip(), field)
    one = (lambda v, f: check(a, v, f)) if check else a.check
    if not sep:
        raise BadInput(field, f"{spec!r}: expected AXIS=LO:HI:N or AXIS=V1,V2,...")
    try:  # the numbers first, so that a value out of range is reported as such (BadInput is a ValueError)
        lo, hi, n = values.split(":") if ":" in values else (None, None, None)
        numbers = (float(lo), float(hi), int(n)) if ":" in values else [float(v) for v in values.split(",")]
    except ValueError:
        raise BadInput(field, f"{spec!r}: expected AXIS=LO:HI:N or AXIS=V1,V2,...") from None
    vals = lattice(a, *numbers, field, one) if ":" in values else tuple(one(v, field) for v in numbers)
    if len(set(vals)) != len(vals):
        raise BadInput(field, f"{spec!r}: values repeat at the axis's resolution {a.resolution:g}")
    return a, vals


def parse_rows(specs: list[str], field: str = "rows") -> list[tuple[Axis, tuple[float, ...]]]:
    """``AXIS=LO:HI:N`` or ``AXIS=V1,V2,...`` per axis (`parse_axis`), each axis once; push is the axis a
    search searches, never a row axis."""
    out, seen = [], set()
    for spec in specs:
        a, vals = parse_axis(spec, field)
        if a.name in seen or a.name == "push":
            raise BadInput(
                field, f"{spec!r}: give each axis once as AXIS=LO:HI:N or AXIS=V1,V2 (push is the searched axis)"
            )
        seen.add(a.name)
        out.append((a, vals))
    return out


def fixed_axes(specs: list[str], rows: list[tuple[Axis, tuple[float, ...]]]) -> dict[str, float]:
    """``AXIS=V`` per axis held at one value in every row (not a row axis, not push)."""
    fixed = {}
    for a, vals in parse_rows(specs, "set"):
        if len(vals) != 1 or a.name in {r.name for r, _ in rows}:
            raise BadInput("set", f"{a.name}: give one value (AXIS=V) of an axis that is not a row axis")
        fixed[a.name] = vals[0]
    return fixed
