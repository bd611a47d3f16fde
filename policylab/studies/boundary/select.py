"""Which worlds to replay: boundary cells and recoveries, chosen from a reduction (docs/boundary.md,
"Selection")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from policylab.config import claim_out_dir
from policylab.fileio import write_json
from policylab.result import Result
from policylab.studies.boundary.analysis_folder import read_stage, stage_path
from policylab.studies.boundary.older_records import ANALYSIS_FORMAT
from policylab.studies.boundary.requests import SelectRequest

RECOVERY_MIN_S = 3 / 16
RECOVERY_MAX_S = 0.5


def _world(cell: Mapping, rollout: Mapping) -> dict:
    return {
        "row": cell["row"],
        "col": cell["col"],
        "cell": cell["cell"],
        "survival": cell["survival"],
        "seed_idx": rollout["seed_idx"],
        "seed": rollout["seed"],
        "key": rollout["key"],
        "cache_key": rollout["cache_key"],
        "recorded_status": rollout["status"],
    }


def boundary_cells(cells: Sequence[Mapping], n: int) -> list[dict]:
    ranked = sorted(
        (c for c in cells if c["survival"] is not None and 0.0 < c["survival"] < 1.0),
        key=lambda c: (abs(c["survival"] - 0.5), c["row"], c["col"]),
    )
    queues: dict[float, list[Mapping]] = {}
    for c in ranked:
        queues.setdefault(c["row"], []).append(c)
    picks: list[dict] = []
    while len(picks) < n and any(queues.values()):
        heads = sorted(
            (q.pop(0) for q in queues.values() if q),
            key=lambda c: (abs(c["survival"] - 0.5), c["row"], c["col"]),
        )
        picks.extend(_world(c, c["rollouts"][0]) for c in heads[: n - len(picks)])
    return picks


def recoveries(cells: Sequence[Mapping], n: int) -> list[dict]:
    eligible = sorted(
        (c for c in cells if c["survival"] is not None and RECOVERY_MIN_S <= c["survival"] <= RECOVERY_MAX_S),
        key=lambda c: (c["survival"], -c["col"], c["row"]),
    )
    picks = []
    for c in eligible[:n]:
        survivors = [r for r in c["rollouts"] if r["status"] == "survived"]
        recorded = survivors[0]
        order = [recorded] + [r for r in c["rollouts"] if r["seed_idx"] != recorded["seed_idx"]]
        picks.append(
            {
                **_world(c, recorded),
                "search_order": [
                    {"seed_idx": r["seed_idx"], "seed": r["seed"], "key": r["key"], "cache_key": r["cache_key"]}
                    for r in order
                ],
            }
        )
    return picks


def divergences(cells: Sequence[Mapping]) -> list[dict]:
    for c in sorted(cells, key=lambda c: (c["row"], c["col"])):
        for r in c["rollouts"]:
            if r["status"] == "diverged":
                return [_world(c, r)]
    return []


def select(reduction: Mapping, *, n_boundary: int, n_recoveries: int) -> dict:
    """The selection.json document (`ANALYSIS_FORMAT`); a world by its row and column values (`row`, `col`)."""
    cells = reduction["cells"]
    return {
        "format": ANALYSIS_FORMAT,
        "checkpoint": reduction["sweep"]["checkpoint"],
        "boundary_cells": boundary_cells(cells, n_boundary),
        "recoveries": recoveries(cells, n_recoveries),
        "divergences": divergences(cells),
        "rule": {
            "boundary_cells": "0 < S < 1, by |S - 0.5| then row then column value, round-robin one per row; seed_idx 0",
            "recoveries": f"{RECOVERY_MIN_S:.4f} <= S <= {RECOVERY_MAX_S}, one per cell, by S ascending, push "
            "descending, row, seed; search order: recorded survivor first, then the other sweep seeds",
            "n_boundary": n_boundary,
            "n_recoveries": n_recoveries,
        },
    }


def run(req: SelectRequest) -> Result:
    """`policylab boundary select`: OUT/select/selection.json from OUT/reduce.json."""
    selection = select(read_stage(req.out, "reduce"), n_boundary=req.n_boundary, n_recoveries=req.n_recoveries)
    claim_out_dir(req.out / "select", req.config())
    path = stage_path(req.out, "select")
    write_json(path, selection)
    return Result(
        path,
        headlines=(
            f"selected {len(selection['boundary_cells'])} boundary cells, {len(selection['recoveries'])} recoveries, "
            f"{len(selection['divergences'])} divergences",
        ),
    )
