"""The boundary study's older records, read in one place: what a stored sweep, a reduction or a rollout
record that lacks a field means by its absence.

- A sweep's meta, or a reduction of it, that records no robot is the Ant's: the study's only robot when
  such stores were written (`UNRECORDED_ROBOT`; `recorded_robot`, `reduced_robot_ref`). A command given
  no --robot uses the default robot instead (envs/robots/spec.py).
- A sweep's meta that records no policy kind swept a linear policy (`UNRECORDED_POLICY_KIND`,
  `recorded_policy_kind`): the only kind there was when it was written.
- A diverged outcome that names no cause diverged on its states: the only cause there was when it was
  recorded (`UNRECORDED_DIVERGED_CAUSE`, read by `records.diverged_cause`).
- An analysis file (reduce.json, diff.json, a selection, a replay batch, search.json's grid comparison) with
  no ``format`` is of format 1,
  which named a cell's row and column values for the default grid (`mu`, `push_pct_bw`, `mu_idx`,
  `push_idx`, a boundary's `*_pct_bw`) whatever the axes; `current_analysis` reads it as format 2
  (`ANALYSIS_FORMAT`: `row`, `col`, `row_idx`, `col_idx`, the grid naming both axes), so every reader
  reads one format.

Worlds keyed in a former form are not here: a boundary world's key version names its meaning, so a
record of another version is not reused (docs/design.md, "Key versions"). Light: no numpy at import.
"""

from __future__ import annotations

UNRECORDED_ROBOT = "ant"
UNRECORDED_DIVERGED_CAUSE = "state"
UNRECORDED_POLICY_KIND = "linear"


def recorded_robot(meta: dict) -> dict:
    """The robot a sweep's meta records (its ``ref`` and identity), or `UNRECORDED_ROBOT` when it records none."""
    return meta.get("robot") or {"ref": UNRECORDED_ROBOT}


def recorded_policy_kind(meta: dict) -> str:
    """The kind of policy file a sweep's meta records (`policies.files.policy_kind`), or
    `UNRECORDED_POLICY_KIND` when it records none: every sweep before ONNX policies was of a linear one."""
    return meta.get("policy_kind", UNRECORDED_POLICY_KIND)


def reduced_robot_ref(reduction: dict) -> str:
    """The robot reference of the sweep a reduction read (`UNRECORDED_ROBOT` when it records none)."""
    return reduction["sweep"].get("robot", UNRECORDED_ROBOT)


ANALYSIS_FORMAT = 2  # the analysis files' format; 1 had no ``format`` field (`current_analysis`)
_CELL = {"mu": "row", "push_pct_bw": "col", "mu_idx": "row_idx", "push_idx": "col_idx"}
_BOUNDARY = {
    "mu": "row",
    "mu_idx": "row_idx",
    "point_pct_bw": "point",
    "median_pct_bw": "median",
    "ci95_pct_bw": "ci95",
    "grid_step_pct_bw": "grid_step",
    "between_pct_bw": "between",
}
_DISPLACEMENT = {
    "mu": "row",
    "a_median_pct_bw": "a_median",
    "a_ci95_pct_bw": "a_ci95",
    "b_median_pct_bw": "b_median",
    "b_ci95_pct_bw": "b_ci95",
    "displacement_pct_bw": "displacement",
    "logrank_cells_all_fell_pct_bw": "logrank_cells_all_fell",
}


def _renamed(d: dict, names: dict[str, str]) -> dict:
    """`d` with the keys `names` maps renamed, in place of the old ones (the order kept)."""
    return {names.get(k, k): v for k, v in d.items()}


def _grid(g: dict) -> dict:
    """A format-1 grid in today's form: its values under `rows`/`cols`, both axes and their units named
    (friction x push where it names none)."""
    from policylab.studies.boundary.axes import AXES

    row, col = g.get("row_axis", "friction"), g.get("col_axis", "push")
    rest = {k: v for k, v in g.items() if k not in ("mus", "pushes_pct_bw", "row_axis", "col_axis", "set")}
    return {
        "row_axis": row,
        "col_axis": col,
        "row_unit": AXES[row].unit,
        "col_unit": AXES[col].unit,
        "rows": g["mus"],
        "cols": g["pushes_pct_bw"],
        "set": g.get("set", {}),
        **rest,
    }


def current_analysis(stage: str, doc: dict) -> dict:
    """An analysis stage's file (`analysis_folder.STAGES`) in `ANALYSIS_FORMAT`: a format-1 reduction, diff,
    selection or replay batch renamed to today's fields; anything else, and any file of today's format, as it
    is."""
    if not isinstance(doc, dict) or "format" in doc:
        return doc
    if stage == "reduce":
        return {
            "format": ANALYSIS_FORMAT,
            **doc,
            "sweep": {**doc["sweep"], "grid": _grid(doc["sweep"]["grid"])},
            "cells": [_renamed(c, _CELL) for c in doc["cells"]],
            "boundary": [_renamed(b, _BOUNDARY) for b in doc["boundary"]],
        }
    if stage == "diff":
        return {
            "format": ANALYSIS_FORMAT,
            **doc,
            "grid": _grid(doc["grid"]),
            "cells": [_renamed(c, _CELL) for c in doc["cells"]],
            "safer_cells": [_renamed(c, _CELL) for c in doc["safer_cells"]],
            "shrinkage_census": {
                **doc["shrinkage_census"],
                "cells": [_renamed(c, _CELL) for c in doc["shrinkage_census"]["cells"]],
            },
            "boundary_displacement": [_renamed(r, _DISPLACEMENT) for r in doc["boundary_displacement"]],
        }
    if stage == "select":
        kinds = ("boundary_cells", "recoveries", "divergences")
        return {"format": ANALYSIS_FORMAT, **doc, **{k: [_renamed(w, _CELL) for w in doc[k]] for k in kinds}}
    if stage == "search" and doc.get("grid_comparison"):
        return {
            "format": ANALYSIS_FORMAT,
            **doc,
            "grid_comparison": {**doc["grid_comparison"], "grid": _grid(doc["grid_comparison"]["grid"])},
        }
    if stage == "replay":
        return {"format": ANALYSIS_FORMAT, **doc, "replays": [_renamed(r, _CELL) for r in doc["replays"]]}
    return doc
