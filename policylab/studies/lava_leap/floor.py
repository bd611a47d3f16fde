"""The floor: 40 tiles, lava in channels of width 1 or 2 at least 2 safe tiles apart, and its generator.

`new_floor(rng)` draws exactly one uniform per tile; the generator and its parameters' scan: docs/lava_leap.md,
"Choices the original left open", item 1."""

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
