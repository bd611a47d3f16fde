"""Fixed numbers of the failure-boundary study, shared by the request models and the stages.

Light (no numpy, no MuJoCo), so `policylab boundary --help` stays fast."""

from __future__ import annotations

from pathlib import Path

# The committed checkpoints (ant_v*, go1_v*); a robot's spec folder names the one it plays by default
# (robot_policies.py).
CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"


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
