"""The seed scheme: one pure function from (study, cell, seed index) to the seed a world uses, and
the named seed ranges every producer draws its seeds from.

Every producer (sweeps, evals, training loops) and every consumer (replays, clips, audits) calls
`world_seed` or takes its base from a named range here; nothing else derives seeds or holds a seed
base (tests/rollout/test_seeds_ranges.py scans the package for seed literals). Tests check the scheme
against stored records, so a change here that would silently simulate different worlds fails loudly.

Schemes
- ``breakout``: episode ``i`` of a run started at seed ``S`` uses ``S + i`` (the original's rule);
  the cell is unused (0).
- ``lava_leap``: ``base + seed_index`` (training seeds 0..4 in the original; validation seeds
  1000.. for the learning-rate check).
- ``boundary``: ``1_000_000 + rollout_index`` with
  ``rollout_index = cell * seeds_per_cell + seed_index`` and ``cell = mu_idx * n_push + push_idx``
  (the failure-boundary spec; the offset keeps sweep seeds away from training seeds).

Named seed ranges (``RANGES``; half-open ``[base, base + size)``). Within a study the ranges are
disjoint unless one names the other in ``shares`` (the overlaps below are the original's and are
kept so stored records, traces and checkpoints replay bit for bit):

==========  ===========  =========  =========  =====================================================
study       purpose      base       size       why
==========  ===========  =========  =========  =====================================================
breakout    search       0          1_000      ``train``'s search: round r of the successive halving
                                               scores a candidate on the first
                                               ``search_seeds * keep**r`` seeds (25, 75, 225, 675
                                               by default; the original's were 0-5)
breakout    eval         0          1_000      ``eval`` / ``audit --seed`` (default 0); the audit's
                                               noise-ceiling reference set is the next N seeds
                                               (S+N..S+2N-1). Shares search: standalone commands,
                                               never part of a training run's selection
breakout    screening    1_000      9_000      ``train --screen-seed``: ALE screening of the top K
breakout    validation   10_000     990_000    ``train --validate-seed``: fresh ALE seeds, disjoint
                                               from every seed used for selection
breakout    exact_vali-  2_000_000  1_000_000  ``train --exact-seed``: the validation on the exact
            dation                                 shadow (2,000 seeds by default, the first 20 also on
                                                   ALE) and benchmarks/bench_search_regret.py's oracle
                                                   means; disjoint from every seed used for selection
breakout    fidelity     5_000_000  1_000_000  benchmarks/bench_breakout_fidelity.py shadow episodes
breakout    calibration  7_000_000  1_000_000  ``calibrate``: the traces' policies played closed-loop
                                               in the shadow (64 seeds each)
breakout    transfer     9_000_000  100_000    `transfer.validate_network`: a learned network, v3
                                               and the search pick on both envs; fresh seeds,
                                               disjoint from every seed used in training or search
                                               (as many as a command's 100,000 episodes)
breakout    learn        10**8      9 * 10**8  ``learn``: shadow training episodes, one fresh seed
                                               per episode (shard k of S: base + j * S + k for its
                                               j-th episode); far from every ALE seed a learned
                                               policy is judged on
breakout    lockstep     8_000_000  1_000_000  ``lockstep --seed``: episode i's sticky-action stream,
                                               random candidate and random actions (ALE and the
                                               shadow play the same per-frame actions)
lava_leap   training     0          100        ``lava-leap run --seed-base`` (default 0); at most
                                               100 seeds per algorithm
lava_leap   test_floors  2024       1          the generator seed of the 200 test floors (the original script's)
lava_leap   validation   1_000      100        ``lava-leap run --validation-seed-base`` (default
                                               1000): fresh seeds on which each algorithm's
                                               learning rate, chosen on the training seeds, is
                                               compared; disjoint from training
boundary    training     0          1_000_000  ARS reset seeds, drawn uniformly below the sweep
boundary    evaluation   900_000    100_000    nominal evaluation during training (900_000 + i).
                                               Shares training: a drawn reset seed can coincide
                                               with one by chance (the committed checkpoints')
boundary    sweep        1_000_000  2_000_000  ``world_seed("boundary")``: holds the largest grid
                                               the clamp ranges allow (196 mu x 301 push) at up to
                                               33 seeds per cell
boundary    verify       1_000_000  2          ``verify``'s harness check: the first two sweep
                                               seeds in the nominal world (shares sweep on purpose)
boundary    calibration  3_000_000  1_000_000  ``calibrate``: nominal and hard-push worlds, outside
                                               every sweep's seeds
boundary    robot        4_000_000  1_000      ``boundary robot``: a spec's nominal worlds played by
                                               the zero policy
boundary    reference    4_100_000  100_000    benchmarks/bench_boundary_search.py's dense reference
                                               rows (pushes every 2.5 %BW, 64 seeds each)
boundary    probe        5_000_000  1_000_000  ``boundary probe``: a world entered by hand in the
                                               page takes base + the index the user gives, so it
                                               never is a sweep's world and can be found again
boundary    learn        10**8      9 * 10**8  ``boundary learn``: Go1 training episodes; shard k of
                                               S starts its j-th episode on base + j * S + k (the
                                               seed gives the initial state, and with (seed, 1) the
                                               episode's friction and pushes); far from every sweep
boundary    search       10**10     10**10     ``boundary search``: worlds off the grid (or past its
                                               seeds); `search_seed(block, row, i)` = base + (block *
                                               10_000 + row) * 10_000 + i, the row's i-th such world
                                               in seed block `block` (up to 100 blocks of 10,000 rows
                                               of 10,000 worlds)
==========  ===========  =========  =========  =====================================================

Not ranges, and kept where they are: single seeds picked for what they show (the Breakout trace
specs' ALE seeds 1..9, 13 and 16; Lava Leap's showcase, walkthrough, blind and Monte Carlo
generator seeds 8, 22, 31 and 7), the seeds of `search_space.random_candidates` pools (777 and 909
for calibration, 4242 held out in the fidelity benchmark) and bootstrap generator seeds (0).
"""

from __future__ import annotations

from dataclasses import dataclass

from policylab.errors import BadInput

STUDIES = ("breakout", "lava_leap", "boundary")


@dataclass(frozen=True)
class SeedRange:
    """Seeds ``[base, base + size)`` of one `study` reserved for one `purpose`; `shares` names the
    purposes of the same study it may overlap on purpose (see the module docstring)."""

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
