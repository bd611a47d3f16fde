"""The seed scheme: one pure function from (study, cell, seed index) to a world's seed, and the named seed ranges.

Nothing else derives seeds or holds a seed base (tests/rollout/test_seeds_ranges.py); the schemes and what each
range is for: docs/design.md, "Vocabulary" and "Module notes"."""

from __future__ import annotations

from dataclasses import dataclass

from policylab.errors import BadInput

STUDIES = ("breakout", "lava_leap", "boundary")


@dataclass(frozen=True)
class SeedRange:
    """Seeds ``[base, base + size)`` of one `study` reserved for one `purpose`; `shares` names the
    purposes of the same study it may overlap on purpose (docs/design.md, "Module notes")."""

    study: str
    purpose: str
    base: int
    size: int
    shares: tuple[str, ...] = ()

    @property
    def stop(self) -> int:
        return self.base + self.size

    def __contains__(self, seed: object) -> bool:
        return isinstance(seed, int) and self.base <= seed < self.stop

    def overlaps(self, other: SeedRange) -> bool:
        return self.base < other.stop and other.base < self.stop

    def first(self, n: int) -> tuple[int, ...]:
        """The range's first `n` seeds (``base + i``)."""
        if not 0 <= n <= self.size:
            raise BadInput(f"{self.study}.{self.purpose}", f"the range holds 0..{self.size} seeds, not {n}")
        return tuple(range(self.base, self.base + n))


RANGES: dict[tuple[str, str], SeedRange] = {
    (r.study, r.purpose): r
    for r in (
        SeedRange("breakout", "search", 0, 1_000),
        SeedRange("breakout", "eval", 0, 1_000, shares=("search",)),
        SeedRange("breakout", "screening", 1_000, 9_000),
        SeedRange("breakout", "validation", 10_000, 990_000),
        SeedRange("breakout", "exact_validation", 2_000_000, 1_000_000),
        SeedRange("breakout", "fidelity", 5_000_000, 1_000_000),
        SeedRange("breakout", "calibration", 7_000_000, 1_000_000),
        SeedRange("breakout", "transfer", 9_000_000, 100_000),
        SeedRange("breakout", "learn", 100_000_000, 900_000_000),
        SeedRange("breakout", "lockstep", 8_000_000, 1_000_000),
        SeedRange("breakout", "vector", 9_100_000, 100_000),
        SeedRange("breakout", "sb3", 9_200_000, 100_000),  # the SB3 adapter's lockstep games against SB3 on ALE
        SeedRange("breakout", "pixels", 9_300_000, 100_000),  # pixel (CNN) agents' lockstep games against ale-py
        SeedRange("breakout", "cnn_training", 9_400_000, 100_000),  # the test CNN's PPO games (benchmarks/)
        SeedRange("breakout", "v5_agreement", 1_000, 9_000, shares=("screening",)),  # a benchmark's game seeds
        SeedRange("lava_leap", "training", 0, 100),
        SeedRange("lava_leap", "test_floors", 2024, 1),
        SeedRange("lava_leap", "validation", 1_000, 100),
        SeedRange("boundary", "training", 0, 1_000_000),
        SeedRange("boundary", "evaluation", 900_000, 100_000, shares=("training",)),
        SeedRange("boundary", "sweep", 1_000_000, 2_000_000),
        SeedRange("boundary", "verify", 1_000_000, 2, shares=("sweep",)),
        SeedRange("boundary", "calibration", 3_000_000, 1_000_000),
        SeedRange("boundary", "robot", 4_000_000, 1_000),
        SeedRange("boundary", "reference", 4_100_000, 100_000),
        SeedRange("boundary", "probe", 5_000_000, 1_000_000),
        SeedRange("boundary", "learn", 100_000_000, 900_000_000),
        SeedRange("boundary", "search", 10**10, 10**10),
    )
}


def named_range(study: str, purpose: str) -> SeedRange:
    """The declared seed range of (`study`, `purpose`)."""
    try:
        return RANGES[(study, purpose)]
    except KeyError:
        known = ", ".join(p for s, p in RANGES if s == study) or "none"
        raise BadInput("seed_range", f"no seed range {purpose!r} for study {study!r}; known: {known}") from None


def seed_range_base(study: str, purpose: str) -> int:
    """First seed of (`study`, `purpose`): the default of the option that starts that range."""
    return named_range(study, purpose).base


BOUNDARY_SEED_OFFSET = seed_range_base("boundary", "sweep")
BOUNDARY_SEED_SCHEME = f"{BOUNDARY_SEED_OFFSET:_} + (mu_idx * n_push + push_idx) * seeds_per_cell + seed_idx"


SEARCH_ROWS = SEARCH_PER_ROW = 10_000  # a search block's rows, and a row's worlds seeded from the range
SEARCH_BLOCKS = RANGES[("boundary", "search")].size // (SEARCH_ROWS * SEARCH_PER_ROW)
SEARCH_SEED_SCHEME = (
    f"{seed_range_base('boundary', 'search'):_} + (block * {SEARCH_ROWS:_} + row) * {SEARCH_PER_ROW:_} + i"
)


def search_seed(block: int, row: int, index: int) -> int:
    """Seed of a search's `index`-th world seeded from the search range in `row` of seed `block`."""
    if not (0 <= block < SEARCH_BLOCKS and 0 <= row < SEARCH_ROWS and 0 <= index < SEARCH_PER_ROW):
        raise BadInput(
            "seed_block",
            f"block {block}, row {row}, world {index}: the search range holds "
            f"{SEARCH_BLOCKS} blocks of {SEARCH_ROWS:,} rows of {SEARCH_PER_ROW:,} worlds",
        )
    return seed_range_base("boundary", "search") + (block * SEARCH_ROWS + row) * SEARCH_PER_ROW + index


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
