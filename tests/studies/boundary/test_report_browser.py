"""Sweep and diff reports render in headless Chromium with every image loaded, embed the clips, are
written JSON first and byte-identical on a re-run; bad input writes nothing."""

from __future__ import annotations

import json
import re

import pytest

from policylab.report.browser import render_check
from tests.support.boundary_fixtures import cli, make_sweep


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    for name in ("pd_soft", "pd_limp"):
        make_sweep(base, name, (0.65, 1.0), 2, (50, 300), 3, 4)
    return base


def _run(*args):
    res = cli(*args)
    assert res.returncode == 0, (args[0], res.stderr)
    return res


def test_sweep_report_in_browser(base):
    out = base / "ana"
    _run("reduce", "--store", base / "store", "--checkpoint", "pd_soft", "--out", out, "--resamples", "500")
    _run("select", "--out", out, "--n-boundary", "3")
    _run("replay", "--out", out, "--no-verify")
    _run("clips", "--out", out, "--width", "64", "--height", "48")
    res = _run("report", "--out", out)
    html = out / "report" / "report.html"
    assert res.report == html and res.stdout.strip() == f"report: {html}"
    data = json.loads((out / "report" / "report.json").read_text())
    clips = json.loads((out / "clips" / "clips.json").read_text())
    assert [c["outcome"] for c in data["clips"]] == [c["outcome"] for c in clips]
    text = html.read_text()
    videos = re.findall(r'<video src="([^"]+)"', text)
    assert len(videos) == len(clips) > 0
    for v in videos:
        assert (html.parent / v).is_file()
    check = render_check(html)
    assert check["images"] >= 2 and check["loaded"] == check["images"], check
    assert check["title"].startswith("Failure boundary: pd_soft")
    before = {p.name: p.read_bytes() for p in (out / "report").iterdir()}
    _run("report", "--out", out)
    assert {p.name: p.read_bytes() for p in (out / "report").iterdir()} == before  # same input, same bytes


def test_diff_report_in_browser(base):
    out = base / "diff"
    _run("diff", "--store", base / "store", "--a", "pd_soft", "--b", "pd_limp", "--resamples", "500", "--out", out)
    _run("report", "--out", out)
    html = out / "report" / "report.html"
    check = render_check(html)
    assert check["images"] == 3 and check["loaded"] == 3, check
    data = json.loads((out / "report" / "report.json").read_text())
    assert "shrinkage_census" in data and "safer_cells" in data
    text = html.read_text()
    assert "Shrinkage census" in text and "Cells made safer" in text


def test_report_bad_input_writes_nothing(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("report", "--out", empty)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"policylab: error: out: {empty / 'reduce.json'} not found; run `policylab boundary reduce` first"
    ]
    assert list(empty.iterdir()) == []
