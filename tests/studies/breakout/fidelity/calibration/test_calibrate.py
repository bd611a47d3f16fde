"""`policylab breakout calibrate` / `trace` through the CLI (in-process): outputs (the shipped preset's bytes)
and the report in Chromium (bad input: tests/breakout_cli/test_breakout_requests.py)."""

import json

from policylab.cli import invoke
from policylab.envs.breakout.presets import PRESET_DIR
from policylab.report.browser import render_check


def test_calibrate_writes_preset_json_and_a_report_that_renders(tmp_path, capsys):
    out = tmp_path / "cal"
    assert invoke(["breakout", "calibrate", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {out / 'calibration.html'}"
    data = json.loads((out / "calibration.json").read_text())
    assert data["accepted"] and data["rejected"]
    assert (out / "preset.json").read_bytes() == (PRESET_DIR / "breakout_atari-cal.json").read_bytes()
    check = render_check(out / "calibration.html")
    assert check["images"] >= 1 and check["loaded"] == check["images"]


def test_trace_records_a_scenario(tmp_path, capsys):
    out = tmp_path / "traces"
    assert invoke(["breakout", "trace", "--scenario", "noop_serves", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {out / 'traces.json'}"
    from policylab.studies.breakout.fidelity import trace

    spec, arrays = trace.load(out / "noop_serves.npz")
    committed = trace.load(trace.TRACE_DIR / "noop_serves.npz")[1]
    assert spec == trace.SCENARIOS["noop_serves"]
    assert all((arrays[k] == committed[k]).all() for k in ("action", "ram"))
    assert json.loads((out / "traces.json").read_text())["noop_serves"]["frames"] == arrays["action"].size
