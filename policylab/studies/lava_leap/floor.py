"""The floor: 40 tiles, lava in channels, and the generator that draws one.

Rules (the post's): tiles 0..39, start 0, exit dock 39. Lava comes in channels (maximal runs of lava)
of width 1 or 2, separated by at least 2 safe tiles. Tiles 1..3 are never lava, so every run's
first view is the same on every floor; tile 39 is never lava.

The generator is a choice the original leaves open (docs/lava_leap.md). This one is a *tile walk over a fixed
block of uniforms*: `new_floor(rng)` draws exactly ``u = rng.random(FLOOR)`` (one uniform per tile)
and walks t = FIRST..LAST_START: ``u[t] < P_CHANNEL * P_WIDE`` starts a 2-wide channel,
``u[t] < P_CHANNEL`` a 1-wide one, and the walk then skips the channel and the 2-tile minimum gap;
otherwise it moves to t + 1. Why this shape:

- a fixed number of draws per floor keeps every stream position independent of the floor's
  content, so a training update's randomness is one contiguous block (one array for the whole
  training run, one numba kernel), and floors can be drawn in bulk (`new_floors`);
- its parameters (two probabilities, first tile, last start) are the whole family. The values
  below come from a scan of that family (benchmarks/lava_leap_generator_search.py; results in
  README.md): among the settings meeting every constraint (docs/lava_leap.md), the one
  with the smallest first tile that works (5) and wide and narrow channels equally likely. With them floor seed 8 is the first seed with
  6 channels, 2 of them 2-wide; untrained 0.268 and ceiling 0.581 sit inside the E2 chart's
  0.24..0.6; and the training-dependent constraints (E3a, E4, E5, the slow seed) hold. FIRST = 5
  (tiles 1..4 safe) and LAST_START = 33 (a safe run-out before the dock) are part of that choice:
  with FIRST = 4 only one setting met the seed-8 and chart-range constraints, and it fails the E4
  clip.
"""

from __future__ import annotations

import numba
import numpy as np

FLOOR = 40  # tiles 0..39
EXIT = FLOOR - 1  # the exit dock; score = final tile / EXIT
STEP, LEAP = 0, 1
VIEW = 3  # the sensors see tiles pos+1..pos+3
FIRST = 5  # first tile that may hold lava (tiles 1..4 are always safe)
MIN_GAP = 2  # safe tiles between two channels, at least
FLOOR_DRAWS = FLOOR  # uniforms one floor consumes (one per tile)

# The generator's parameters (see the module docstring and the README for how they were chosen).
P_CHANNEL = 0.27  # P(a channel starts at a tile the walk visits)
P_WIDE = 0.5  # P(that channel is 2 wide)
LAST_START = 33  # no channel starts after tile 33: a safe run-out of at least 4 tiles before the dock


@numba.njit(cache=True)
def floor_from_uniforms(u, p_channel, p_wide, first, last_start):
    """The floor a block of FLOOR uniforms describes (bool, True = lava).

    Walking t = first..last_start: u[t] < p_channel * p_wide starts a 2-wide channel,
    u[t] < p_channel a 1-wide one; after a channel the walk skips it and the minimum gap.
    """
    lava = np.zeros(FLOOR, dtype=np.bool_)
    t = first
    while t <= last_start:
        if u[t] < p_channel:
            width = 2 if u[t] < p_channel * p_wide else 1
            for k in range(width):
                lava[t + k] = True
            t += width + MIN_GAP
        else:
            t += 1
    return lava


def new_floor(rng: np.random.Generator) -> np.ndarray:
    """Draw one floor; consumes exactly FLOOR_DRAWS uniforms from `rng`."""
    return floor_from_uniforms(rng.random(FLOOR_DRAWS), P_CHANNEL, P_WIDE, FIRST, LAST_START)


def new_floors(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """`n` successive `new_floor(rng)` calls (the same stream, drawn in one block)."""
    block = rng.random((n, FLOOR_DRAWS))
    return [floor_from_uniforms(block[i], P_CHANNEL, P_WIDE, FIRST, LAST_START) for i in range(n)]


def channels(lava: np.ndarray) -> list[list[int]]:
    """Channels of a floor as [start, width], left to right."""
    out, t = [], 0
    while t < FLOOR:
        if lava[t]:
            w = 1
            while t + w < FLOOR and lava[t + w]:
                w += 1
            out.append([t, w])
            t += w
        else:
            t += 1
    return out


def floor_info(lava: np.ndarray) -> dict:
    """Lava tiles, channels and a one-line drawing of a floor, for the JSON files."""
    return dict(
        lava_tiles=[int(t) for t in np.flatnonzero(lava)],
        channels=channels(lava),
        layout="".join("#" if x else "." for x in lava),
    )


def is_valid_floor(lava: np.ndarray) -> bool:
    """Whether a floor obeys the rules: length, safe start/view/exit, widths 1..2, gaps >= 2."""
    lava = np.asarray(lava, dtype=bool)
    if lava.shape != (FLOOR,) or lava[:FIRST].any() or lava[EXIT]:
        return False
    chans = channels(lava)
    if any(w > 2 for _, w in chans):
        return False
    return all(b - (a + w) >= MIN_GAP for (a, w), (b, _) in zip(chans, chans[1:]))
