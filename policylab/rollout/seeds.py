"""The seed scheme: one pure function from (study, cell, seed index) to the seed a world uses.

Every producer (sweeps, evals, training loops) and every consumer (replays, clips, audits) calls
`world_seed`; nothing else derives seeds. Tests check it against stored records, so a change here
that would silently simulate different worlds fails loudly.

Schemes
- ``breakout``: episode ``i`` of a run started at seed ``S`` uses ``S + i`` (the original's rule);
  the cell is unused (0).
- ``lava_leap``: ``base + seed_index`` (training seeds 0..4 in the original).
- ``boundary``: ``1_000_000 + rollout_index`` with
  ``rollout_index = cell * seeds_per_cell + seed_index`` and ``cell = mu_idx * n_push + push_idx``
  (the failure-boundary spec; the offset keeps sweep seeds away from training seeds).
"""

from __future__ import annotations

from policylab.errors import BadInput

BOUNDARY_SEED_OFFSET = 1_000_000
STUDIES = ("breakout", "lava_leap", "boundary")


def world_seed(study: str, cell: int, seed_index: int, *, seeds_per_cell: int = 1, base: int = 0) -> int:
    """Seed of the world at (`cell`, `seed_index`) of `study`; pure and total over valid inputs."""
    if cell < 0 or seed_index < 0 or base < 0:
        raise BadInput("seed", "cell, seed index and base must be non-negative")
    if study == "breakout" or study == "lava_leap":
        if cell != 0:
            raise BadInput("cell", f"study {study!r} has a single cell (0)")
        return base + seed_index
    if study == "boundary":
        if seeds_per_cell <= 0 or seed_index >= seeds_per_cell:
            raise BadInput("seed_index", f"must be in [0, {seeds_per_cell})")
        return BOUNDARY_SEED_OFFSET + base + cell * seeds_per_cell + seed_index
    raise BadInput("study", f"unknown study {study!r}; expected one of {', '.join(STUDIES)}")


def seed_range(spec: str) -> list[int]:
    """Parse a seed range such as ``0-5`` (inclusive) or ``3`` or ``0,2,7`` into a sorted list."""
    seeds: set[int] = set()
    try:
        for part in spec.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                seeds.update(range(lo, hi + 1))
            else:
                seeds.add(int(part))
    except ValueError:
        raise BadInput("seeds", f"{spec!r} is not a seed range like 0-5 or 1,3,7") from None
    if not seeds or min(seeds) < 0:
        raise BadInput("seeds", f"{spec!r}: seeds must be non-negative and at least one")
    return sorted(seeds)
