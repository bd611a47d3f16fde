"""`policylab breakout calibrate`: load the traces, fit (`fit.py`), write preset.json, calibration.json and the
page (`report.py`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from policylab.config import claim_out_dir
from policylab.envs.breakout.params import ShadowParams, load_preset
from policylab.envs.breakout.presets import PRESET_DIR
from policylab.errors import BadInput
from policylab.fileio import atomic_write_bytes, write_json
from policylab.hashing import pretty_json
from policylab.studies.breakout.fidelity import trace
from policylab.studies.breakout.fidelity.calibration.fit import fit
from policylab.studies.breakout.fidelity.calibration.report import write_calibration_report
from policylab.studies.breakout.requests import CalibrateRequest

CAL_PRESET_NAME = "atari-cal"


def as_preset(params: ShadowParams) -> dict:
    """The fitted params named `atari-cal`."""
    return params.model_copy(update={"name": CAL_PRESET_NAME}).model_dump()


def preset_bytes(params: ShadowParams) -> bytes:
    """The preset file of the fitted params (what `--write-preset` ships)."""
    return pretty_json(as_preset(params)).encode()


def load_traces(folder: Path) -> dict:
    """The trace suite in `folder`; BadInput("traces") if a file is unreadable or no policy trace is there."""
    try:
        suite = trace.load_suite(folder)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        raise BadInput("traces", f"{folder}: unreadable trace file ({exc})") from None
    for name, (_, arrays) in sorted(suite.items()):
        if not {"action", "ram"} <= set(arrays):
            raise BadInput("traces", f"{folder}: trace {name} lacks its action or ram array")
    if not any(spec.kind == "policy" for spec, _ in suite.values()):
        raise BadInput("traces", f"{folder} holds no policy trace (record them with `policylab breakout trace`)")
    return suite


def run(req: CalibrateRequest) -> Path:
    """Fit, write preset.json and the report; returns calibration.html."""
    suite = load_traces(req.traces or trace.TRACE_DIR)
    base_params = load_preset(req.base, "base")
    config = {
        "command": "breakout calibrate",
        "base": req.base,
        "base_params": base_params.model_dump(),
        "traces": {name: spec.header() for name, (spec, _) in sorted(suite.items())},
        "write_preset": req.write_preset,
    }
    claim_out_dir(req.out, config)
    params, record = fit(suite, base_params)
    preset = preset_bytes(params)
    atomic_write_bytes(req.out / "preset.json", preset)
    if req.write_preset:
        atomic_write_bytes(PRESET_DIR / f"breakout_{CAL_PRESET_NAME}.json", preset)
    data = {
        "base": req.base,
        "preset_name": CAL_PRESET_NAME,
        "preset": as_preset(params),
        **record,
        "traces": config["traces"],
    }
    write_json(req.out / "calibration.json", data)
    return write_calibration_report(req.out, data)
