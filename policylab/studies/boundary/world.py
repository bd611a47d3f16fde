"""The world of the failure-boundary study, its grid, and the cache key: one definition for every stage.

Axes, key and seed formula: docs/boundary.md, "World, grid, seeds, keys"."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from policylab.errors import BadInput
from policylab.rollout.seeds import BOUNDARY_SEED_SCHEME, named_range, world_seed
from policylab.studies.boundary.axes import AXES, CATALOGUE, Axis, by_field, lattice, parse_axis
from policylab.studies.boundary.constants import (
    DEFAULT_DIR,
    DEFAULT_MU,
    DEFAULT_PUSH,
    DEFAULT_SEEDS_PER_CELL,
    DEFAULT_T0,
    PUSH_RES,
)

KEY_VERSION = "v2"
SWEEP_SEEDS = named_range("boundary", "sweep")


def check_mu(mu: float, field: str = "mu") -> float:
    return AXES["friction"].check(mu, field)


def check_push(push: float, field: str = "push") -> float:
    """A grid's push: the catalogue's range, rounded to whole %BW (a grid's resolution)."""
    AXES["push"].check(push, field)
    return round(round(push / PUSH_RES) * PUSH_RES, 6)


def check_dir(direction: float) -> float:
    return AXES["push_dir"].check(direction)


def check_t0(t0: float, field: str = "push_t0") -> float:
    return AXES["push_t0"].check(t0, field)


def cache_key(
    mu: float | None, push_pct: float, push_dir: float, push_t0: float, seed: int, extra: dict[str, float] | None = None
) -> str:
    """A world's name; `extra` holds the later axes it sets ({field: value}, `World.extra`)."""
    mu_s = "default" if mu is None else f"{mu:.4f}"
    tail = "".join(f"|{by_field(f).key_part(v)}" for f, v in (extra or {}).items())
    return f"{KEY_VERSION}|mu={mu_s}|push={push_pct:.2f}|dir={push_dir:.2f}|t0={push_t0:.2f}|seed={seed}{tail}"


@dataclass(frozen=True, init=False)
class World:
    """A world: a value per axis of the catalogue and a seed. `values` ((field, value) pairs, catalogue
    order) holds the original four and the later axes it sets to other than their defaults, so two worlds
    that differ only by an axis at its default are one world; every axis reads as an attribute (`w.mu`,
    `w.payload_kg`: an axis the world does not set reads as its default). Made as ``World(mu, push_pct,
    push_dir, push_t0, seed, **later)``, the original four in their key's order and any other axis of the
    catalogue by its field."""

    values: tuple[tuple[str, float], ...]
    seed: int

    def __init__(self, mu: float, push_pct: float, push_dir: float, push_t0: float, seed: int, **later: float):
        given = {"mu": mu, "push_pct": push_pct, "push_dir": push_dir, "push_t0": push_t0, **later}
        unknown = set(given) - {a.field for a in CATALOGUE}
        if unknown:
            raise TypeError(f"World: {', '.join(sorted(unknown))} is not an axis of the catalogue")
        kept = tuple((a.field, given[a.field]) for a in CATALOGUE if a.field in given and a.is_set(given[a.field]))
        object.__setattr__(self, "values", kept)
        object.__setattr__(self, "seed", seed)

    def __getattr__(self, name: str) -> float:
        """An axis's value by its field (only called for names that are not the dataclass's own)."""
        if name.startswith("_"):
            raise AttributeError(name)
        for f, v in self.values:
            if f == name:
                return v
        try:
            return by_field(name).default
        except StopIteration:
            raise AttributeError(name) from None

    def axes(self) -> dict[str, float]:
        """{field: value} of the axes this world holds (the original four and the later ones it sets)."""
        return dict(self.values)

    @property
    def extra(self) -> dict[str, float]:
        """The later axes this world sets, {field: value} in catalogue order (empty for a world of the grid)."""
        return self._split()[1]

    @property
    def key(self) -> str:
        always, extra = self._split()
        return cache_key(*always, self.seed, extra)

    def _split(self) -> tuple[list[float], dict[str, float]]:
        """The original four's values (in their key's order) and the later axes this world sets."""
        values = dict(self.values)
        return [values.pop(a.field) for a in CATALOGUE if a.always_keyed], values

    def as_dict(self) -> dict:
        """Every axis's value (its default where the world does not set it) and the seed, as `World(**d)`
        takes them: what a chunk of work carries to its process, and the probe's world form."""
        return {**{a.field: getattr(self, a.field) for a in CATALOGUE}, "seed": self.seed}

    @classmethod
    def from_record(cls, w: dict) -> World:
        """The world a record's world part describes (the later axes where it sets them)."""
        return cls(**{a.field: w[a.field] for a in CATALOGUE if a.field in w}, seed=w["seed"])


def world_from(values: Mapping[str, float], seed: int) -> World:
    """The world of `values` ({World field: value}, each checked and rounded by its axis of the catalogue;
    the original four required, the later ones at their defaults when absent) and `seed`; bad input
    names the field."""
    fields = [a.field for a in CATALOGUE]
    missing = [a.field for a in CATALOGUE if a.always_keyed and a.field not in values]
    if missing:
        raise BadInput(missing[0], "is required")
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise BadInput(unknown[0], f"is not an axis of the world; the axes are {', '.join(fields)}")
    return World(**{f: by_field(f).check(float(v), f) for f, v in values.items()}, seed=seed)


@dataclass(frozen=True)
class GridWorld:
    """A world plus where it sits in its sweep grid."""

    world: World
    row_idx: int
    col_idx: int
    seed_idx: int
    rollout_index: int


def axis(kind: str, lo: float, hi: float, n: int, field: str) -> tuple[float, ...]:
    """The `n` values of a grid axis (`kind` mu or push) evenly spaced in [lo, hi], checked against the
    clamp range and rounded to the resolution (a grid's push to whole %BW); values that collide at the
    resolution are bad input."""
    name, check = {"mu": ("friction", check_mu), "push": ("push", check_push)}[kind]
    return lattice(AXES[name], lo, hi, n, field, check)


# The default grid's axes: friction rows x push columns. A grid of these two with no held axis has the
# record of a friction x push grid, no axis names in it (`Grid.as_dict`, `records.world_record`).
DEFAULT_ROW_AXIS, DEFAULT_COL_AXIS = "friction", "push"


def _grid_check(a: Axis, value: float, field: str) -> float:
    """A grid's value of axis `a`: the catalogue's check, with a grid's pushes at whole %BW."""
    return check_push(value, field) if a.name == "push" else a.check(value, field)


def parse_grid_axis(spec: str, field: str) -> tuple[str, tuple[float, ...]]:
    """``AXIS=LO:HI:N`` or ``AXIS=V1,V2,...`` for a grid's rows or columns: the axis's name and its values
    (`axes.parse_axis`, pushes at whole %BW). The push start cannot be mapped: a failure "before the push"
    needs one start for the whole grid (`--push-t0`)."""
    a, values = parse_axis(spec, field, _grid_check)
    if a.name == "push_t0":
        raise BadInput(
            field,
            "push_t0 cannot be a grid axis (failures before the push need one push start); give it with --push-t0",
        )
    return a.name, values


def parse_held(specs: list[str], mapped: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``--set AXIS=V``: axes held at one value over the whole grid (neither mapped nor push direction or
    start, which have their own options), as ((name, value), ...) in catalogue order."""
    held = {}
    for spec in specs:
        a, values = parse_axis(spec, "set")
        if len(values) != 1 or a.name in mapped or a.name in held or a.name in ("push_dir", "push_t0"):
            raise BadInput(
                "set",
                f"{spec!r}: give one value (AXIS=V) of an axis that is neither a row nor a column "
                "axis, once (push direction and start: --push-dir, --push-t0)",
            )
        held[a.name] = values[0]
    return tuple((a.name, held[a.name]) for a in CATALOGUE if a.name in held)


@dataclass(frozen=True)
class Grid:
    """Rows x columns x seeds: the rows are values of `row_axis` (friction by default), the columns of
    `col_axis` (push); the push direction and start, and any `held` axes, fixed for the whole sweep.

    The store's sweep meta keeps the names of the default grid (`mus`, `pushes_pct_bw` hold the row and
    column values, `as_dict`) and names no axes for it, so today's grid's records and keys are unchanged; a
    grid of other axes says which in its record (`records.world_record`)."""

    rows: tuple[float, ...]
    cols: tuple[float, ...]
    seeds_per_cell: int
    push_dir: float = DEFAULT_DIR
    push_t0: float = DEFAULT_T0
    row_axis: str = DEFAULT_ROW_AXIS
    col_axis: str = DEFAULT_COL_AXIS
    held: tuple[tuple[str, float], ...] = ()

    @classmethod
    def build(
        cls,
        mu_range: tuple[float, float] = DEFAULT_MU[:2],
        n_mu: int = DEFAULT_MU[2],
        push_range: tuple[float, float] = DEFAULT_PUSH[:2],
        n_push: int = DEFAULT_PUSH[2],
        seeds_per_cell: int = DEFAULT_SEEDS_PER_CELL,
        push_dir: float = DEFAULT_DIR,
        push_t0: float = DEFAULT_T0,
        rows: str | None = None,
        cols: str | None = None,
        held: list[str] = (),
        *,
        fields: tuple[str, str] = ("mu_range", "push_range"),
    ) -> Grid:
        """Friction x push from the ranges, or the axes `rows` / `cols` name (``AXIS=LO:HI:N`` or
        ``AXIS=V1,V2``) in their place, with `held` (``AXIS=V``) fixed; bad input names the option
        (`fields`: what names the friction and push ranges' values, the sweep's ``n_mu`` and ``n_push``)."""
        if seeds_per_cell < 1:
            raise BadInput("seeds_per_cell", "must be at least 1")
        row_axis, row_values = (
            parse_grid_axis(rows, "rows") if rows else (DEFAULT_ROW_AXIS, axis("mu", *mu_range, n_mu, fields[0]))
        )
        col_axis, col_values = (
            parse_grid_axis(cols, "cols") if cols else (DEFAULT_COL_AXIS, axis("push", *push_range, n_push, fields[1]))
        )
        if row_axis == col_axis:
            raise BadInput("cols", f"the rows and the columns are both {row_axis}; map two different axes")
        grid = cls(
            row_values,
            col_values,
            seeds_per_cell,
            check_dir(push_dir),
            check_t0(push_t0),
            row_axis,
            col_axis,
            parse_held(list(held), (row_axis, col_axis)),
        )
        if grid.n_rollouts > SWEEP_SEEDS.size:
            raise BadInput(
                "seeds_per_cell",
                f"the grid would hold {grid.n_rollouts:,} worlds; the sweep's seed range holds {SWEEP_SEEDS.size:,}",
            )
        return grid

    @classmethod
    def recorded(cls, rows: Sequence[float], cols: Sequence[float], g: Mapping) -> Grid:
        """The grid a record of it describes: its row and column values and the rest of `g` (a sweep meta's
        grid, `as_dict`, or a reduction's)."""
        row, col = grid_axes(g)
        held = g.get("set", {})
        return cls(
            tuple(rows),
            tuple(cols),
            g["seeds_per_cell"],
            g["push_dir_deg"],
            g["push_t0_s"],
            row.name,
            col.name,
            tuple((a.name, held[a.name]) for a in CATALOGUE if a.name in held),
        )

    @property
    def default_axes(self) -> bool:
        """Today's grid: friction rows, push columns, nothing held."""
        return self.row_axis == DEFAULT_ROW_AXIS and self.col_axis == DEFAULT_COL_AXIS and not self.held

    @property
    def n_rollouts(self) -> int:
        return len(self.rows) * len(self.cols) * self.seeds_per_cell

    def cell(self, row_idx: int, col_idx: int) -> int:
        """A cell's index in row-major order: what the seed scheme numbers."""
        return row_idx * len(self.cols) + col_idx

    def rollout_index(self, row_idx: int, col_idx: int, seed_idx: int) -> int:
        return self.cell(row_idx, col_idx) * self.seeds_per_cell + seed_idx

    def seed(self, row_idx: int, col_idx: int, seed_idx: int) -> int:
        cell = self.cell(row_idx, col_idx)
        return world_seed("boundary", cell, seed_idx, seeds_per_cell=self.seeds_per_cell)

    def world(self, row: float, col: float, seed: int) -> World:
        """The world of a cell: friction and push at their defaults unless mapped (the axes' defaults: mu 1,
        no push), the held axes and the mapped ones set."""
        values = {
            "mu": AXES["friction"].default,
            "push_pct": AXES["push"].default,
            "push_dir": self.push_dir,
            "push_t0": self.push_t0,
        }
        values.update((AXES[name].field, v) for name, v in self.held)
        values[AXES[self.row_axis].field] = row
        values[AXES[self.col_axis].field] = col
        return World(**values, seed=seed)

    def worlds(self) -> Iterator[GridWorld]:
        """Every world of the grid in rollout-index order."""
        for i, row in enumerate(self.rows):
            for j, col in enumerate(self.cols):
                for s in range(self.seeds_per_cell):
                    yield GridWorld(self.world(row, col, self.seed(i, j, s)), i, j, s, self.rollout_index(i, j, s))

    def axes_record(self) -> dict:
        """What a grid of other axes records beside its values (empty for today's grid): the row and column
        axes its indices refer to, and the held axes."""
        if self.default_axes:
            return {}
        return {"row_axis": self.row_axis, "col_axis": self.col_axis, "set": dict(self.held)}

    def as_dict(self) -> dict:
        return {
            "mus": list(self.rows),
            "pushes_pct_bw": list(self.cols),
            "seeds_per_cell": self.seeds_per_cell,
            "push_dir_deg": self.push_dir,
            "push_t0_s": self.push_t0,
            "seed_scheme": BOUNDARY_SEED_SCHEME,
            "total_rollouts": self.n_rollouts,
            **self.axes_record(),
        }


def friction_by_push(grid: Mapping) -> bool:
    """Whether a recorded grid maps friction rows x push columns with no axis held (`grid_axes`)."""
    row, col = grid_axes(grid)
    return row.name == DEFAULT_ROW_AXIS and col.name == DEFAULT_COL_AXIS and not grid.get("set")


def grid_axes(grid: Mapping) -> tuple[Axis, Axis]:
    """The row and column axes of a recorded grid (`Grid.as_dict`, or a reduction's grid): friction and
    push unless it names others."""
    return AXES[grid.get("row_axis", DEFAULT_ROW_AXIS)], AXES[grid.get("col_axis", DEFAULT_COL_AXIS)]
