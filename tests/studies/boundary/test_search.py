"""`policylab boundary search` on the Go1 (small: one or two rows, a narrow push range, a small budget):
same config, same bytes; a search interrupted after some rounds resumes to the same bytes; worlds of the
default grid are the grid's records; the page in headless Chromium; bad input writes nothing."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess

import pytest

from policylab.report.browser import render_check
from policylab.rollout.store import Store
from policylab.studies.boundary.axes import parse_rows
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.records import sweep_keys
from policylab.studies.boundary.search import run_search
from policylab.studies.boundary.world import Grid
from tests.support import signal_at
from tests.support.boundary_fixtures import cli
from tests.support.paths import ROOT
from tests.support.words import unexplained

ARGS = (
    "--robot",
    "go1",
    "--checkpoint",
    "go1_v0",  # go1_v0's own search, pinned by its grid's keys below
    "--rows",
    "friction=0.6",
    "--push-min",
    10,
    "--push-max",
    60,
    "--budget",
    28,
    "--batch",
    4,
)


def _search(store, out, *extra):
    res = cli("search", *ARGS, *extra, "--store", store, "--out", out)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    base = tmp_path_factory.mktemp("search")
    _search(base / "a" / "store", base / "a" / "out")
    return base


def test_same_config_same_bytes_and_grid_records(first, tmp_path):
    _search(tmp_path / "store", tmp_path / "out")
    a = (first / "a" / "out" / "search.json").read_bytes()
    assert (tmp_path / "out" / "search.json").read_bytes() == a
    data = json.loads(a)
    row = data["rows"][0]
    assert row["rollouts"] == 28 and row["grid_worlds"] > 0 and data["totals"]["rollouts"] <= 28
    # the search's rollout at (mu 0.6, push 10, the cell's first seed) is the default grid's record
    ckpt = resolve_checkpoint("go1_v0")
    grid = Grid.build()
    key = next(
        k for k, gw in sweep_keys(grid, ckpt) if gw.world.mu == 0.6 and gw.world.push_pct == 10.0 and gw.seed_idx == 0
    )
    with Store(first / "a" / "store") as store:
        assert store.has(key)


def test_interrupted_search_resumes_to_the_same_bytes(first, tmp_path):
    ckpt = resolve_checkpoint("go1_v0")
    summary, _ = run_search(
        ckpt,
        parse_rows(["friction=0.6"]),
        {},
        push_range=(10.0, 60.0),
        level=0.5,
        target_width=10.0,
        budget=28,
        batch=4,
        block=0,
        store_root=tmp_path / "store",
        max_rounds=2,
    )
    assert not summary["complete"]
    with Store(tmp_path / "store") as store:
        assert len(store.keys()) == 8
    _search(tmp_path / "store", tmp_path / "out")
    assert (tmp_path / "out" / "search.json").read_bytes() == (first / "a" / "out" / "search.json").read_bytes()


def _count(db) -> int:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_killed_search_resumes_to_the_same_bytes(first, tmp_path):
    """A real process killed (SIGKILL) part way, then the same command again: the same search.json. The
    command kills itself right after its first commit (`tests.support.signal_at`; the local executor commits
    with `put_many`): a kill timed from outside can miss a search that ends in a second."""
    store = tmp_path / "store"
    args = ["boundary", "search", *map(str, ARGS), "--store", str(store), "--out", str(tmp_path / "out")]
    proc = subprocess.run(
        signal_at.argv(["policylab.rollout.store:Store.put_many,after,SIGKILL"], args),
        capture_output=True,
        timeout=300,
        cwd=ROOT,
        env=signal_at.env(),
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    killed_at = _count(store / "index.sqlite")
    assert 0 < killed_at < 28, killed_at  # really interrupted part way
    _search(store, tmp_path / "out")
    assert (tmp_path / "out" / "search.json").read_bytes() == (first / "a" / "out" / "search.json").read_bytes()


def test_search_page_in_browser(first):
    out = first / "a" / "out"
    res = cli("report", "--out", out)
    assert res.returncode == 0, res.stderr
    html = out / "report" / "report.html"
    check = render_check(html)
    assert check["images"] == 2 and check["loaded"] == 2, check
    assert check["title"].startswith("Boundary search: go1_v0")
    assert unexplained(check["text"]) == []  # its subtitle read "push 10-60 %BW; crossing of S = 0.5"
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["rows"][0]["rollouts"] == 28 and "interval" in report["method"]


def test_another_seed_block_draws_other_worlds(first, tmp_path):
    _search(tmp_path / "store", tmp_path / "out", "--seed-block", 1)
    with Store(tmp_path / "store") as b, Store(first / "a" / "store") as a:
        assert not set(b.keys()) & set(a.keys())
    data = json.loads((tmp_path / "out" / "search.json").read_text())
    assert data["rows"][0]["grid_worlds"] == 0


@pytest.mark.parametrize(
    "args, field",
    [
        (("--rows", "bogus=1"), "rows"),
        (("--rows", "push=10:20:3"), "rows"),
        (("--rows", "friction=0.3", "--set", "friction=0.5"), "set"),
        (("--rows", "payload=0,50"), "rows"),
        (("--push-min", 50, "--push-max", 40), "push_max"),
    ],
)
def test_bad_input_writes_nothing(tmp_path, args, field):
    res = cli("search", *args, "--store", tmp_path / "store", "--out", tmp_path / "out")
    assert res.returncode == 2 and field in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()


def test_several_row_axes_page_shows_each_axis(tmp_path):
    """Rows over two axes (the Ant, fast) and a held axis: every combination is a row, the records name the
    axes they set, and the page draws where the boundary moves along each axis."""
    res = cli(
        "search",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--rows",
        "friction=0.5,1.0",
        "--rows",
        "motor=0.8,1.0",
        "--set",
        "delay=1",
        "--budget",
        16,
        "--store",
        tmp_path / "store",
        "--out",
        tmp_path / "out",
    )
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "out" / "search.json").read_text())
    assert [r["values"] for r in data["rows"]] == [{"friction": f, "motor": m} for f in (0.5, 1.0) for m in (0.8, 1.0)]
    with Store(tmp_path / "store") as store:
        worlds = [r.data["world"] for r in store.records()]
    assert len(worlds) == 16 and all(w["action_delay"] == 1 for w in worlds)
    assert {w.get("motor_scale", 1.0) for w in worlds} == {0.8, 1.0}
    assert cli("report", "--out", tmp_path / "out").returncode == 0
    check = render_check(tmp_path / "out" / "report" / "report.html")
    assert check["images"] == 3 and check["loaded"] == 3, check


def test_search_beside_a_grid_compares_with_it(tmp_path):
    """A store that holds a complete sweep of the checkpoint: the search reports the grid's boundary row by
    row beside its own, and the page draws both."""
    store = tmp_path / "store"
    assert (
        cli(
            "sweep",
            "--robot",
            "ant",
            "--checkpoint",
            "ant_v0",
            "--mu-min",
            0.5,
            "--mu-max",
            1.0,
            "--n-mu",
            2,
            "--push-min",
            100,
            "--push-max",
            300,
            "--n-push",
            3,
            "--seeds-per-cell",
            2,
            "--store",
            store,
            "--out",
            tmp_path / "sweep",
        ).returncode
        == 0
    )
    res = cli(
        "search",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--rows",
        "friction=0.5,0.75,1.0",
        "--budget",
        24,
        "--store",
        store,
        "--out",
        tmp_path / "out",
    )
    assert res.returncode == 0, res.stderr
    grid = json.loads((tmp_path / "out" / "search.json").read_text())["grid_comparison"]
    assert grid["rollouts"] == 12 and [g["mu"] for g in grid["rows"]] == [0.5, 1.0]  # 0.75 is not a grid row
    assert len(grid["survival"]) == 2 and len(grid["survival"][0]) == 3
    assert cli("report", "--out", tmp_path / "out").returncode == 0
    html = tmp_path / "out" / "report" / "report.html"
    assert "Search against the grid in the store" in html.read_text()
    check = render_check(html)
    assert check["images"] == 2 and check["loaded"] == 2, check
