"""The analysis folder of one sweep: where each analysis stage writes, and how a later stage reads it.

One stage per sub-folder, each with its config (docs/boundary.md, "Commands"). Light: no numpy at import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policylab.config import load_json_file
from policylab.errors import BadInput
from policylab.studies.boundary.older_records import current_analysis

# stage -> the files it leaves in the analysis folder (the first one is what later stages read)
STAGES: dict[str, tuple[str, ...]] = {
    "reduce": ("reduce.json", "config.json"),
    "select": ("select/selection.json",),
    "replay": ("replay/replays.json",),
    "clips": ("clips/clips.json",),
    "rrd": ("rrd/rrd.json",),
    "diff": ("diff.json",),
    "search": ("search.json", "config.json"),
}


def stage_path(out: Path, stage: str) -> Path:
    return out / STAGES[stage][0]


def missing_stage(out: Path, stage: str) -> str | None:
    """Why `out` cannot be read as having run `stage` (None when it has)."""
    for name in STAGES[stage]:
        if not (out / name).is_file():
            return f"{out / name} not found; run `policylab boundary {stage}` first"
    return None


def read_stage(out: Path, stage: str) -> Any:
    """What `stage` wrote in `out`, in today's format whatever format it was written in
    (`older_records.current_analysis`)."""
    return current_analysis(stage, load_json_file(stage_path(out, stage), "out"))


def reduced_config(out: Path) -> dict:
    """The config reduce recorded: the store and the checkpoint name the folder belongs to."""
    return load_json_file(out / "config.json", "out")


def recorded_store(out: Path):
    """The store the folder's sweep was reduced from (it must still be where reduce found it)."""
    from policylab.rollout.store import Store

    root = Path(reduced_config(out)["store"])
    if not (root / "index.sqlite").is_file():
        raise BadInput("out", f"the store {root} that {out} was reduced from is gone (no index.sqlite)")
    return Store(root, readonly=True)
