"""Fixed numbers of the failure-boundary study that the request models and the stages share.

A light module (no numpy, no MuJoCo): `requests.py` takes its defaults and bounds from here so that
`policylab boundary --help` stays fast, and the stages (world.py, protocol.py, ars.py, ...) import the
same names, so each number is declared once.
"""

from __future__ import annotations

from pathlib import Path

CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"  # the committed checkpoints (ant_v*, go1_v*)

# The policy a command plays when none is named (docs/boundary.md, "Robots and policies by default"):
# with no --robot, DEFAULT_CHECKPOINT (the PPO network) on the robot and command its training record
# names, which is the default robot (envs/robots/spec.py DEFAULT_ROBOT); with --robot R, R's own
# committed policy below (go1_v0/ant_v0 reproduce the numbers measured before the PPO networks existed); with a
# spec file of one's own, <its name>_v0.
DEFAULT_CHECKPOINT = "go1_v4"
ROBOT_CHECKPOINTS = {"go1_imu": DEFAULT_CHECKPOINT, "go1": "go1_v0", "ant": "ant_v0"}


def default_checkpoint(robot_name: str | None) -> str:
    """The committed checkpoint a command plays when none is named, for the robot named (None: no --robot)."""
    if robot_name is None:
        return DEFAULT_CHECKPOINT
    return ROBOT_CHECKPOINTS.get(robot_name, f"{robot_name}_v0")


# A world's clamp ranges and resolutions (world.py checks and rounds with them; out of range is bad
# input, never silently clamped).
MU_RANGE = (0.05, 2.0)  # sliding friction of every geom
PUSH_RANGE = (0.0, 300.0)  # push magnitude, % bodyweight
T0_RANGE = (0.5, 4.0)  # push start, s
MU_RES, PUSH_RES, DIR_RES, T0_RES = 0.01, 1.0, 5.0, 0.1

# The spec's default grid: friction lo, hi, count; push lo, hi, count; direction (90 = the robot's
# left, relative to its heading at onset) and start of the push.
DEFAULT_MU = (0.05, 1.00, 20)
DEFAULT_PUSH = (10.0, 200.0, 20)
DEFAULT_SEEDS_PER_CELL = 16
DEFAULT_DIR = 90.0
DEFAULT_T0 = 2.0

# The protocol of a rollout.
HORIZON_S = 5.0
PUSH_DURATION_S = 0.5


def axis_size(value_range: tuple[float, float], res: float) -> int:
    """How many distinct values a grid axis can hold over `value_range` at resolution `res`."""
    return int(round((value_range[1] - value_range[0]) / res)) + 1


# The robot of a stored sweep (or an analysis of one) that records none: the Ant, the study's only
# robot when such stores were written. Every reader of a store's or analysis's robot falls back to
# this one name; a command with no --robot uses the default robot instead (go1_imu, envs/robots/spec.py).
UNRECORDED_ROBOT = "ant"
