"""An axis added by the test suite alone: a catalogue entry and its apply function (a gravity scale, which
writes a per-world model value into the batch's perturbation record), registered here and nowhere else,
maps a grid's rows through sweep, the equivalence gate, reduce and report; its worlds' keys and records
name it only where a world sets it, and the axis leaves the catalogue when the module ends."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from policylab.rollout.store import Store
from policylab.studies.boundary import axes
from policylab.studies.boundary.axes import Axis
from policylab.studies.boundary.simulation import perturbations
from policylab.studies.boundary.world import World
from tests.support.boundary_fixtures import ANT, cli, make_grid_sweep

GRID = ["--rows", "gravity=0.6,1", "--cols", "push=50:250:3"]  # 2 x 3 cells; the nominal row keys no gravity


def _scale_gravity(rec, rows, values) -> None:
    rec.model_field("opt.gravity")[rows] *= values[:, None]


GRAVITY = Axis(
    "gravity",
    "gravity_scale",
    "gravity (x nominal)",
    "x",
    0.5,
    1.5,
    0.05,
    1.0,
    "gravity",
    ".2f",
    False,
    "the model's gravity vector scaled, MuJoCo's derived constants recomputed for the world",
    apply=_scale_gravity,
)


@pytest.fixture(scope="module")
def gravity():
    axes.register(GRAVITY)
    yield GRAVITY
    del axes.AXES[GRAVITY.name]


@pytest.fixture(scope="module")
def base(tmp_path_factory, gravity):
    base = tmp_path_factory.mktemp("new-axis")
    make_grid_sweep(base, "pd_soft", GRID, 2)  # sweep, then verify (its exit status 0: the gate passed)
    return base


def _run(*args):
    res = cli(*args)
    assert res.returncode == 0, (args[0], res.stderr)
    return res


def test_register_refuses_what_would_change_a_key():
    before = axes.names()
    with pytest.raises(ValueError, match="name 'payload'"):
        axes.register(replace(GRAVITY, name="payload"))
    with pytest.raises(ValueError, match="key_name 'motor'"):
        axes.register(replace(GRAVITY, name="g2", field="g2", key_name="motor"))
    with pytest.raises(ValueError, match="keyed only where"):
        axes.register(replace(GRAVITY, always_keyed=True))
    assert axes.names() == before


def test_the_record_carries_the_axis(gravity):
    worlds = [World(1.0, 0.0, 90.0, 2.0, 7), World(1.0, 0.0, 90.0, 2.0, 7, gravity_scale=0.6)]
    assert worlds[0] == World(1.0, 0.0, 90.0, 2.0, 7, gravity_scale=1.0) and worlds[1].gravity_scale == 0.6
    assert worlds[1].key == worlds[0].key + "|gravity=0.60"
    g = perturbations(worlds, ANT).model["opt.gravity"]
    assert (g[0] == ANT.base.opt.gravity).all() and np.allclose(g[1], 0.6 * ANT.base.opt.gravity)


def test_sweep_records_and_gate(base):
    with Store(base / "store") as store:
        meta = store.get_meta("boundary/sweep/pd_soft")
        worlds = [r.data["world"] for r in store.records("boundary")]
    g = meta["grid"]
    assert (g["row_axis"], g["col_axis"], g["mus"]) == ("gravity", "push", [0.6, 1.0])
    assert len(worlds) == 2 * 3 * 2
    for w in worlds:
        scale = g["mus"][w["mu_idx"]]
        assert w.get("gravity_scale", 1.0) == scale and ("|gravity=" in w["cache_key"]) == (scale != 1.0)
        assert World.from_record(w).key == w["cache_key"]
        if scale == 1.0:  # the nominal row's worlds are the friction x push grid's worlds, by key
            assert w["cache_key"] == World(1.0, w["push_pct"], 90.0, 2.0, w["seed"]).key
    gate = json.loads(next(base.glob("verify-pd_soft-*")).joinpath("equivalence.json").read_text())
    assert gate["passed"] and any("|gravity=" in k for k in gate["sampled_keys"])


def test_reduce_and_report_name_the_axis(base):
    out = base / "ana"
    _run("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", out, "--resamples", "100")
    red = json.loads((out / "reduce.json").read_text())
    assert (red["sweep"]["grid"]["row_axis"], red["sweep"]["grid"]["col_axis"]) == ("gravity", "push")
    assert [b["row"] for b in red["boundary"]] == [0.6, 1.0] and len(red["cells"]) == 6
    _run("report", "--out", out)
    text = (out / "report" / "report.html").read_text()
    assert "Boundary per gravity row" in text and "2 gravity values x 3 pushes x 2 seeds" in text
    table = json.loads((out / "report" / "report.json").read_text())["boundary"]
    assert [row["gravity"] for row in table] == [0.6, 1.0]  # the boundary table's rows, under the axis's name
