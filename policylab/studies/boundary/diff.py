"""Cell-by-cell diff of two sweeps of the same grid (checkpoint A = before, B = after a retrain).

Fisher exact per cell, Benjamini-Hochberg at q < 0.05; the method: docs/boundary.md, "Diff method"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from policylab.config import claim_out_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.result import Result
from policylab.stats import bh_qvalues, fisher_exact, logrank
from policylab.studies.boundary.analysis_folder import stage_path
from policylab.studies.boundary.axes import Axis
from policylab.studies.boundary.older_records import ANALYSIS_FORMAT
from policylab.studies.boundary.requests import DiffRequest
from policylab.studies.boundary.world import grid_axes

if TYPE_CHECKING:
    from policylab.studies.boundary.reduce import Sweep


def _times(cell: Mapping, horizon: float) -> tuple[list[float], list[bool]]:
    """Failure times (censored at the horizon) of a cell's rollouts at risk (diverged left out)."""
    rs = [r for r in cell.get("rollouts", []) if r["status"] != "diverged"]
    return (
        [float(r["t_fail"]) if r["status"] == "failed" else horizon for r in rs],
        [r["status"] == "failed" for r in rs],
    )


def check_comparable(a: Mapping, b: Mapping) -> None:
    """Refuse to compare sweeps that differ in anything but the checkpoint."""
    ga, gb = a["sweep"]["grid"], b["sweep"]["grid"]
    for field in ("row_axis", "col_axis", "set", "rows", "cols", "seeds_per_cell", "push_dir_deg", "push_t0_s"):
        if ga.get(field) != gb.get(field):
            raise BadInput("b", f"the sweeps differ in {field}: {ga.get(field)} vs {gb.get(field)}")
    if a["sweep"]["env"] != b["sweep"]["env"]:
        raise BadInput("b", f"the sweeps differ in env: {a['sweep']['env']} vs {b['sweep']['env']}")
    if a["thresholds"] != b["thresholds"]:
        raise BadInput(
            "b", f"the sweeps were reduced with different failure rules: {a['thresholds']} vs {b['thresholds']}"
        )
    if a["sweep"]["checkpoint"] == b["sweep"]["checkpoint"]:
        raise BadInput("b", f"both sweeps are of checkpoint {a['sweep']['checkpoint']!r}")


def _cell_name(c: Mapping) -> dict:
    return {k: c[k] for k in ("row", "col", "survival_a", "survival_b", "p_fisher")}


def _boundary_note(row: Mapping) -> str:
    return f"{row['status']} ({row['note']})" if row["note"] else row["status"]


def _boundary_text(row: Mapping) -> str:
    if row["status"] != "boundary":
        return row["status"]
    lo, hi = row["ci95"]
    step = row["grid_step"]
    # a zero-width interval is the grid's resolution, not certainty: the step says how coarse
    return f"{row['median']:.1f} [{lo:.1f}, {hi:.1f}]" + (f", grid step {step:g}" if lo == hi and step else "")


def _logrank_against_shift(row: Mapping, cells: list[Mapping], col: Axis) -> dict:
    """Whether a row's significant log-rank direction disagrees with its boundary shift (along the column
    axis `col`), and why: the row's cells where every robot of both checkpoints fell (their failure times
    differ, their S does not)."""
    shift, direction = row["displacement"], row["logrank_row_direction"]
    disagrees = bool(shift and direction and (shift > 0) == (direction == "B fails earlier/more"))
    if not disagrees:
        return {"logrank_disagrees": False, "logrank_note": ""}
    all_fell = [
        c["col"] for c in cells if c["n_a"] and c["n_b"] and c["failed_a"] == c["n_a"] and c["failed_b"] == c["n_b"]
    ]
    values = f"{col.name} {', '.join(f'{p:g}' for p in all_fell)} {col.unit}".rstrip()
    where = (
        f"in {len(all_fell)} cell(s) ({values}) every robot of both "
        "checkpoints fell, so S is 0 on both sides there, but their failure times differ"
        if all_fell
        else "no cell has every robot of both fall; the times differ in cells of mixed outcome"
    )
    larger = "pushes" if col.name == "push" else f"{col.name} values"
    side = f"outward (B survives larger {larger})" if shift > 0 else f"inward (B survives smaller {larger})"
    return {
        "logrank_disagrees": True,
        "logrank_cells_all_fell": all_fell,
        "logrank_note": f"the boundary moved {side}, yet the log-rank test says {direction}: it weighs when "
        f"robots fall, the boundary whether they survive; {where}",
    }


def diff_reductions(a: Mapping, b: Mapping, *, q: float) -> dict:
    """The diff.json document (`ANALYSIS_FORMAT`) from two reduce.json documents: cells and rows by their
    row and column values as in a reduction, a row's medians, intervals and displacement in column values."""
    check_comparable(a, b)
    col = grid_axes(a["sweep"]["grid"])[1]
    cells = []
    for ca, cb in zip(a["cells"], b["cells"]):
        na, nb = ca["n_failed"] + ca["n_censored"], cb["n_failed"] + cb["n_censored"]
        p = fisher_exact(ca["n_failed"], na, cb["n_failed"], nb) if na and nb else 1.0
        cells.append(
            {
                "row": ca["row"],
                "col": ca["col"],
                "row_idx": ca["row_idx"],
                "col_idx": ca["col_idx"],
                "n_a": na,
                "failed_a": ca["n_failed"],
                "diverged_a": ca["n_diverged"],
                "n_b": nb,
                "failed_b": cb["n_failed"],
                "diverged_b": cb["n_diverged"],
                "failed_before_push_a": ca.get("n_failed_before_push"),
                "failed_before_push_b": cb.get("n_failed_before_push"),
                "survival_a": ca["survival"],
                "survival_b": cb["survival"],
                "delta_survival": None
                if ca["survival"] is None or cb["survival"] is None
                else cb["survival"] - ca["survival"],
                "p_fisher": p,
            }
        )
    horizon = float(a["thresholds"].get("horizon_s", 5.0))
    strata: dict[int, list] = {}
    for c, ca, cb in zip(cells, a["cells"], b["cells"]):
        ta, ea = _times(ca, horizon)
        tb, eb = _times(cb, horizon)
        c["p_logrank"] = logrank([(ta, ea, tb, eb)])["p"]
        strata.setdefault(c["row_idx"], []).append((ta, ea, tb, eb))
    q_fisher = bh_qvalues([c["p_fisher"] for c in cells])
    q_logrank = bh_qvalues([c["p_logrank"] for c in cells])
    for c, qf, ql in zip(cells, q_fisher, q_logrank):
        r = qf <= q  # Benjamini-Hochberg at false-discovery rate q
        c["significant"] = r
        c["change"] = "unchanged" if not r else ("safer" if (c["delta_survival"] or 0) > 0 else "worse")
        c["q_fisher"], c["q_logrank"] = qf, ql
        c["significant_logrank"] = ql <= q
    safer = [c for c in cells if c["change"] == "safer"]
    worse = [c for c in cells if c["change"] == "worse"]
    row_tests = [logrank(strata[i]) for i in sorted(strata)]
    row_q = bh_qvalues([t["p"] for t in row_tests])
    rows = []
    for ra, rb in zip(a["boundary"], b["boundary"]):
        both = ra["status"] == "boundary" and rb["status"] == "boundary"
        rows.append(
            {
                "row": ra["row"],
                "a": _boundary_text(ra),
                "b": _boundary_text(rb),
                "a_median": ra["median"],
                "a_ci95": ra["ci95"],
                "b_median": rb["median"],
                "b_ci95": rb["ci95"],
                "displacement": rb["median"] - ra["median"] if both else None,
                "note": "" if both else f"A: {_boundary_note(ra)}; B: {_boundary_note(rb)}",
            }
        )
    for i, (row, t, rq) in enumerate(zip(rows, row_tests, row_q)):
        row.update(
            p_logrank_row=t["p"],
            q_logrank_row=rq,
            chi2_logrank_row=t["chi2"],
            logrank_row_direction=None
            if rq > q
            else ("B fails later/less" if t["o_minus_e_a"] > 0 else "B fails earlier/more"),
        )
        row.update(_logrank_against_shift(row, [c for c in cells if c["row_idx"] == i], col))
    return {
        "format": ANALYSIS_FORMAT,
        **{
            side: {
                "checkpoint": r["sweep"]["checkpoint"],
                "totals": r["totals"],
                "store_root": r["sweep"]["store_root"],
                "training": r.get("training"),
                "diverged_causes": r.get("diverged_causes"),
                "failed_before_push": r.get("failed_before_push"),
            }
            for side, r in (("a", a), ("b", b))
        },
        "grid": a["sweep"]["grid"],
        "thresholds": a["thresholds"],
        "summary": {
            "cells": len(cells),
            "safer": len(safer),
            "worse": len(worse),
            "unchanged": len(cells) - len(safer) - len(worse),
            "fdr_q": q,
        },
        "logrank_summary": {
            "cells_significant": sum(1 for c in cells if c["significant_logrank"]),
            "rows_significant": sum(1 for r in rows if r["q_logrank_row"] <= q),
            "fdr_q": q,
        },
        "shrinkage_census": {
            "cells_significantly_worse": len(worse),
            "cells": [_cell_name(c) for c in worse],
            "rule": f"every cell where B fails significantly more often (Fisher, BH q < {q}), wherever it appears",
        },
        "safer_cells": [_cell_name(c) for c in safer],
        "boundary_displacement": rows,
        "surface_a": a["danger"],
        "surface_b": b["danger"],
        "cells": cells,
        "method": {
            "test": "two-sided Fisher exact on failed/survived x sweep per cell (diverged excluded)",
            "multiplicity": f"Benjamini-Hochberg over all {len(cells)} cells at q < {q}",
            "logrank": "two-sample log-rank on failure times censored at the horizon, per cell, and per "
            "row stratified by its cells; q-values are Benjamini-Hochberg adjusted "
            f"p-values over the family ({len(cells)} cells; {len(rows)} rows); the cell "
            "verdicts (safer/worse) stay the Fisher test's; a row whose log-rank direction "
            "disagrees with its boundary shift says why (logrank_note)",
            "boundary": "bootstrap medians and 95% intervals of each sweep's reduction; "
            "displacement = B median - A median",
        },
    }


@dataclass(frozen=True)
class Plan:
    """A diff, resolved once (`plan`): sweeps A and B, each read from its store under its stored name."""

    req: DiffRequest
    a: Sweep
    b: Sweep

    @property
    def config(self) -> dict:
        """What OUT/config.json records."""
        return {**self.req.config(), "a": self.a.checkpoint, "b": self.b.checkpoint}


def plan(req: DiffRequest) -> Plan:
    """Resolve A and B to their stored names (a stored name or the policy file's path alike,
    `records.stored_name`), read each sweep once and check its equivalence gate; `BadInput` naming `a` or
    `b`, nothing written."""
    from policylab.rollout.store import Store
    from policylab.studies.boundary import gate
    from policylab.studies.boundary.records import stored_name
    from policylab.studies.boundary.reduce import load_sweep

    sweeps = []
    for root, spec, field in ((req.store, req.a, "a"), (req.store_of_b, req.b, "b")):
        with Store(root.resolve(), readonly=True) as store:
            sweeps.append(load_sweep(store, stored_name(store, spec, field), field))  # missing or incomplete first
            gate.require(store, sweeps[-1].checkpoint, field)
    a, b = sweeps
    if a.checkpoint == b.checkpoint and req.store_of_b == req.store:
        raise BadInput("b", "checkpoints A and B are the same")
    return Plan(req, a, b)


def run(req: DiffRequest) -> Result:
    """`policylab boundary diff`: reduce both sweeps (no rule check), diff them, write OUT/diff.json."""
    from policylab.rollout.store import Store
    from policylab.studies.boundary.reduce import reduce_sweep

    p = plan(req)
    names = [p.a.checkpoint, p.b.checkpoint]
    reductions = []
    for root, sweep in ((req.store, p.a), (req.store_of_b, p.b)):
        with Store(root.resolve(), readonly=True) as store:
            reductions.append(reduce_sweep(store, sweep, resamples=req.resamples, seed=req.seed, check_rule=False))
    result = diff_reductions(*reductions, q=req.q)
    claim_out_dir(req.out, p.config)
    path = stage_path(req.out, "diff")
    write_json(path, result)
    s = result["summary"]
    return Result(
        path,
        headlines=(
            f"diff {names[0]} -> {names[1]}: {s['safer']} cells safer, {s['worse']} worse "
            f"(shrinkage), {s['unchanged']} unchanged",
        ),
    )
