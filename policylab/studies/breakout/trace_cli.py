"""`policylab breakout trace`: record the standard ALE trace scenarios into a folder."""

from __future__ import annotations

from pathlib import Path

from policylab.config import claim_out_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.progress import progress_bar
from policylab.studies.breakout import trace as tr


def run_trace(out: Path, scenarios: list[str]) -> Path:
    names = sorted(tr.SCENARIOS) if scenarios == ["all"] or not scenarios else list(scenarios)
    for n in names:
        if n not in tr.SCENARIOS:
            raise BadInput("scenario", f"unknown scenario {n!r}; expected 'all' or one of {', '.join(sorted(tr.SCENARIOS))}")
    claim_out_dir(out, {"command": "breakout trace", "scenarios": {n: tr.SCENARIOS[n].header() for n in names}})
    summary = {}
    with progress_bar("ALE traces", len(names), "trace") as bar:
        for n in names:
            spec = tr.SCENARIOS[n]
            arrays = tr.record(spec)
            tr.save(out / f"{n}.npz", spec, arrays)
            s = tr.signals(arrays["ram"])
            summary[n] = {"frames": int(arrays["action"].size), "score": int(s["score"][-1]),
                          "lives_end": int(s["lives"][-1]), "spec": spec.header()}
            bar.advance(1)
    write_json(out / "traces.json", summary)
    return out
