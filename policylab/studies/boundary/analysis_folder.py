"""The analysis folder of one sweep: where each analysis stage writes, and how a later stage reads it.

An analysis folder (`--out`) holds one sweep's analysis, one stage per sub-folder, each with the
config that made it (a stage re-run with another config is refused, exit 2):

    OUT/config.json, OUT/reduce.json          reduce  (the folder's identity: store + checkpoint)
    OUT/select/selection.json                 select
    OUT/replay/replays.json                   replay
    OUT/clips/clips.json, *.mp4               clips
    OUT/rrd/rrd.json, *.rrd, *.qpos.npz       rrd     (rrd-files.json: sizes, not deterministic)
    OUT/report/report.json, report.html       report

`diff` and `search` write their own folders (config.json and diff.json or search.json); `report`
renders any of the three kinds. The request
models (`requests.py`) refuse a folder that lacks a stage the command reads, naming the command
to run first; the stages then read the files with `read_stage`. Light: no numpy at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policylab.config import load_json_file
from policylab.errors import BadInput
from policylab.studies.boundary.constants import UNRECORDED_ROBOT

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
    return load_json_file(stage_path(out, stage), "out")


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


def reduced_robot_ref(reduction: dict) -> str:
    """The robot reference of the sweep a reduction read (`UNRECORDED_ROBOT` when it records none)."""
    return reduction["sweep"].get("robot", UNRECORDED_ROBOT)
