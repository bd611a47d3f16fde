"""A sweep's grid maps any two axes of the catalogue (`--rows`, `--cols`, `--set`): a payload x push grid
through sweep, verify, reduce, report (in headless Chromium), diff and the probe's map; today's friction x
push grid is recorded byte for byte as before; bad axes are one line, exit 2, nothing written."""

from __future__ import annotations

import hashlib
import json

import pytest

from policylab.errors import BadInput
from policylab.hashing import canonical_json
from policylab.report.browser import Session, render_check
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.diff import check_comparable
from policylab.studies.boundary.probe_view import StoreView
from policylab.studies.boundary.records import planned_sweep, sweep_meta
from policylab.studies.boundary.requests import ProbeRunForm
from policylab.studies.boundary.world import Grid
from tests.support.boundary_fixtures import ANT, cli, make_grid_sweep
from tests.support.probe_page import run_and_wait, start_probe, stop_probe

# Hashes of the default grid's planned rollouts, written by the code before grids could map other axes
# (commit 66c6615): the store keys, the records' world parts, the grid and the sweep's store meta.
PINNED = {
    ("ant", "ant_v0"): ("9b7d18a74159e533", "6cb776e5b0844ce4", "b2beedf0fe4f9612", "2a8dbd0a15c42cc1"),
    ("go1", "go1_v0"): ("01a4b16687deb6c9", "95c2cd8eed0abf56", "b2beedf0fe4f9612", "0f3ee296740f8090"),
}
# conftest's 4 x 4 x 4 sweep of ant_v0, as the grid code of commit 66c6615 wrote it, with the store's payload
# digests taken over the arrays (store schema 2; the same store the store branch alone writes)
SMALL_SWEEP_FINGERPRINT = "a5361b08911a86b8e52f29ed243d3bc3"
AXES_GRID = ["--rows", "payload=0,0.3", "--cols", "push=50:250:3"]  # 2 x 3 cells


def _h(x) -> str:
    return hashlib.sha256(canonical_json(x).encode()).hexdigest()[:16]


@pytest.mark.parametrize("robot,name", list(PINNED))
def test_default_grid_records_are_unchanged(robot, name):
    ckpt = resolve_checkpoint(name, robot)
    grid = Grid.build()
    assert grid == Grid.build(rows="friction=0.05:1.00:20", cols="push=10:200:20")  # the same grid, spelt out
    planned = planned_sweep(grid, ckpt)
    assert (
        _h([p.key for p in planned]),
        _h([p.world for p in planned]),
        _h(grid.as_dict()),
        _h(sweep_meta(grid, ckpt)),
    ) == PINNED[(robot, name)]


def test_default_sweep_writes_the_same_store(small_sweep):
    _, summary = small_sweep
    assert summary["store_fingerprint"] == SMALL_SWEEP_FINGERPRINT


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = tmp_path_factory.mktemp("axes")
    for name in ("pd_soft", "pd_limp"):
        make_grid_sweep(base, name, AXES_GRID, 3)
    return base


def _run(*args):
    res = cli(*args)
    assert res.returncode == 0, (args[0], res.stderr)
    return res


def test_records_name_their_axes(base):
    with Store(base / "store") as store:
        meta = store.get_meta("boundary/sweep/pd_soft")
        worlds = [
            r.data["world"] for r in store.records("boundary") if r.data["world"]["checkpoint"]["name"] == "pd_soft"
        ]
    g = meta["grid"]
    assert (g["row_axis"], g["col_axis"], g["set"], g["mus"], g["pushes_pct_bw"]) == (
        "payload",
        "push",
        {},
        [0.0, 0.3],
        [50.0, 150.0, 250.0],
    )
    assert len(worlds) == 2 * 3 * 3
    for w in sorted(worlds, key=lambda w: w["rollout_index"]):
        assert (w["row_axis"], w["col_axis"], w["mu"]) == ("payload", "push", 1.0)
        assert w.get("payload_kg", 0.0) == g["mus"][w["mu_idx"]] and w["push_pct"] == g["pushes_pct_bw"][w["push_idx"]]
        assert ("payload" in w["cache_key"]) == (w["mu_idx"] == 1)
        assert w["seed"] == 1_000_000 + w["rollout_index"]  # the sweep's seed scheme: the keys name the axes


def test_held_axes_enter_every_world():
    grid = Grid.build(rows="motor=0.8,1.2", cols="push_dir=0:180:3", seeds_per_cell=2, held=["delay=1", "slope=2"])
    worlds = [gw.world for gw in grid.worlds()]
    assert {(w.action_delay, w.slope_deg, w.mu, w.push_pct) for w in worlds} == {(1, 2.0, 1.0, 0.0)}
    assert [w.push_dir for w in worlds[:6]] == [0.0, 0.0, 90.0, 90.0, 180.0, 180.0]
    assert grid.as_dict()["set"] == {"delay": 1.0, "slope": 2.0}


@pytest.mark.slow
def test_reduce_report_and_diff_on_payload_by_push(base):
    out = base / "ana"
    _run("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", out, "--resamples", "200")
    red = json.loads((out / "reduce.json").read_text())
    assert (red["sweep"]["grid"]["row_axis"], red["sweep"]["grid"]["col_axis"]) == ("payload", "push")
    assert [b["row"] for b in red["boundary"]] == [0.0, 0.3] and len(red["cells"]) == 6
    assert [b["in_units"]["mass_kg"] for b in red["boundary"]] == [ANT.mass_kg(0.0), ANT.mass_kg(0.3)]  # its payload
    _run("select", "--out", out, "--n-boundary", "2", "--n-recoveries", "1")
    _run("replay", "--out", out)
    _run("clips", "--out", out, "--width", "64", "--height", "48", "--workers", "1")
    clips = json.loads((out / "clips" / "clips.json").read_text())
    replays = json.loads((out / "replay" / "replays.json").read_text())["replays"]
    assert all((r.get("equivalence") or {}).get("equal", True) for r in replays)
    _run("report", "--out", out)
    html = out / "report" / "report.html"
    check = render_check(html)
    assert check["images"] >= 2 and check["loaded"] == check["images"], check
    text = html.read_text()
    assert "Boundary per payload row" in text and "2 payload values x 3 pushes x 3 seeds" in text
    assert clips
    for c in clips:  # a clip's caption names the payload its world carries
        assert ("payload_kg" in c) == ("payload" in c["cache_key"])
        assert ("payload" in c["cache_key"]) <= (f"push {c['push_pct_bw']:g} %BW, payload 0.3 kg" in text)

    diff = base / "diff"
    _run("diff", "--store", base / "store", "--a", "pd_soft", "--b", "pd_limp", "--resamples", "200", "--out", diff)
    assert json.loads((diff / "diff.json").read_text())["grid"]["row_axis"] == "payload"
    _run("report", "--out", diff)
    check = render_check(diff / "report" / "report.html")
    assert check["images"] == 3 and check["loaded"] == 3, check

    other = {
        **red,
        "sweep": {
            **red["sweep"],
            "checkpoint": "other",
            "grid": {k: v for k, v in red["sweep"]["grid"].items() if k != "row_axis"},
        },
    }
    with pytest.raises(BadInput, match="differ in row_axis"):
        check_comparable(red, other)


def test_probe_map_of_payload_by_push(base):
    view = StoreView(base / "store", resamples=100)
    entry = next(e for e in view.maps()["sweeps"] if e["name"] == "pd_soft")
    axes = entry["axes"]
    assert (axes["row"]["name"], axes["row"]["label"], axes["col"]["name"]) == (
        "payload_kg",
        "torso payload (kg)",
        "push_pct",
    )
    cell = next(c for c in entry["reduction"]["cells"] if c["row_idx"] == 1 and c["col_idx"] == 2)
    world = {**axes["world"], axes["row"]["name"]: cell["row"], axes["col"]["name"]: cell["col"]}
    form = ProbeRunForm(map="pd_soft", checkpoint="pd_soft", world=world, sweep_seed=cell["rollouts"][0]["seed"])
    planned = view.plan(form).planned
    with Store(base / "store") as store:
        assert store.get(planned.key) is not None  # "Load + run" on a cell finds its stored record


@pytest.mark.slow
def test_probe_page_on_payload_by_push(base, tmp_path):
    """The page draws the payload x push map with its axes' titles, and "Load + run" on a cell plays the
    cell's world (its payload included): the stored record, bit for bit."""
    proc, url = start_probe(base / "store", tmp_path / "probe-out")
    try:
        with Session() as page:
            page.open(url)
            page.wait_for("document.body && document.body.dataset.ready", timeout=120)
            page.evaluate(
                "const s = document.getElementById('sweep'); s.value = 'pd_soft'; s.dispatchEvent(new Event('change'))"
            )
            titles = page.evaluate("[...document.querySelectorAll('#map text')].map(t => t.textContent)")
            assert "torso payload, kg" in titles and "lateral push, %BW" in titles, titles
            assert page.evaluate("document.querySelectorAll('rect.cell').length") == 6
            page.evaluate(
                "document.querySelector(\"rect.cell[data-mu='1'][data-push='0']\")"
                ".dispatchEvent(new MouseEvent('click'))"
            )
            assert "torso payload (kg) 0.3" in page.evaluate("document.getElementById('cell').innerText")
            shown = run_and_wait(page, "document.querySelectorAll('#cell-worlds button.run-world')[0].click()")
        with Store(base / "store") as store:
            rec = next(
                r
                for r in store.records("boundary")
                if r.data["world"]["checkpoint"]["name"] == "pd_soft"
                and (r.data["world"]["mu_idx"], r.data["world"]["push_idx"], r.data["world"]["seed_idx"]) == (1, 0, 0)
            )
        assert shown["key"] == rec.key and shown["stored"] == "equal", shown
    finally:
        stop_probe(proc)


@pytest.mark.parametrize(
    "args,field",
    [
        (["--rows", "foo=1,2"], "rows"),
        (["--rows", "payload=0:20:3"], "rows"),
        (["--rows", "payload=1,1.01"], "rows"),
        (["--rows", "payload"], "rows"),
        (["--rows", "push_t0=1,2"], "rows"),
        (["--rows", "push=0,10"], "cols"),
        (["--rows", "payload=0,1", "--n-mu", "3"], "rows"),
        (["--cols", "motor=0.5:1.5:3", "--push-max", "100"], "cols"),
        (["--set", "delay=1,2"], "set"),
        (["--set", "push=10"], "set"),
        (["--rows", "payload=0:10:101", "--cols", "motor=0.5:1.5:101", "--seeds-per-cell", "200"], "seeds_per_cell"),
    ],
)
def test_bad_axes_are_one_line(tmp_path, args, field):
    res = cli("sweep", "--robot", "ant", "--checkpoint", "ant_v0", *args, "--store", tmp_path / "store")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}: "), lines
    assert list(tmp_path.iterdir()) == []
