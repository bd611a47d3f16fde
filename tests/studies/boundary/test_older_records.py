"""`studies.boundary.older_records`, the one place that reads the boundary's older records: a sweep or a
reduction that records no robot is the Ant's, a diverged outcome that names no cause diverged on its
states, and an analysis file of format 1 reads as today's file of the same sweep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from policylab.studies.boundary.older_records import (
    ANALYSIS_FORMAT,
    UNRECORDED_ROBOT,
    current_analysis,
    recorded_policy_kind,
    recorded_robot,
    reduced_robot_ref,
)
from policylab.studies.boundary.records import diverged_cause
from tests.support.boundary_fixtures import cli, make_grid_sweep, make_sweep


def test_a_sweep_or_reduction_without_a_robot_is_the_ants():
    assert recorded_robot({}) == {"ref": UNRECORDED_ROBOT} == {"ref": "ant"}
    assert recorded_robot({"robot": {"ref": "go1_imu", "sha256": "x"}}) == {"ref": "go1_imu", "sha256": "x"}
    assert reduced_robot_ref({"sweep": {}}) == "ant"
    assert reduced_robot_ref({"sweep": {"robot": "go1"}}) == "go1"


def test_a_sweep_without_a_policy_kind_swept_a_linear_policy():
    assert recorded_policy_kind({}) == "linear"
    assert recorded_policy_kind({"policy_kind": "onnx"}) == "onnx"


def test_a_diverged_outcome_without_a_cause_diverged_on_its_states():
    assert diverged_cause({"status": "diverged"}) == "state"
    assert diverged_cause({"status": "diverged", "diverged_cause": "action"}) == "action"
    assert diverged_cause({"status": "failed"}) is None


# -- analysis files of format 1 ----------------------------------------------------------------------

FORMAT1 = Path(__file__).parents[2] / "data" / "boundary_format1"  # written by aee1fb3 (tests/data/README.md)
SWEEP = ((0.65, 1.0), 2, (50, 300), 3, 4)
PAYLOAD_GRID = ["--rows", "payload=0,0.3", "--cols", "push=50,150,250", "--set", "slope=2"]


def _run(*args):
    res = cli(*args)
    assert res.returncode == 0, (args[0], res.stderr)


@pytest.fixture(scope="module")
def today(tmp_path_factory):
    """The sweeps the format-1 files were written from, and today's analysis files of them."""
    base = tmp_path_factory.mktemp("format")
    for name in ("pd_soft", "pd_limp"):
        make_sweep(base, name, *SWEEP)
    ana = base / "ana"
    _run("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", ana, "--resamples", "200")
    _run("select", "--out", ana, "--n-boundary", "3")
    _run("replay", "--out", ana, "--no-verify")
    _run(
        "diff",
        "--store",
        base / "store",
        "--a",
        "pd_soft",
        "--b",
        "pd_limp",
        "--resamples",
        "200",
        "--out",
        base / "diff",
    )
    store = make_grid_sweep(base, "pd_soft", PAYLOAD_GRID, 2, base / "payload_store")
    _run("reduce", "--store", store, "--checkpoint", "pd_soft", "--out", base / "payload_ana", "--resamples", "200")
    return base


def _content(doc):
    """A document without what differs between two runs of the same analysis for a reason other than its
    format: where the store was, and the method and rule texts (each file keeps the words it was written with)."""
    if isinstance(doc, dict):
        return {k: _content(v) for k, v in doc.items() if k not in ("store_root", "method", "rule")}
    if isinstance(doc, list):
        return [_content(v) for v in doc]
    return doc


@pytest.mark.parametrize(
    ("stage", "old", "new"),
    [
        ("reduce", "reduce.json", "ana/reduce.json"),
        ("select", "selection.json", "ana/select/selection.json"),
        ("replay", "replays.json", "ana/replay/replays.json"),
        ("diff", "diff.json", "diff/diff.json"),
        ("reduce", "payload_reduce.json", "payload_ana/reduce.json"),
    ],
)
def test_a_format1_analysis_file_reads_as_todays_file_of_the_same_sweep(today, stage, old, new):
    written = json.loads((FORMAT1 / old).read_text())
    assert "format" not in written and ANALYSIS_FORMAT == 2
    now = json.loads((today / new).read_text())
    assert now["format"] == ANALYSIS_FORMAT
    read = current_analysis(stage, written)
    assert _content(read) == _content(now)
    assert current_analysis(stage, now) is now  # today's format is read as it is


def test_a_report_of_format1_files_shows_what_todays_files_show(today, tmp_path):
    old = tmp_path / "ana"
    for name, where in (("reduce.json", "reduce.json"), ("selection.json", "select/selection.json")):
        (old / where).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FORMAT1 / name, old / where)
    shutil.copy(today / "ana" / "config.json", old / "config.json")
    (old / "replay").mkdir()
    shutil.copy(FORMAT1 / "replays.json", old / "replay" / "replays.json")
    _run("report", "--out", old)
    _run("report", "--out", today / "ana")
    a = json.loads((old / "report" / "report.json").read_text())
    b = json.loads((today / "ana" / "report" / "report.json").read_text())
    for table in ("boundary", "cells", "replays", "totals"):
        assert a[table] == b[table], table
    assert (old / "report" / "heatmap.png").read_bytes() == (today / "ana" / "report" / "heatmap.png").read_bytes()
