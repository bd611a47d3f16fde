"""The perturbation axes a boundary world can vary: one catalogue, as data.

Each `Axis` names the `World` field it sets, its unit, clamp range (outside is bad input, never
clamped), resolution (values are rounded to it), the value every world had before the axis existed
(`default`) and how it is applied to the simulation (`applied`, the sentence the docs and pages
quote). The catalogue is what `sweep` maps two of, what `search` searches any number of, and what
another page lists: `AXES` (in order), `axis(name)`, `Axis.check(value)` and `Axis.as_dict()`.

Keys stay valid: the first four axes (friction, push, direction, start) are in every world's key as
they always were; the later ones enter a world's key and record only when a world sets them to
something other than their default (`World.key`, `records.world_record`), so every world made before
them keeps its key byte for byte (tests/studies/boundary/test_axes.py pins them).

Light (stdlib only): the request models read it for their help and bounds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from policylab.errors import BadInput
from policylab.studies.boundary.constants import DEFAULT_DIR, DEFAULT_T0, MU_RANGE, MU_RES, PUSH_RANGE, T0_RANGE, T0_RES


@dataclass(frozen=True)
class Axis:
    name: str  # the axis's name on the command line and in records (`--row-axis payload`)
    field: str  # the `World` field it sets
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
        return asdict(self)


def _round_to(value: float, res: float) -> float:
    return round(round(value / res) * res, 6)


_G = "9.81 m/s^2 (the model's gravity)"
CATALOGUE: tuple[Axis, ...] = (
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
    ),
)
AXES: dict[str, Axis] = {a.name: a for a in CATALOGUE}
BY_FIELD: dict[str, Axis] = {a.field: a for a in CATALOGUE}
NEW_AXES: tuple[Axis, ...] = tuple(a for a in CATALOGUE if not a.always_keyed)  # keyed only when set


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
