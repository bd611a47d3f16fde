"""The fit: deterministic (same traces -> same preset bytes) and what the project ships."""

from policylab.envs.breakout_shadow_params import PRESET_DIR, load_preset
from policylab.studies.breakout import calibrate as C
from policylab.studies.breakout import trace as tr


def test_fit_is_deterministic_and_reproduces_the_shipped_preset():
    suite = tr.load_suite()
    a, rec = C.fit(suite, load_preset("atari"), progress=lambda m: None)
    b, _ = C.fit(suite, load_preset("atari"), progress=lambda m: None)
    assert C.preset_bytes(a) == C.preset_bytes(b)
    assert C.preset_bytes(a) == (PRESET_DIR / "breakout_atari-cal.json").read_bytes()
    assert rec["after"]["objective"] < rec["before"]["objective"]
    kept = {r["change"] for r in rec["accepted"]}
    assert {"paddle_controller", "paddle_overlap_contact"} <= kept
    assert rec["rejected"] and all(r["reason"] for r in rec["rejected"])
