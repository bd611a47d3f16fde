"""The fit: what the project ships, and the same bytes on every run. The fit runs twice in the suite: here
and through the CLI (test_calibration_cli.py); both must give the shipped preset's bytes."""

from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.presets import PRESET_DIR
from policylab.studies.breakout.fidelity import trace
from policylab.studies.breakout.fidelity.calibration.calibrate import preset_bytes
from policylab.studies.breakout.fidelity.calibration.fit import STAGES, fit


def test_fit_reproduces_the_shipped_preset_and_records_every_stage():
    params, rec = fit(trace.load_suite(), load_preset("atari"), progress=lambda m: None)
    assert preset_bytes(params) == (PRESET_DIR / "breakout_atari-cal.json").read_bytes()
    assert rec["after"]["objective"] < rec["before"]["objective"]
    kept = {r["change"] for r in rec["accepted"]}
    assert {"paddle_controller", "paddle_overlap_contact", "ale_ball_logic", "brick_rearm_on_bounce"} <= kept
    assert rec["rejected"] and all(r["reason"] for r in rec["rejected"])
    assert {r["kind"] for r in rec["accepted"] + rec["rejected"]} == {s.kind for s in STAGES}
    assert not any(r["kind"] == "tuned" for r in rec["accepted"])  # docs/breakout.md: every tuned change rejected
