"""The velocity-kick axis end to end (the Ant's PD hold, fast): a friction x kick grid sweeps, passes the
equivalence gate, reduces with each row's boundary in m/s, N s and %BW side by side, replays its worlds
bit for bit and reports; a search runs over kick rows; a kick out of range is one line, exit 2, nothing
written. The physics of the kick is tested in tests/envs/robots/test_kick.py."""

from __future__ import annotations

import json

import pytest

from policylab.rollout.store import Store
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.reduce import in_units
from tests.support.boundary_fixtures import ANT, cli, make_grid_sweep

GRID = ["--rows", "friction=0.6,1.2", "--cols", "kick=0:3:4"]  # 2 x 4 cells; the hold falls to kicks of 2-3 m/s
G = 9.81


def _run(*args):
    res = cli(*args)
    assert res.returncode == 0, (args[0], res.stderr)
    return res


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = tmp_path_factory.mktemp("kick")
    make_grid_sweep(base, "pd_soft", GRID, 3)  # sweep, then verify (its exit status 0: the gate passed)
    return base


def test_in_units_states_a_push_and_a_kick_alike():
    m = 10.0
    push = in_units(100.0, "push", m, G, 0.5)
    assert push == pytest.approx({"pct_bw": 100.0, "impulse_ns": m * G * 0.5, "velocity_mps": G * 0.5})
    kick = in_units(G * 0.5, "kick", m, G, 0.5)  # the kick of that velocity: the same impulse, the same %BW
    assert kick == pytest.approx(push)
    assert in_units(None, "kick", m, G, 0.5) == {"pct_bw": None, "impulse_ns": None, "velocity_mps": None}


def test_kick_grid_records_and_gate(base):
    with Store(base / "store") as store:
        meta = store.get_meta("boundary/sweep/pd_soft")
        worlds = [r.data["world"] for r in store.records("boundary")]
    g = meta["grid"]
    assert (g["row_axis"], g["col_axis"], g["pushes_pct_bw"]) == ("friction", "kick", [0.0, 1.0, 2.0, 3.0])
    assert len(worlds) == 2 * 4 * 3
    for w in worlds:
        kick = g["pushes_pct_bw"][w["push_idx"]]
        assert w.get("kick_mps", 0.0) == kick and w["push_pct"] == 0.0
        assert ("|kick=" in w["cache_key"]) == (kick != 0)  # a kick of 0 is the world without one: its key
    gate = json.loads(next(base.glob("verify-pd_soft-*")).joinpath("equivalence.json").read_text())
    assert gate["passed"] and any("|kick=" in k for k in gate["sampled_keys"])


@pytest.mark.slow
def test_kick_grid_reduces_replays_and_reports(base):
    out = base / "ana"
    _run("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", out, "--resamples", "200")
    red = json.loads((out / "reduce.json").read_text())
    assert "in_units" in red["method"]
    mass = ANT.mass_kg()
    located = 0
    for b in red["boundary"]:
        u = b["in_units"]
        assert u["mass_kg"] == mass and u["push_duration_s"] == PUSH_DURATION_S
        assert u["velocity_mps"]["median"] == b["median"]  # a kick column's own unit is m/s
        if b["status"] == "boundary":
            located += 1
            v = b["median"]
            assert u["impulse_ns"]["median"] == pytest.approx(mass * v)
            assert u["pct_bw"]["median"] == pytest.approx(v / (G * PUSH_DURATION_S) * 100.0)
            assert u["impulse_ns"]["ci95"] == pytest.approx([mass * c for c in b["ci95"]])
    assert located, red["boundary"]  # the hold falls to the larger kicks: there is a boundary to state
    _run("select", "--out", out, "--n-boundary", "2", "--n-recoveries", "1")
    _run("replay", "--out", out)  # --verify by default: the chosen worlds simulated again
    replays = json.loads((out / "replay" / "replays.json").read_text())
    eq = replays["equivalence_summary"]
    assert eq["checked"] and eq["bitwise_equal"] == eq["checked"], replays
    assert any("|kick=" in (r.get("cache_key") or "") for r in replays["replays"])
    _run("report", "--out", out)
    data = json.loads((out / "report" / "report.json").read_text())
    row = next(r for r in data["boundary"] if r["status"] == "boundary")
    assert {"median N s", "ci95 N s", "median %BW", "ci95 %BW"} <= set(row)
    text = (out / "report" / "report.html").read_text()
    assert "Boundary per friction row (m/s" in text and "median N s" in text


def test_search_over_kick_rows(tmp_path):
    res = cli(
        "search",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--rows",
        "kick=0,1.5",
        "--budget",
        8,
        "--store",
        tmp_path / "store",
        "--out",
        tmp_path / "out",
    )
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "out" / "search.json").read_text())
    assert [r["values"] for r in data["rows"]] == [{"kick": 0.0}, {"kick": 1.5}]
    with Store(tmp_path / "store") as store:
        kicks = sorted({r.data["world"].get("kick_mps", 0.0) for r in store.records()})
    assert kicks == [0.0, 1.5]


@pytest.mark.parametrize(
    "args,field",
    [
        (["--cols", "kick=0:4:3"], "cols"),
        (["--rows", "kick=-0.5,1"], "rows"),
        (["--set", "kick=3.01"], "set"),
    ],
)
def test_kick_out_of_range_is_one_line(tmp_path, args, field):
    res = cli("sweep", "--robot", "ant", "--checkpoint", "ant_v0", *args, "--store", tmp_path / "store")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}: kick "), lines
    assert list(tmp_path.iterdir()) == []
