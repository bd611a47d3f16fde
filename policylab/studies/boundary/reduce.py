"""Reduce a boundary sweep to failure statistics: per-cell Kaplan-Meier survival, the danger
heatmap and the per-friction-row boundary with a bootstrap interval (docs/boundary.md, "Analysis stages")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.robots.robot import Robot
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.result import Result
from policylab.rollout.seeds import BOUNDARY_SEED_SCHEME, world_seed
from policylab.rollout.store import Store
from policylab.stats import kaplan_meier
from policylab.studies.boundary import failure
from policylab.studies.boundary.analysis_folder import stage_path
from policylab.studies.boundary.axes import AXES
from policylab.studies.boundary.checkpoint import Checkpoint, committed_record
from policylab.studies.boundary.older_records import ANALYSIS_FORMAT, recorded_policy_kind
from policylab.studies.boundary.protocol import bad_action_step, classify, protocol
from policylab.studies.boundary.records import (
    DIVERGED_CAUSES,
    STUDY,
    diverged_cause,
    grid_from_meta,
    meta_name,
    refuse_diverged,
    robot_from_meta,
    stored_name,
    sweep_keys,
)
from policylab.studies.boundary.requests import ReduceRequest
from policylab.studies.boundary.world import DEFAULT_COL_AXIS, DEFAULT_ROW_AXIS

SURVIVED, FAILED, DIVERGED = "survived", "failed", "diverged"
STATUSES = (SURVIVED, FAILED, DIVERGED)
CROSSING_LEVEL = 0.5
NO_BOUNDARY = "no boundary in range"


# -- the sweep as reduce sees it -----------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    key: str
    cache_key: str
    seed: int
    seed_idx: int
    status: str
    t_fail: float | None
    min_uprightness: float | None
    min_torso_z: float | None
    diverged_cause: str | None = None  # "state" | "action" for a diverged rollout


@dataclass(frozen=True)
class Sweep:
    """One complete sweep of one checkpoint: grid axes plus every cell's rollouts in seed order."""

    checkpoint: str
    checkpoint_sha256: str
    env: str
    rows: list[float]  # the row axis's values (friction on the default grid)
    cols: list[float]  # the column axis's values (push, %BW)
    seeds_per_cell: int
    push_dir: float
    push_t0: float
    protocol: dict
    cells: dict[tuple[int, int], list[Rollout]]
    robot: Robot
    policy_kind: str = "linear"
    row_axis: str = DEFAULT_ROW_AXIS
    col_axis: str = DEFAULT_COL_AXIS
    held: dict = field(default_factory=dict)  # axes held at one value over the grid (`--set`)

    @property
    def horizon_s(self) -> float:
        return float(self.protocol["horizon_s"])

    def cell_index(self, row_idx: int, col_idx: int) -> int:
        return row_idx * len(self.cols) + col_idx

    @property
    def grid(self) -> dict:
        """The grid as a reduction records it: both axes named with their units, whatever they are."""
        return {
            "row_axis": self.row_axis,
            "col_axis": self.col_axis,
            "row_unit": AXES[self.row_axis].unit,
            "col_unit": AXES[self.col_axis].unit,
            "rows": self.rows,
            "cols": self.cols,
            "set": self.held,
            "seeds_per_cell": self.seeds_per_cell,
            "push_dir_deg": self.push_dir,
            "push_t0_s": self.push_t0,
            "seed_scheme": BOUNDARY_SEED_SCHEME,
        }


def load_sweep(store: Store, checkpoint: str, field: str = "checkpoint", *, keep_diverged: bool = True) -> Sweep:
    """The complete sweep of `checkpoint` in `store`: the grid from the sweep's store meta, every
    world's record found under the sweep's own key derivation (`records.sweep_keys`), so reduce
    reads exactly the worlds the sweep simulated. A missing record is bad input (nothing is reduced);
    an unknown checkpoint is bad input in `field` (the option that named it); so is a diverged rollout
    unless `keep_diverged`."""
    meta = store.get_meta(meta_name(checkpoint))
    if meta is None:
        known = sorted({str(r.data["world"]["checkpoint"]["name"]) for r in store.records(STUDY)})
        raise BadInput(
            field, f"no sweep of checkpoint {checkpoint!r} in {store.root}; stored: {', '.join(known) or 'none'}"
        )
    rob = robot_from_meta(meta, store=store)
    current = protocol(rob)
    changed = sorted(k for k in set(meta["protocol"]) | set(current) if meta["protocol"].get(k) != current.get(k))
    if changed:
        raise BadInput(
            "store",
            f"the sweep of {checkpoint!r} was recorded under another protocol than this code's "
            f"(differs in: {', '.join(changed)}); sweep again into a new store",
        )
    grid = grid_from_meta(meta)
    ckpt = Checkpoint(
        checkpoint,
        Path(checkpoint) if recorded_policy_kind(meta) != "onnx" else Path(f"{checkpoint}.onnx"),
        meta["checkpoint"]["sha256"],
        rob,
        meta["checkpoint"].get("obs_norm_sha256"),
    )
    cells: dict[tuple[int, int], list[Rollout]] = {}
    missing = 0
    for key, gw in sweep_keys(grid, ckpt):
        rec = store.get(key)
        if rec is None:
            missing += 1
            continue
        w, o = rec.data["world"], rec.outcome
        if w["seed"] != world_seed(
            STUDY, grid.cell(gw.row_idx, gw.col_idx), gw.seed_idx, seeds_per_cell=grid.seeds_per_cell
        ):
            raise BadInput("store", f"record {key} breaks the seed scheme")
        if o.get("status") not in STATUSES:
            raise BadInput("store", f"record {key} has outcome status {o.get('status')!r}")
        cells.setdefault((gw.row_idx, gw.col_idx), []).append(
            Rollout(
                key,
                w["cache_key"],
                int(w["seed"]),
                gw.seed_idx,
                o["status"],
                o.get("t_fail"),
                o.get("min_uprightness"),
                o.get("min_torso_z"),
                diverged_cause(o),
            )
        )
    if missing:
        raise BadInput(
            "store",
            f"the sweep of {checkpoint!r} is incomplete: {missing} of {grid.n_rollouts} "
            "worlds have no record (resume `policylab boundary sweep` first)",
        )
    if not keep_diverged:
        refuse_diverged(checkpoint, [(r.cache_key, r.status, r.diverged_cause) for rs in cells.values() for r in rs])
    return Sweep(
        checkpoint,
        meta["checkpoint"]["sha256"],
        meta["env"],
        list(grid.rows),
        list(grid.cols),
        grid.seeds_per_cell,
        grid.push_dir,
        grid.push_t0,
        meta["protocol"],
        cells,
        ckpt.robot,
        recorded_policy_kind(meta),
        grid.row_axis,
        grid.col_axis,
        dict(grid.held),
    )


# -- cell statistics -----------------------------------------------------------------------------


def survival_codes(rollouts: Sequence[Rollout]) -> np.ndarray:
    """1 = survived (censored at the horizon), 0 = failed, -1 = diverged (not at risk)."""
    return np.array([{SURVIVED: 1, FAILED: 0, DIVERGED: -1}[r.status] for r in rollouts], dtype=np.int8)


def failed_before_push(r: Rollout, push_t0: float) -> bool:
    return failure.before_push(r.status, r.t_fail, push_t0)


def cell_stats(rollouts: Sequence[Rollout], horizon_s: float, push_t0: float) -> dict:
    """Kaplan-Meier survival of one cell and its failure-time summary."""
    at_risk = [r for r in rollouts if r.status != DIVERGED]
    failed = [r.status == FAILED for r in at_risk]
    times = [float(r.t_fail) if r.status == FAILED else horizon_s for r in at_risk]
    ttf = np.array([t for t, f in zip(times, failed) if f], dtype=float)
    out = {
        "n": len(rollouts),
        "n_failed": int(sum(failed)),
        "n_failed_before_push": sum(failed_before_push(r, push_t0) for r in rollouts),
        "n_censored": int(len(at_risk) - sum(failed)),
        "n_diverged": len(rollouts) - len(at_risk),
        "survival": None,
        "danger": None,
        "km_median_s": None,
        "ttf_p25_s": float(np.percentile(ttf, 25)) if ttf.size else None,
        "ttf_p75_s": float(np.percentile(ttf, 75)) if ttf.size else None,
        "km_curve": None,
    }
    if at_risk:
        km = kaplan_meier(times, failed, horizon_s)
        s = float(km["survival_at_horizon"])
        out.update(survival=s, danger=1.0 - s, km_curve={"t_s": km["times"], "survival": km["survival"]})
        below = [t for t, v in zip(km["times"], km["survival"]) if v <= 0.5]
        out["km_median_s"] = below[0] if below else None
    return out


# -- boundary ------------------------------------------------------------------------------------


def first_crossing(cols: Sequence[float], survival: np.ndarray) -> np.ndarray:
    """Column value (push on the default grid) where S first falls through 0.5, per row of `survival`
    (shape (B, P)); NaN = none.

    Cells with undefined S (NaN: all diverged) are skipped. A row whose first defined cell is
    already below 0.5 has no crossing in range (the boundary lies below the grid): no extrapolation.
    """
    s = np.atleast_2d(np.asarray(survival, dtype=float))
    b = s.shape[0]
    result = np.full(b, np.nan)
    done = np.zeros(b, dtype=bool)
    prev_s = np.full(b, np.nan)
    prev_p = np.full(b, np.nan)
    for j, p in enumerate(cols):
        sj = s[:, j]
        defined = ~np.isnan(sj)
        below = defined & (sj < CROSSING_LEVEL) & ~done
        cross = below & ~np.isnan(prev_s)
        frac = (prev_s[cross] - CROSSING_LEVEL) / (prev_s[cross] - sj[cross])
        result[cross] = prev_p[cross] + frac * (p - prev_p[cross])
        done |= below
        keep = defined & ~done
        prev_s[keep] = sj[keep]
        prev_p[keep] = p
    return result


def survival_fraction(codes: np.ndarray) -> np.ndarray:
    """Kaplan-Meier S at the horizon when the only censoring is at the horizon: survivors over
    rollouts at risk (diverged excluded). Works on any leading shape; NaN where none is at risk."""
    at_risk = (codes >= 0).sum(axis=-1)
    surv = (codes == 1).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(at_risk > 0, surv / np.maximum(at_risk, 1), np.nan)


def beyond_grid(observed: np.ndarray) -> str | None:
    """Which side of the grid a row's boundary lies beyond when its observed survival does not cross:
    "below" (S < 0.5 already in the first defined cell), "above" (S >= 0.5 in every defined cell), else
    None (the observed row crosses)."""
    defined = observed[~np.isnan(observed)]
    if defined.size and defined[0] < CROSSING_LEVEL:
        return "below"
    if defined.size and (defined >= CROSSING_LEVEL).all():
        return "above"
    return None


def _no_boundary_note(observed: np.ndarray, col: str = "push") -> str:
    """Which side of the grid a row without a boundary lies on, from its observed survival (along the
    column axis `col`)."""
    side = beyond_grid(observed)
    if side == "below":
        return f"S < 0.5 already at the smallest {col} (boundary below the grid)"
    if side == "above":
        return f"S >= 0.5 up to the largest {col} (boundary above the grid)"
    return "the observed row crosses, but fewer than half the resamples do"


def row_boundary(
    cols: Sequence[float], codes: np.ndarray, *, resamples: int, seed: int, row: int, col: str = "push"
) -> dict:
    """Boundary of one row along the column axis `col` (push on today's grid): point estimate, and a
    bootstrap over seeds within each cell.

    `codes` has shape (P, n) (cells of the row x seeds). The generator is PCG64 seeded with
    (seed, row), so each row's resamples are fixed and independent of the other rows.
    """
    codes = np.asarray(codes)
    observed = survival_fraction(codes)
    point = first_crossing(cols, observed[None, :])[0]
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, row])))
    n_cells, n = codes.shape
    idx = rng.integers(0, n, size=(resamples, n_cells, n))
    boot = first_crossing(cols, survival_fraction(np.take_along_axis(codes[None], idx, axis=2)))
    crossed = boot[~np.isnan(boot)]
    frac = crossed.size / resamples
    out = {
        "crossed_fraction": frac,
        "resamples": resamples,
        "point": None,
        "median": None,
        "ci95": None,
        "status": NO_BOUNDARY,
        "note": _no_boundary_note(observed, col),
        "beyond_grid": beyond_grid(observed),
        "grid_step": _grid_step(cols),
        "between": _bracket(cols, observed),
    }
    if frac >= 0.5:
        lo, med, hi = np.quantile(crossed, [0.025, 0.5, 0.975])
        out.update(
            status="boundary",
            median=float(med),
            ci95=[float(lo), float(hi)],
            beyond_grid=None,
            point=None if np.isnan(point) else float(point),
            note="the observed row falls through 0.5 here"
            if not np.isnan(point)
            else "the observed row does not fall through 0.5; the interval comes from the resamples that do",
        )
    return out


def _grid_step(cols: Sequence[float]) -> float | None:
    """The column axis's grid spacing (None for a single column)."""
    return round(float(cols[1] - cols[0]), 9) if len(cols) > 1 else None


def _bracket(cols: Sequence[float], observed: np.ndarray) -> list[float] | None:
    """The two column values the observed S falls through 0.5 between: the last defined cell at or above 0.5
    and the first below it (None when the observed row does not cross)."""
    prev = None
    for p, s in zip(cols, observed):
        if np.isnan(s):
            continue
        if s < CROSSING_LEVEL:
            return None if prev is None else [float(prev), float(p)]
        prev = p
    return None


UNITS_METHOD = (
    "each row's boundary side by side in %BW of the protocol's push (push_duration_s long), "
    "its impulse in N s (%BW/100 x weight x push_duration_s, the weight with the row's payload) and the "
    "velocity change in m/s that impulse gives the robot's mass as a free body without friction (N s / "
    "mass); a velocity kick's m/s is its own, its N s mass x m/s, its %BW the push of the same impulse"
)
UNITS = {"pct_bw": "%BW", "impulse_ns": "N s", "velocity_mps": "m/s"}  # a push's or kick's size, and its label
OWN_UNIT = {"push": "pct_bw", "kick": "velocity_mps"}  # the column axes stated in UNITS, and the unit of their values


def in_units(value: float | None, col: str, mass_kg: float, g: float, duration_s: float) -> dict[str, float | None]:
    """A push (`col` push, %BW of a `duration_s` push) or a velocity kick (`col` kick, m/s) of size `value`
    stated in each of `UNITS`: %BW of the push of that impulse, the impulse in N s (%BW/100 x weight x
    duration; a kick's mass x velocity) and the velocity change in m/s the impulse gives the robot's mass
    as a free body, without friction (a kick's own)."""
    if value is None:
        return dict.fromkeys(UNITS)
    weight = mass_kg * g
    impulse = value / 100.0 * weight * duration_s if col == "push" else mass_kg * value
    pct = value if col == "push" else impulse / (weight * duration_s) * 100.0
    return {"pct_bw": pct, "impulse_ns": impulse, "velocity_mps": impulse / mass_kg if col == "push" else value}


def stated_in_units(b: dict, col: str, mass_kg: float, g: float, duration_s: float) -> dict:
    """A row boundary `b` along a push or kick column in `UNITS` side by side: {unit: {point, median,
    ci95}} with the mass, weight and push duration they rest on."""

    def each(v):
        return in_units(v, col, mass_kg, g, duration_s)

    point, median = each(b["point"]), each(b["median"])
    ci = [each(v) for v in b["ci95"]] if b["ci95"] else None
    return {
        "mass_kg": mass_kg,
        "weight_n": mass_kg * g,
        "push_duration_s": duration_s,
        **{u: {"point": point[u], "median": median[u], "ci95": [ci[0][u], ci[1][u]] if ci else None} for u in UNITS},
    }


def _row_payload(sweep: Sweep, row_value: float) -> float:
    """The payload the robot of a row carries: the row's value on payload rows, else the grid's held one."""
    if sweep.row_axis == "payload":
        return row_value
    return float(sweep.held.get("payload", AXES["payload"].default))


def boundaries(sweep: Sweep, *, resamples: int, seed: int) -> list[dict]:
    """Each row's boundary along the column axis; along a push or kick column also in `UNITS` side by side
    (`in_units`), the weight with the row's payload."""
    col = sweep.col_axis
    rob = sweep.robot
    g, duration = float(-rob.base.opt.gravity[2]), float(sweep.protocol["push_duration_s"])
    rows = []
    for i, value in enumerate(sweep.rows):
        codes = np.stack([survival_codes(sweep.cells[(i, j)]) for j in range(len(sweep.cols))])
        b = {
            "row": value,
            "row_idx": i,
            **row_boundary(sweep.cols, codes, resamples=resamples, seed=seed, row=i, col=col),
        }
        if col in OWN_UNIT:
            b["in_units"] = stated_in_units(b, col, rob.mass_kg(_row_payload(sweep, value)), g, duration)
        rows.append(b)
    return rows


# -- the reduction -------------------------------------------------------------------------------


def training_distribution(checkpoint: str, sha256: str) -> dict | None:
    """The training distribution of a committed checkpoint (its training record beside it, when the sha256
    matches): friction range (null: the model's own friction) and the largest training push, %BW (percent of
    body weight). The two trainers record it differently: an ARS record (`ars.TrainConfig`) keeps
    `friction_range` and `push_pct_max`; a `boundary learn` record keeps its recipe (`learn.worlds.recorded`)
    under `recipe_values`, pushes in body weights, and, from go1_v4 on, the random commands' amplitudes and the
    push curriculum (`command_amp`, `push_ramp`), which the band carries when the record sets them."""
    info = committed_record(checkpoint)
    if info.get("checkpoint_sha256") != sha256:
        return None
    cfg = info.get("config", {})
    band = {"source": f"policylab/studies/boundary/checkpoints/{checkpoint}.json"}
    recipe = cfg.get("recipe_values")
    if recipe is None:
        return {
            **band,
            "friction_range": cfg.get("friction_range"),
            "push_pct_max": float(cfg.get("push_pct_max") or 0.0),
        }
    extras = {k: recipe[k] for k in ("command_amp", "push_ramp") if recipe.get(k)}
    return {
        **band,
        "recipe": cfg.get("recipe"),
        "friction_range": [float(x) for x in recipe["friction"]],
        "push_pct_max": round(100.0 * float(recipe["push_bw"][1]), 6),
        **extras,
    }


def rule_check(store: Store, sweep: Sweep) -> dict:
    """Re-apply the frozen rule to every stored trajectory and count agreement with the records."""
    rob = sweep.robot
    disagree = []
    total = 0
    for rollouts in sweep.cells.values():
        for r in rollouts:
            p = store.payload(r.key)
            rule = classify(rob, p["qpos"], p["qvel"], p["time"], bad_action_step(p))
            total += 1
            same_t = (rule["t_fail"] is None and r.t_fail is None) or (
                rule["t_fail"] is not None and r.t_fail is not None and abs(rule["t_fail"] - r.t_fail) < 1e-9
            )
            if rule["status"] != r.status or not same_t:
                disagree.append(
                    {
                        "key": r.key,
                        "cache_key": r.cache_key,
                        "record": [r.status, r.t_fail],
                        "rule": [rule["status"], rule["t_fail"]],
                    }
                )
    return {"checked": total, "agree": total - len(disagree), "disagree": len(disagree), "examples": disagree[:10]}


def reduce_sweep(store: Store, sweep: Sweep, *, resamples: int, seed: int, check_rule: bool) -> dict:
    """The reduce.json document (`ANALYSIS_FORMAT`): grid, thresholds, totals, cells (with their rollouts),
    boundaries. Cells and boundaries hold their row and column values (`row`, `col`, `row_idx`, `col_idx`;
    a boundary's `point`, `median`, `ci95` are column values), the grid names both axes and their units."""
    col = sweep.col_axis
    unit = AXES[col].unit
    cells = []
    totals = {s: 0 for s in STATUSES}
    causes = {c: 0 for c in DIVERGED_CAUSES}
    before_push = 0
    for (i, j), rollouts in sweep.cells.items():
        for r in rollouts:
            totals[r.status] += 1
            before_push += failed_before_push(r, sweep.push_t0)
            if r.status == DIVERGED:
                causes[r.diverged_cause] += 1
        cells.append(
            {
                "row": sweep.rows[i],
                "col": sweep.cols[j],
                "row_idx": i,
                "col_idx": j,
                "cell": sweep.cell_index(i, j),
                **cell_stats(rollouts, sweep.horizon_s, sweep.push_t0),
                "rollouts": [
                    {
                        "seed_idx": r.seed_idx,
                        "seed": r.seed,
                        "key": r.key,
                        "cache_key": r.cache_key,
                        "status": r.status,
                        "t_fail": r.t_fail,
                        "min_uprightness": r.min_uprightness,
                        "min_torso_z": r.min_torso_z,
                        **({"diverged_cause": r.diverged_cause} if r.status == DIVERGED else {}),
                    }
                    for r in rollouts
                ],
            }
        )
    return {
        "format": ANALYSIS_FORMAT,
        "sweep": {
            "checkpoint": sweep.checkpoint,
            "checkpoint_sha256": sweep.checkpoint_sha256,
            "env": sweep.env,
            "grid": sweep.grid,
            "robot": sweep.robot.ref,
            "robot_identity": sweep.protocol.get("robot"),
            "policy_kind": sweep.policy_kind,
            "n_rollouts": sum(totals.values()),
            "store_root": str(store.root),
        },
        "thresholds": {**sweep.protocol["failure"], "horizon_s": sweep.horizon_s},
        "training": training_distribution(sweep.checkpoint, sweep.checkpoint_sha256),
        "totals": {"failed": totals[FAILED], "censored": totals[SURVIVED], "diverged": totals[DIVERGED]},
        "diverged_causes": causes,
        "failed_before_push": before_push,
        "rule_check": rule_check(store, sweep) if check_rule else {"checked": 0, "skipped": True},
        "cells": cells,
        "danger": danger_matrix(cells, len(sweep.rows), len(sweep.cols)),
        "boundary": boundaries(sweep, resamples=resamples, seed=seed),
        "method": {
            "survival": "Kaplan-Meier per cell, right-censored at the horizon; diverged rollouts (a non-finite state "
            "or action) leave the risk set",
            "danger": "1 - S(horizon)",
            "boundary": f"{col} ({unit or 'no unit'}) where S first falls through 0.5, linear interpolation "
            "between neighbouring cells",
            "resolution": f"the bootstrap interval does not include the grid's resolution: each row states the {col} "
            "grid step and the two cells its observed S falls through 0.5 between",
            "before_push": "failures at or before the push start (t_fail <= push_t0) count as failures in S and are "
            "counted apart per cell (n_failed_before_push)",
            "bootstrap": f"{resamples} resamples of seeds within each cell, PCG64 seeded with (seed={seed}, row)",
            "no_boundary": f"'{NO_BOUNDARY}' when fewer than half of the resamples cross",
            **({"in_units": UNITS_METHOD} if col in OWN_UNIT else {}),
        },
    }


def danger_matrix(cells: Iterable[Mapping], n_rows: int, n_cols: int) -> list[list[float | None]]:
    """The grid's rows (friction by default) x its columns (push), each ascending; None where S is undefined."""
    grid: list[list[float | None]] = [[None] * n_cols for _ in range(n_rows)]
    for c in cells:
        grid[c["row_idx"]][c["col_idx"]] = c["danger"]
    return grid


@dataclass(frozen=True)
class Plan:
    """A reduction, resolved once (`plan`): the sweep its checkpoint names, read and checked."""

    req: ReduceRequest
    sweep: Sweep  # under its stored name, on its robot, every record read

    @property
    def config(self) -> dict:
        """What the analysis folder's config.json records."""
        return {**self.req.config(), "checkpoint": self.sweep.checkpoint}


def plan(req: ReduceRequest) -> Plan:
    """Resolve the checkpoint to its stored name (a stored name or the policy file's path alike,
    `records.stored_name`) and read its sweep once (`load_sweep`); `BadInput` naming the field, nothing
    written."""
    with Store(req.store.resolve(), readonly=True) as store:
        return Plan(req, load_sweep(store, stored_name(store, req.checkpoint), keep_diverged=req.keep_diverged))


def run(req: ReduceRequest) -> Result:
    """`policylab boundary reduce`: find the sweep, claim the analysis folder, write reduce.json."""
    p = plan(req)
    name = p.sweep.checkpoint
    claim_out_dir(req.out, p.config)
    with Store(req.store.resolve(), readonly=True) as store:
        result = reduce_sweep(store, p.sweep, resamples=req.resamples, seed=req.seed, check_rule=req.rule_check)
    path = stage_path(req.out, "reduce")
    write_json(path, result)
    g, rc, t = result["sweep"]["grid"], result["rule_check"], result["totals"]
    lines = [
        f"reduce {name}: {len(g['rows'])} x {len(g['cols'])} cells x {g['seeds_per_cell']} "
        f"seeds; {t['failed']} failed, {t['censored']} survived, {t['diverged']} diverged"
        + (f" ({result['diverged_causes']['action']} from a non-finite action)" if t["diverged"] else "")
    ]
    if req.rule_check:
        lines.append(f"rule check: {rc['agree']}/{rc['checked']} records agree with the frozen rule")
    return Result(path, headlines=tuple(lines))
