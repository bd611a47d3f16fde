"""`policylab breakout calibrate` / `trace` through the real CLI: outputs, HTML in Chromium, bad input."""

import json
import subprocess
import sys

from policylab.report.browser import render_check

CLI = [sys.executable, "-m", "policylab.cli", "breakout"]


def cli(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_calibrate_writes_preset_json_and_a_report_that_renders(tmp_path):
    out = tmp_path / "cal"
    proc = cli("calibrate", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((out / "calibration.json").read_text())
    assert data["accepted"] and data["rejected"]
    assert json.loads((out / "preset.json").read_text())["name"] == "atari-cal"
    check = render_check(out / "calibration.html")
    assert check["images"] >= 1 and check["loaded"] == check["images"]


def _bad(tmp_path, *args, field):
    out = tmp_path / "bad"
    proc = cli(*args, "--out", out)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"policylab: error: {field}")
    assert not out.exists()


def test_calibrate_bad_input(tmp_path):
    _bad(tmp_path, "calibrate", "--traces", tmp_path / "missing", field="traces")
    (tmp_path / "empty").mkdir()
    _bad(tmp_path, "calibrate", "--traces", tmp_path / "empty", field="traces")
    _bad(tmp_path, "calibrate", "--base", "no-such-preset", field="base")


def test_trace_unknown_scenario(tmp_path):
    _bad(tmp_path, "trace", "--scenario", "nope", field="scenario")
