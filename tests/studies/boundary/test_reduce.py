"""Reduce and select: the failure rule, Kaplan-Meier per cell, the boundary and its bootstrap on
hand-checkable constructed data, then on a small real Ant sweep through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from policylab.errors import BadInput
from policylab.hashing import sha256_hex
from policylab.rollout.seeds import world_seed
from policylab.rollout.store import Store
from policylab.stats import kaplan_meier
from policylab.studies.boundary import failure
from policylab.studies.boundary.checkpoint import available_checkpoints, committed_record
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.learn.worlds import RECIPES
from policylab.studies.boundary.reduce import (
    NO_BOUNDARY,
    Rollout,
    cell_stats,
    first_crossing,
    load_sweep,
    row_boundary,
    rule_check,
    survival_fraction,
    training_distribution,
)
from policylab.studies.boundary.robot_policies import train_configs
from policylab.studies.boundary.select import boundary_cells, recoveries
from tests.support.boundary_fixtures import ANT, cli, make_sweep, relabelled_copy

MUS, PUSHES, SPC = [0.3, 0.65, 1.0], [20.0, 160.0, 300.0], 8


def _r(status, t=None, i=0):
    return Rollout(f"k{i}", f"c{i}", 1_000_000 + i, i, status, t, None, None)


# -- Kaplan-Meier per cell ---------------------------------------------------------------------


def test_cell_km_by_hand():
    rollouts = [_r("survived", i=i) for i in range(4)] + [
        _r("failed", 1.0, 4),
        _r("failed", 2.0, 5),
        _r("failed", 2.0, 6),
        _r("diverged", 0.5, 7),
    ]
    c = cell_stats(rollouts, 5.0, push_t0=2.0)
    # diverged leaves the risk set: 7 at risk; t=1: 1 - 1/7; t=2: * (1 - 2/6) = 4/7
    assert (c["n"], c["n_failed"], c["n_censored"], c["n_diverged"]) == (8, 3, 4, 1)
    assert c["n_failed_before_push"] == 3  # at 1.0 s and at 2.0 s (the push's first state): none pushed yet
    assert cell_stats(rollouts, 5.0, push_t0=1.5)["n_failed_before_push"] == 1
    assert c["km_curve"]["t_s"] == [0.0, 1.0, 2.0]
    assert c["km_curve"]["survival"] == pytest.approx([1.0, 6 / 7, 4 / 7])
    assert c["survival"] == pytest.approx(4 / 7)
    assert c["danger"] == pytest.approx(3 / 7)
    assert c["km_median_s"] is None  # S never reaches 0.5
    assert c["ttf_p25_s"] == pytest.approx(1.5) and c["ttf_p75_s"] == pytest.approx(2.0)


def test_survival_fraction_is_km_with_horizon_censoring():
    rng = np.random.default_rng(3)
    for _ in range(20):
        codes = rng.integers(-1, 2, size=16)
        at_risk = codes >= 0
        if not at_risk.any():
            continue
        times = np.where(codes[at_risk] == 0, rng.uniform(0.1, 4.9, at_risk.sum()), 5.0)
        km = kaplan_meier(times, codes[at_risk] == 0, 5.0)["survival_at_horizon"]
        assert survival_fraction(codes) == pytest.approx(km)


# -- the boundary --------------------------------------------------------------------------------


def test_first_crossing_by_hand():
    p = [10.0, 20.0, 30.0, 40.0]
    s = np.array(
        [
            [1.0, 0.75, 0.25, 0.0],  # 20 + 0.25/0.5 * 10 = 25
            [1.0, 0.4, 0.8, 0.2],  # first fall-through: 10 + 0.5/0.6 * 10
            [0.4, 0.2, 0.0, 0.0],  # starts below: boundary below the grid, none in range
            [1.0, 1.0, 0.9, 0.6],  # never crosses
            [1.0, np.nan, 0.0, 0.0],  # undefined cell skipped: 10 + 0.5 * 20
            [0.5, 0.0, 0.0, 0.0],
        ]
    )  # exactly 0.5 counts as not yet fallen: 10
    got = first_crossing(p, s)
    assert got[0] == pytest.approx(25.0)
    assert got[1] == pytest.approx(10 + 10 * 0.5 / 0.6)
    assert np.isnan(got[2]) and np.isnan(got[3])
    assert got[4] == pytest.approx(20.0)
    assert got[5] == pytest.approx(10.0)


def test_row_bootstrap_deterministic_cells_give_exact_interval():
    codes = np.array([[1] * 16, [1] * 16, [0] * 16, [0] * 16])
    b = row_boundary([10, 20, 30, 40], codes, resamples=2000, seed=0, row=0)
    assert b["status"] == "boundary" and b["crossed_fraction"] == 1.0
    assert b["point"] == b["median"] == 25.0 and b["ci95"] == [25.0, 25.0]


def test_row_bootstrap_no_boundary_when_fewer_than_half_cross():
    # first cell S = 7/16 (already below 0.5); a resample crosses only if it draws >= 8 survivors there
    codes = np.array([[1] * 7 + [0] * 9, [0] * 16, [0] * 16])
    b = row_boundary([10, 20, 30], codes, resamples=2000, seed=0, row=0)
    expected = sps.binom.sf(7, 16, 7 / 16)  # P(Binom(16, 7/16) >= 8) = 0.31
    assert b["crossed_fraction"] == pytest.approx(expected, abs=0.03)
    assert b["status"] == NO_BOUNDARY and b["median"] is None and b["ci95"] is None
    assert "below the grid" in b["note"] and b["beyond_grid"] == "below"
    safe = row_boundary([10, 20, 30], np.ones((3, 16), dtype=int), resamples=200, seed=0, row=0)
    assert safe["status"] == NO_BOUNDARY and safe["crossed_fraction"] == 0 and "above the grid" in safe["note"]
    assert safe["beyond_grid"] == "above"
    # and a row that crosses in most resamples keeps a boundary with an interval around the point
    codes2 = np.array([[1] * 12 + [0] * 4, [1] * 6 + [0] * 10, [0] * 16])
    b2 = row_boundary([10, 20, 30], codes2, resamples=2000, seed=0, row=0)
    assert b2["status"] == "boundary" and b2["crossed_fraction"] > 0.9 and b2["beyond_grid"] is None
    lo, hi = b2["ci95"]
    assert lo <= b2["point"] <= hi and lo < hi
    assert b2["point"] == pytest.approx(10 + 10 * 0.25 / (0.75 - 0.375))


def test_row_bootstrap_is_seeded_per_row():
    codes = np.array([[1] * 12 + [0] * 4, [1] * 6 + [0] * 10, [0] * 16])
    a = row_boundary([10, 20, 30], codes, resamples=500, seed=0, row=1)
    assert a == row_boundary([10, 20, 30], codes, resamples=500, seed=0, row=1)
    assert a != row_boundary([10, 20, 30], codes, resamples=500, seed=0, row=2)


# -- selection -----------------------------------------------------------------------------------


def _cell(mu, push, survived, n=16):
    rollouts = [
        {
            "seed_idx": i,
            "seed": 1_000_000 + i,
            "key": f"{mu}-{push}-{i}",
            "cache_key": f"c{mu}-{push}-{i}",
            "status": "survived" if i >= n - survived else "failed",
        }
        for i in range(n)
    ]
    return {"row": mu, "col": push, "cell": 0, "survival": survived / n, "rollouts": rollouts}


def test_selection_rules():
    cells = [
        _cell(0.5, 80, 8),
        _cell(0.5, 90, 3),
        _cell(0.5, 100, 1),
        _cell(0.8, 110, 3),
        _cell(0.9, 110, 3),
        _cell(0.9, 120, 5),
        _cell(0.7, 60, 16),
        _cell(0.7, 70, 0),
    ]
    rec = recoveries(cells, 3)
    # 3/16 <= S <= 0.5, rarest first, then push descending, then mu; S = 1/16 is excluded
    assert [(r["row"], r["col"]) for r in rec] == [(0.8, 110), (0.9, 110), (0.5, 90)]
    for r in rec:
        assert r["recorded_status"] == "survived"
        order = [s["seed_idx"] for s in r["search_order"]]
        assert order[0] == r["seed_idx"] and sorted(order) == list(range(16)) and order[1:] == sorted(order[1:])
    picks = boundary_cells(cells, 4)
    # round 1 takes one cell per row, closest to S = 0.5 first; 0 < S < 1 only
    assert [(p["row"], p["col"]) for p in picks] == [(0.5, 80), (0.9, 120), (0.8, 110), (0.5, 90)]
    assert all(p["seed_idx"] == 0 for p in picks)


# -- on a real sweep -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    return make_sweep(tmp_path_factory.mktemp("reduce"), "pd_soft", (0.3, 1.0), 3, (20, 300), 3, SPC)


def test_records_follow_the_seed_scheme(store_path):
    with Store(store_path) as store:
        sweep = load_sweep(store, "pd_soft")
        assert sweep.seeds_per_cell == SPC and sweep.rows == MUS and sweep.cols == PUSHES
        for (mi, pi), rollouts in sweep.cells.items():
            for r in rollouts:
                assert r.seed == world_seed("boundary", mi * len(PUSHES) + pi, r.seed_idx, seeds_per_cell=SPC)
                assert store.require(r.key).data["world"]["cache_key"].endswith(f"|seed={r.seed}")


def test_reduce_cli_real_sweep(store_path, tmp_path):
    out = tmp_path / "ana"
    res = cli("reduce", "--store", store_path, "--checkpoint", "pd_soft", "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.report == out / "reduce.json"
    n, t = len(MUS) * len(PUSHES) * SPC, json.loads((out / "reduce.json").read_text())["totals"]
    assert res.stdout.splitlines()[:-1] == [  # the headlines, then the report line
        f"reduce pd_soft: 3 x 3 cells x {SPC} seeds; {t['failed']} failed, {t['censored']} survived, "
        f"{t['diverged']} diverged",
        f"rule check: {n}/{n} records agree with the frozen rule",
    ]
    red = json.loads((out / "reduce.json").read_text())
    assert red["rule_check"]["agree"] == red["rule_check"]["checked"] == len(MUS) * len(PUSHES) * SPC
    assert sum(red["totals"].values()) == len(MUS) * len(PUSHES) * SPC
    danger = np.array(red["danger"], dtype=float)
    assert danger.min() == 0.0 and danger.max() == 1.0  # the grid holds both safe and fatal cells
    assert red["thresholds"] == {**failure.thresholds(), "horizon_s": 5.0}
    for b in red["boundary"]:
        assert b["resamples"] == 2000
        if b["status"] == "boundary":
            assert b["ci95"][0] <= b["median"] <= b["ci95"][1]
            # beside it in N s (the 0.5 s push's impulse) and m/s (that impulse over the mass)
            u, p = b["in_units"], b["median"]
            assert u["pct_bw"]["median"] == p and u["mass_kg"] == ANT.mass_kg()
            assert u["impulse_ns"]["median"] == pytest.approx(p / 100 * ANT.body_weight_n() * 0.5)
            assert u["velocity_mps"]["median"] == pytest.approx(p / 100 * 9.81 * 0.5)
    assert any(b["status"] == "boundary" for b in red["boundary"])
    first = (out / "reduce.json").read_bytes()
    assert cli("reduce", "--store", store_path, "--checkpoint", "pd_soft", "--out", out).returncode == 0
    assert (out / "reduce.json").read_bytes() == first  # same input, same bytes
    res = cli("select", "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.report == out / "select" / "selection.json"
    sel = json.loads((out / "select" / "selection.json").read_text())
    assert sel["boundary_cells"] and all(0 < w["survival"] < 1 for w in sel["boundary_cells"])


def test_rule_check_finds_a_mislabelled_record(tmp_path):
    with Store(make_sweep(tmp_path, "pd_soft", (1.0, 1.0), 1, (300, 300), 1, 4)) as store:
        honest = rule_check(store, load_sweep(store, "pd_soft"))
        assert honest["checked"] == 4 and honest["disagree"] == 0
        failed = next(r for r in store.records("boundary") if r.outcome["status"] == "failed")
        new = relabelled_copy(store, "pd_soft", {failed.key: "survived"})
        found = rule_check(store, load_sweep(store, "relabelled"))
        assert found["disagree"] == 1 and found["examples"][0]["key"] == new[failed.key]
        assert found["examples"][0]["record"][0] == "survived" and found["examples"][0]["rule"][0] == "failed"
        # a sweep recorded under another failure rule than the code's is refused, naming what differs
        meta = store.get_meta("boundary/sweep/pd_soft")
        store.set_meta("boundary/sweep/pd_soft", {**meta, "protocol": {**meta["protocol"], "failure": {}}})
        with pytest.raises(BadInput, match="differs in: failure"):
            load_sweep(store, "pd_soft")


@pytest.mark.parametrize(
    "args, field",
    [
        (["--checkpoint", "nope"], "checkpoint"),
        (["--checkpoint", "pd_soft", "--resamples", "10"], "resamples"),
        (["--checkpoint", "pd_soft", "--resamples", "1e9"], "resamples"),
        (["--checkpoint", "pd_soft", "--seed", "-1"], "seed"),
        (["--checkpoint", "pd_soft", "--seed", "nan"], "seed"),
        (["--checkpoint", ""], "checkpoint"),
    ],
)
def test_reduce_bad_input(store_path, tmp_path, args, field):
    out = tmp_path / "bad"
    res = cli("reduce", "--store", store_path, "--out", out, *args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}:")
    assert not out.exists()


def test_reduce_missing_store_writes_nothing(tmp_path):
    res = cli("reduce", "--store", tmp_path / "nostore", "--checkpoint", "pd_soft", "--out", tmp_path / "o")
    assert res.returncode == 2 and res.stderr.startswith("policylab: error: store:")
    assert not (tmp_path / "nostore").exists() and not (tmp_path / "o").exists()


def test_boundary_rows_state_the_grid_resolution():
    """S drops from 1 to 0 between two cells: every resample crosses at the same interpolated push, so
    the interval is a point; the row says the crossing lies between the two cells, one grid step apart."""
    pushes = [10.0, 20.0, 30.0]
    codes = np.array([[1] * 8, [0] * 8, [0] * 8])
    row = row_boundary(pushes, codes, resamples=200, seed=0, row=0)
    assert row["ci95"] == [15.0, 15.0]
    assert row["grid_step"] == 10.0 and row["between"] == [10.0, 20.0]
    below = row_boundary(pushes, np.zeros((3, 8), dtype=np.int8), resamples=200, seed=0, row=0)
    assert below["between"] is None and below["grid_step"] == 10.0


# The band each committed checkpoint trained on, read off its record by hand (push_bw in body weights -> %BW).
TRAINING_BANDS = {
    "ant_v0": (None, 0.0),
    "ant_v1": ([0.1, 1.0], 150.0),
    "go1_v0": ([0.4, 1.0], 0.0),
    "go1_v1": ([0.4, 1.0], 100.0),
    "go1_v2": ([0.4, 1.0], 0.0),
    "go1_v3": ([0.4, 1.0], 120.0),
    "go1_v4": ([0.2, 1.0], 150.0),
}


def _band_in_code(name: str) -> tuple:
    """The band the trainer's own config names: a learn recipe (`RECIPES`) or a spec folder's ARS config
    (`train_configs`)."""
    recipe = committed_record(name)["config"].get("recipe")
    if recipe is not None:
        r = RECIPES[recipe]
        return [*r.friction], round(100 * r.push_bw[1], 6), r.command_amp and [*r.command_amp], r.push_ramp or None
    cfg = next(c for c in train_configs().values() if c.name == name)
    return cfg.friction_range and [*cfg.friction_range], cfg.push_pct_max, None, None


@pytest.mark.parametrize("name", available_checkpoints())
def test_training_band_of_every_committed_checkpoint_matches_its_record(name):
    """Every committed checkpoint's band comes from its own record, whichever trainer wrote it (an ARS record's
    friction_range/push_pct_max, a learn record's recipe_values, pushes in body weights): it is the band its
    trainer's config names, and for the ones listed above the band read off by hand."""
    path = next(p for p in CHECKPOINT_DIR.glob(f"{name}.*") if p.suffix in (".npz", ".onnx"))
    band = training_distribution(name, sha256_hex(path.read_bytes()))
    assert band is not None, f"{name}: its record's checkpoint_sha256 is not the file's"
    got = (band["friction_range"], band["push_pct_max"], band.get("command_amp"), band.get("push_ramp"))
    assert got == _band_in_code(name)
    if name in TRAINING_BANDS:
        assert got[:2] == TRAINING_BANDS[name]
    assert training_distribution(name, "0" * 64) is None  # another file under the same name has no band
