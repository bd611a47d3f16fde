"""Named seed ranges: disjoint where they must be, and the only place a seed base is written down."""

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import itertools
import re

import pytest

from policylab.errors import BadInput
from policylab.rollout.seeds import (
    BOUNDARY_SEED_OFFSET,
    BOUNDARY_SEED_SCHEME,
    RANGES,
    named_range,
    seed_range_base,
    world_seed,
)
from tests.support.paths import ROOT

SEEDS_MODULE = ROOT / "policylab" / "rollout" / "seeds.py"
SCANNED = ("policylab", "benchmarks")
SEED_NAME = re.compile("seed", re.IGNORECASE)
# limits on a value are not values: bound keywords (le=1_000_000) and bound names (MAX_SEED = 2**30)
BOUND_KEYWORDS = {"ge", "gt", "le", "lt", "min", "max", "min_value", "max_value", "min_length", "max_length"}
BOUND_NAME = re.compile("^(max|min)_", re.IGNORECASE)
# Distinctive values (bases and ends of the big ranges): flagged wherever they appear as an int or in a
# non-docstring string. Small ones (1000, 10_000, 2024) are too common (bounds, counts, sizes) and are
# flagged only where they default or feed a name containing "seed".
DISTINCTIVE = {v for r in RANGES.values() for v in (r.base, r.stop) if v >= 100_000}


# -- the ranges ---------------------------------------------------------------------------------
def test_ranges_that_must_not_overlap_do_not():
    for a, b in itertools.combinations(RANGES.values(), 2):
        if a.study != b.study or b.purpose in a.shares or a.purpose in b.shares:
            continue
        assert not a.overlaps(b), (
            f"{a.study}: {a.purpose} [{a.base}, {a.stop}) overlaps {b.purpose} [{b.base}, {b.stop})"
        )


def test_declared_shares_are_real_purposes_and_real_overlaps():
    for r in RANGES.values():
        assert r.size > 0 and r.base >= 0
        for other in r.shares:
            assert (r.study, other) in RANGES, f"{r.study}.{r.purpose} shares an unknown range {other!r}"
            assert r.overlaps(RANGES[(r.study, other)]), f"{r.study}.{r.purpose} needs no share with {other}"


def test_key_matches_fields_and_lookups():
    for (study, purpose), r in RANGES.items():
        assert (r.study, r.purpose) == (study, purpose)
        assert named_range(study, purpose) is r and seed_range_base(study, purpose) == r.base
    with pytest.raises(BadInput):
        named_range("breakout", "nope")
    with pytest.raises(BadInput):
        named_range("breakout", "calibration").first(1_000_001)


def test_ranges_keep_the_committed_seed_values():
    """The values the stored records, traces and checkpoints were made with."""
    assert BOUNDARY_SEED_OFFSET == 1_000_000 == named_range("boundary", "sweep").base
    assert world_seed("boundary", 3, 5, seeds_per_cell=16) == 1_000_000 + 3 * 16 + 5
    assert BOUNDARY_SEED_SCHEME == "1_000_000 + (mu_idx * n_push + push_idx) * seeds_per_cell + seed_idx"
    assert named_range("boundary", "verify").first(2) == (1_000_000, 1_000_001)
    assert named_range("boundary", "evaluation").first(3) == (900_000, 900_001, 900_002)
    assert (named_range("boundary", "training").base, named_range("boundary", "training").stop) == (0, 1_000_000)
    assert seed_range_base("boundary", "calibration") == 3_000_000
    assert named_range("breakout", "calibration").first(2) == (7_000_000, 7_000_001)
    assert seed_range_base("breakout", "fidelity") == 5_000_000
    assert (seed_range_base("breakout", "screening"), seed_range_base("breakout", "validation")) == (1000, 10_000)
    assert (seed_range_base("lava_leap", "training"), seed_range_base("lava_leap", "test_floors")) == (0, 2024)


def test_the_largest_default_grid_fits_the_sweep_range():
    # 196 friction values (0.05-2.0 at 0.01) x 301 pushes (0-300 at 1) at up to 33 seeds per cell
    assert 196 * 301 * 33 <= named_range("boundary", "sweep").size


def _train_defaults() -> dict[str, dict]:
    """Defaults of every definition of the `breakout train` request and command that exists."""
    found = {}
    for name in ("search.train", "requests"):
        module = f"policylab.studies.breakout.{name}"
        if importlib.util.find_spec(module) is None:
            continue
        req = getattr(importlib.import_module(module), "TrainRequest", None)
        if req is None:
            continue
        if dataclasses.is_dataclass(req):
            found[f"{name}.TrainRequest"] = {f.name: f.default for f in dataclasses.fields(req)}
        else:  # a pydantic request model
            found[f"{name}.TrainRequest"] = {k: f.default for k, f in req.model_fields.items()}
    if importlib.util.find_spec("policylab.studies.breakout.train_cli") is not None:
        from policylab.studies.breakout import train_cli

        cli = inspect.signature(train_cli.train_cmd).parameters
        found["train_cli.train_cmd"] = {k: getattr(p.default, "default", p.default) for k, p in cli.items()}
    return found


def test_user_facing_train_defaults_are_disjoint_and_inside_their_ranges():
    defaults = _train_defaults()
    assert defaults
    keys = (
        "search_seeds",
        "rounds",
        "keep",
        "screen_seed",
        "validate_seed",
        "exact_seed",
        "screen_episodes",
        "validate_episodes",
        "exact_episodes",
    )
    for where, d in defaults.items():
        # the halving's last round plays the most search seeds: the first search_seeds * keep**(rounds - 1)
        search = set(range(d["search_seeds"] * d["keep"] ** (d["rounds"] - 1)))
        screen = {world_seed("breakout", 0, i, base=d["screen_seed"]) for i in range(d["screen_episodes"])}
        validate = {world_seed("breakout", 0, i, base=d["validate_seed"]) for i in range(d["validate_episodes"])}
        exact = {world_seed("breakout", 0, i, base=d["exact_seed"]) for i in range(d["exact_episodes"])}
        sets = [search, screen, validate, exact]
        assert all(not a & b for i, a in enumerate(sets) for b in sets[i + 1 :]), where
        for seeds, purpose in (
            (search, "search"),
            (screen, "screening"),
            (validate, "validation"),
            (exact, "exact_validation"),
        ):
            assert all(s in named_range("breakout", purpose) for s in seeds), (where, purpose)
    # every definition offers the same defaults
    assert len({tuple(d[k] for k in keys) for d in defaults.values()}) == 1, defaults


def test_lava_leap_default_training_seeds_fit_their_range():
    from policylab.studies.lava_leap import config

    cfg = config.LavaLeapConfig()
    assert cfg.seed_base == seed_range_base("lava_leap", "training")
    assert all(s in named_range("lava_leap", "training") for s in cfg.seeds)
    assert config.TEST_SEED in named_range("lava_leap", "test_floors")


# -- no seed literal outside seeds.py -------------------------------------------------------------
def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _big_ints(node: ast.AST | None):
    """Int constants >= 1000 in `node`, except those given as a bound (le=..., ge=...)."""
    if node is None:
        return
    skip = {
        id(kw.value) for n in ast.walk(node) if isinstance(n, ast.Call) for kw in n.keywords if kw.arg in BOUND_KEYWORDS
    }
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        if isinstance(n, ast.Constant) and type(n.value) is int and n.value >= 1000:
            yield n
        stack.extend(ast.iter_child_nodes(n))


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _targets(target: ast.AST, value: ast.AST | None):
    """(name, value) pairs of an assignment, tuples unpacked element by element."""
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
    ):
        for t, v in zip(target.elts, value.elts):
            yield from _targets(t, v)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            yield from _targets(t, value)
    else:
        yield _name(target), value


def seed_literals(source: str) -> list[tuple[int, str]]:
    """(line, what) for every seed literal in `source`."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []

    def flag(name: str, value: ast.AST | None, how: str) -> None:
        if SEED_NAME.search(name or "") and not BOUND_NAME.search(name):
            found.extend((c.lineno, f"{c.value} {how} {name}") for c in _big_ints(value))

    docs = _docstrings(tree)
    bounds = {
        id(kw.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for kw in n.keywords if kw.arg in BOUND_KEYWORDS
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for name, value in _targets(t, n.value):
                    flag(name, value, "assigned to")
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):  # dataclass / pydantic fields included
            flag(_name(n.target), n.value, "assigned to")
        elif isinstance(n, ast.NamedExpr):
            flag(_name(n.target), n.value, "assigned to")
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = n.args
            positional = a.posonlyargs + a.args
            for arg, default in zip(positional[len(positional) - len(a.defaults) :], a.defaults):
                flag(arg.arg, default, "defaulting")  # typer.Option(...) defaults included
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                flag(arg.arg, default, "defaulting")
        elif isinstance(n, ast.Call):
            for kw in n.keywords:
                flag(kw.arg or "", kw.value, "passed as")
            for arg in n.args:  # world_seed(..., 10_000), _seeds(1000, n), range_seeds(...)
                flag(_name(n.func), arg, "passed to")
        elif isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    flag(k.value, v, "stored under")
        elif isinstance(n, ast.Compare) and SEED_NAME.search(_name(n.left)):
            flag(_name(n.left), ast.Tuple(elts=n.comparators, ctx=ast.Load()), "compared with")
        if isinstance(n, ast.Constant) and id(n) not in bounds:
            if type(n.value) is int and n.value in DISTINCTIVE:
                found.append((n.lineno, f"{n.value} (a seed range's base or end)"))
            elif isinstance(n.value, str) and id(n) not in docs:
                for m in re.findall(r"\d[\d_,]{4,}\d", n.value):
                    if int(re.sub("[_,]", "", m)) in DISTINCTIVE:
                        found.append((n.lineno, f"{m!r} in a string (a seed range's base or end)"))
    return sorted(set(found))


def _modules():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != SEEDS_MODULE:
                yield path


def test_no_seed_literal_outside_the_seeds_module():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in _modules()
        for line, what in seed_literals(path.read_text())
    ]
    assert not offenders, "seed bases belong in policylab/rollout/seeds.py (RANGES):\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "snippet",
    [
        "x = EpisodeTask('shadow', tuple(range(7_000_000, 7_000_000 + n)))",
        "HARNESS_SEEDS = (1_000_000, 1_000_001)",
        "CAL_SEED0 = 3_000_000",
        "TEST_SEED, N_TEST = 2024, 200",
        "seeds = list(range(900_000, 900_000 + n_seeds))",
        "class R:\n    screen_seed: int = 1000\n",
        "def f(validate_seed: int = typer.Option(10_000, '--validate-seed')): pass",
        "def f(*, seed=5000): pass",
        "run(seed=2024)",
        "t = _seeds(1000, 5)",
        "config = {'seed': 4242}",
        "g = {'seed_scheme': '1_000_000 + (mu_idx * n_push + push_idx) * seeds_per_cell + seed_idx'}",
        "limit = 5_000_000",
    ],
)
def test_the_scan_catches_a_seed_literal(snippet):
    assert seed_literals(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        '"""Seeds 1_000_000 + i, documented."""',
        "seed_base: int = Field(0, ge=0, le=1_000_000)",
        "max_steps: int = Field(1800, ge=1, le=1_000_000)",
        "TraceSpec('x', 'policy', 7200, seed=3)",
        "SHOWCASE_SEED = 8",
        "resamples = 2000",
        "MAX_SEARCH_SEEDS = 1_000",
        "seeds = named_range('boundary', 'evaluation').first(n_seeds)",
    ],
)
def test_the_scan_leaves_other_numbers_alone(snippet):
    assert not seed_literals(snippet)
