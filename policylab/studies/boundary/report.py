"""HTML reports for a sweep (reduce + selection + replays + clips), a diff of two sweeps, and a search.

JSON first: every number on report.html is in report.json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import patheffects
from matplotlib.colors import LinearSegmentedColormap

from policylab.config import claim_out_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render
from policylab.result import Result
from policylab.studies.boundary.analysis_folder import read_stage, stage_path
from policylab.studies.boundary.axes import AXES, Axis, later_axes
from policylab.studies.boundary.failure import walking_warning
from policylab.studies.boundary.older_records import reduced_robot_ref
from policylab.studies.boundary.reduce import OWN_UNIT, UNITS
from policylab.studies.boundary.requests import ReportRequest
from policylab.studies.boundary.world import friction_by_push, grid_axes


def words(horizon_s: float) -> str:
    """The page's first note: the plain words behind S, "censored" and %BW, said before the tables, figures
    and JSON use the short forms."""
    return (
        f"Words on this page: survival S is the share of robots still standing at the end of the {horizon_s:g} s "
        "rollout, a Kaplan-Meier estimate (danger = 1 - S); a robot that survived to the end (censored) counts "
        "as standing, one whose simulation diverged is left out; a push's size is in % of body weight (%BW), "
        "the weight including any payload."
    )


def _edges(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])


def _matrix(rows: Sequence[Sequence[float | None]]) -> np.ndarray:
    return np.array([[np.nan if x is None else x for x in r] for r in rows], dtype=float)


def _name(a: Axis) -> str:
    """An axis's column name in the tables: today's `mu` for friction, else the axis's own name."""
    return "mu" if a.name == "friction" else a.name


def _col_header(a: Axis) -> str:
    return f"{a.name} {a.unit}".strip()


def _plural(a: Axis) -> str:
    return {"friction": "frictions", "push": "pushes"}.get(a.name, f"{a.name} values")


def _col_key(a: Axis) -> str:
    """A column axis's key in the report's JSON: `push_pct_bw` for push (its unit in the name), else its name."""
    return "push_pct_bw" if a.name == "push" else a.name


def _relabel(rows: Sequence[Mapping], row: Axis, col: Axis) -> list[dict]:
    """Table rows whose `row` / `col` hold a grid's row and column values, under the axes' names."""
    names = {"row": _name(row), "col": _col_key(col)}
    return [{names.get(k, k): v for k, v in r.items()} for r in rows]


def heatmap(
    ax, mus, pushes, values, *, cmap="YlOrRd", vmin=0.0, vmax=1.0, label="danger = 1 - S", grid: Mapping | None = None
):
    """`values` over the rows `mus` x columns `pushes` of `grid` (friction x push unless it names other axes),
    the axes labelled from the catalogue."""
    mesh = ax.pcolormesh(
        _edges(pushes),
        _edges(mus),
        np.ma.masked_invalid(_matrix(values)),
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        shading="flat",
    )
    row, col = grid_axes(grid or {})
    ax.set_xlabel(col.label)
    ax.set_ylabel(row.label)
    ax.figure.colorbar(mesh, ax=ax, label=label)


def overlay_training(
    ax, training: Mapping | None, mus: Sequence[float], pushes: Sequence[float], grid: Mapping | None = None
) -> bool:
    """The checkpoint's training distribution on a heatmap: its friction band (dashed lines and a bracket
    in the left margin; a single line when it trained at one friction) and, when it trained with pushes,
    the push range it saw (hatched). Drawn on a friction x push map with nothing held only: the training
    record names those two axes alone."""
    if not training or not friction_by_push(grid or {}):
        return False
    fr = training.get("friction_range")
    lo, hi = (fr[0], fr[1]) if fr else (1.0, 1.0)
    x0 = _edges(pushes)[0]
    for y in sorted({lo, hi}):
        ax.axhline(y, color="#1a7f37", ls="--", lw=1.2)
    ax.plot(
        [x0, x0],
        [lo, hi] if hi > lo else [lo - 0.02, hi + 0.02],
        color="#1a7f37",
        lw=5,
        clip_on=False,
        solid_capstyle="butt",
    )
    label = f"training friction {lo:g}-{hi:g}" if hi > lo else f"training friction {lo:g} (model)"
    push = float(training.get("push_pct_max") or 0.0)
    if push > 0:
        ax.fill_betweenx(
            [lo, hi], x0, min(push, _edges(pushes)[-1]), facecolor="none", edgecolor="#1a7f37", hatch="//", lw=0.0
        )
        label += f", pushes 0-{push:g} %BW"
        if training.get("push_ramp"):
            label += f" (upper end ramped over the first {100 * training['push_ramp']:g}% of updates)"
    else:
        label += ", no pushes"
    if training.get("command_amp"):
        label += (
            ", random commands up to "
            + "/".join(f"{a:g}" for a in training["command_amp"])
            + " (vx m/s, vy m/s, yaw rad/s)"
        )
    ax.text(x0, hi, " " + label, color="#1a7f37", fontsize=7, va="bottom")
    return True


def km_figure(out: Path, reduction: Mapping, max_rows: int = 20) -> tuple[str, str] | None:
    """Kaplan-Meier curves per friction row: every boundary row (or, without one, the rows with the most
    failures), one panel per row, one curve per push cell."""
    rows = [b["row_idx"] for b in reduction["boundary"] if b["status"] == "boundary"]
    if not rows:
        fails = {}
        for c in reduction["cells"]:
            fails[c["row_idx"]] = fails.get(c["row_idx"], 0) + c["n_failed"]
        rows = [i for i, f in sorted(fails.items(), key=lambda kv: (-kv[1], kv[0])) if f > 0]
    rows = sorted(rows[:max_rows])
    if not rows:
        return None
    horizon = float(reduction["thresholds"].get("horizon_s", 5.0))
    pushes = reduction["sweep"]["grid"]["cols"]
    row, col = grid_axes(reduction["sweep"]["grid"])
    cols = min(3, len(rows))
    nr = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(nr, cols, figsize=(4.2 * cols, 2.6 * nr), squeeze=False, layout="constrained")
    cmap = plt.get_cmap("viridis")
    for ax, mi in zip(axes.ravel(), rows):
        cells = sorted((c for c in reduction["cells"] if c["row_idx"] == mi), key=lambda c: c["col_idx"])
        for c in cells:
            km = c.get("km_curve")
            if not km:
                continue
            t = [0.0] + list(km["t_s"]) + [horizon]
            s = [1.0] + list(km["survival"]) + [km["survival"][-1] if km["survival"] else 1.0]
            ax.step(t, s, where="post", color=cmap(c["col_idx"] / max(1, len(pushes) - 1)), lw=1.0)
        ax.set_title(f"{_name(row)} {cells[0]['row']:g}", fontsize=9, pad=2)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlim(0, horizon)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.set_ylabel("S(t)", fontsize=8)
        ax.axhline(0.5, color="gray", lw=0.6, ls=":")
    for ax in axes.ravel()[len(rows) :]:
        ax.axis("off")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(pushes[0], pushes[-1]))
    fig.colorbar(sm, ax=axes.ravel().tolist(), label="push (% bodyweight)" if col.name == "push" else col.label)
    save_png(fig, out / "km_rows.png")
    return (
        f"Kaplan-Meier survival per cell in the boundary rows (one curve per {col.name}; censored at the horizon)",
        "km_rows.png",
    )


def _overlay_boundary(ax, boundary: Sequence[Mapping], color: str, label: str) -> None:
    rows = [b for b in boundary if b["status"] == "boundary"]
    if not rows:
        return
    mu = [b["row"] for b in rows]
    med = np.array([b["median"] for b in rows])
    lo = med - np.array([b["ci95"][0] for b in rows])
    hi = np.array([b["ci95"][1] for b in rows]) - med
    ax.errorbar(med, mu, xerr=[lo, hi], fmt="o-", color=color, ms=4, capsize=3, label=label)


def _overlay_before_push(ax, cells: Sequence[Mapping]) -> None:
    """The map's layer of failures before the push: a marker with the count in every cell where robots fell
    before the push started (their falls are in the cell's danger, but not the push's doing)."""
    early = [c for c in cells if c.get("n_failed_before_push")]
    if not early:
        return
    ax.plot(
        [c["col"] for c in early],
        [c["row"] for c in early],
        "v",
        color="#5b2a86",
        ms=7,
        ls="none",
        label="failed before the push (count)",
    )
    for c in early:  # bold on a white outline: 6-point purple on the dark red cells could not be read
        ax.annotate(
            str(c["n_failed_before_push"]),
            (c["col"], c["row"]),
            fontsize=8,
            fontweight="bold",
            color="#5b2a86",
            ha="left",
            va="bottom",
            xytext=(4, 2),
            textcoords="offset points",
            path_effects=[patheffects.withStroke(linewidth=2.5, foreground="white")],
        )


def clip_caption(checkpoint: str, clip: Mapping) -> str:
    """A clip's caption: the checkpoint and the world (never the key's version prefix), and a failure before
    the push said as such."""
    sets = "".join(f", {a.name} {clip[a.field]:g} {a.unit}".rstrip() for a in later_axes() if a.field in clip)
    where = (
        f"mu {clip['mu']:g}, push {clip['push_pct_bw']:g} %BW{sets}, seed {clip['seed']}"
        if "mu" in clip
        else clip["cache_key"].split("|", 1)[-1]
    )
    t = f" at {clip['t_fail']:.2f} s" if clip.get("t_fail") is not None else ""
    if clip.get("before_push"):
        return f"{checkpoint}: {where} - failed{t}, before the push started (walking, not pushed)"
    return f"{checkpoint}: {clip['kind']} cell, {where} - {clip['outcome']}{t}"


def danger_map(reduction: Mapping, selection: Mapping | None) -> tuple[plt.Figure, str]:
    """The sweep's danger heatmap with every layer its data has (the boundary, the training distribution,
    falls before the push, the replayed cells), each mark named in a legend below the map, never over the
    cells, and only when drawn; and the figure's caption, naming what is drawn."""
    grid = reduction["sweep"]["grid"]
    mus, pushes = grid["rows"], grid["cols"]
    fig, ax = plt.subplots(figsize=(8, 6))
    heatmap(ax, mus, pushes, reduction["danger"], grid=grid)
    trained = overlay_training(ax, reduction.get("training"), mus, pushes, grid)
    _overlay_boundary(ax, reduction["boundary"], "#1f4e99", "boundary: bootstrap median, 95% CI")
    _overlay_before_push(ax, reduction["cells"])
    for i, w in enumerate((selection or {}).get("boundary_cells", [])):
        ax.plot(
            w["col"],
            w["row"],
            "s",
            mfc="none",
            mec="black",
            ms=12,
            ls="none",
            label=None if i else "replayed boundary cell",
        )
    for i, w in enumerate((selection or {}).get("recoveries", [])):
        ax.plot(w["col"], w["row"], "D", color="#2ca02c", ms=9, ls="none", label=None if i else "recovery")
    ax.set_title(f"{reduction['sweep']['checkpoint']}: danger per cell ({grid['seeds_per_cell']} seeds)", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=2, fontsize=8, frameon=False)
    drawn = [
        ("the boundary" if any(b["status"] == "boundary" for b in reduction["boundary"]) else ""),
        ("the checkpoint's training distribution (green)" if trained else ""),
    ]
    caption = "Danger (1 - Kaplan-Meier survival at the horizon)" + "".join(
        f" with {d}" if i == 0 else f" and {d}" for i, d in enumerate(x for x in drawn if x)
    )
    return fig, caption


def sweep_figures(out: Path, reduction: Mapping, selection: Mapping | None) -> list[tuple[str, str]]:
    grid = reduction["sweep"]["grid"]
    mus, pushes = grid["rows"], grid["cols"]
    row, col = grid_axes(grid)
    fig, caption = danger_map(reduction, selection)
    save_png(fig, out / "heatmap.png")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    _overlay_boundary(ax, reduction["boundary"], "#1f4e99", "S = 0.5 crossing")
    located = [b for b in reduction["boundary"] if b["status"] == "boundary"]
    zero_width = [b for b in located if b["ci95"][0] == b["ci95"][1]]
    step = next((b["grid_step"] for b in reduction["boundary"]), None)
    for b in zero_width:  # the cells the observed S falls between: the resolution a zero-width interval hides
        if b["between"]:
            ax.plot(b["between"], [b["row"]] * 2, color="#8c8c8c", lw=4, alpha=0.5, solid_capstyle="butt", zorder=1)
    for b in reduction["boundary"]:
        if b["status"] != "boundary":
            ax.annotate("no boundary in range", (pushes[0], b["row"]), fontsize=7, color="gray", va="center")
    ax.set_xlim(pushes[0], pushes[-1])
    ax.set_ylim(_edges(mus)[0], _edges(mus)[-1])
    ax.set_xlabel(col.label)
    ax.set_ylabel(row.label)
    ax.set_title(f"Boundary per {row.name} row (bootstrap median and 95% interval)", fontsize=10)
    save_png(fig, out / "boundary.png")
    figures = [
        (caption, "heatmap.png"),
        (
            "Boundary curve with bootstrap intervals"
            + (
                "; where an interval has zero width (S falls from 1 to 0 between two cells) a grey bar spans those two "
                f"cells, the grid step ({step:g} {col.unit})".replace(" )", ")")
                if zero_width and step
                else ""
            ),
            "boundary.png",
        ),
    ]
    km = km_figure(out, reduction)
    return figures + ([km] if km else [])


def sweep_report(
    out: Path,
    reduction: Mapping,
    selection: Mapping | None,
    replays: Mapping | None,
    clips: Sequence[Mapping] | None,
    rrds: Sequence[Mapping] | None,
) -> Path:
    """Write report.json, the figures and report.html for one sweep's analysis folder `out`."""
    figures = sweep_figures(out, reduction, selection)
    row, col = grid_axes(reduction["sweep"]["grid"])
    rk, ck, cj = _name(row), _col_header(col), _col_key(col)
    others = [u for u in UNITS if u != OWN_UNIT.get(col.name, u)]  # a push's or kick's other units, side by side
    unit_columns = [f"{m} {UNITS[u]}" for u in others for m in ("median", "ci95")]
    boundary_rows = [
        {
            rk: b["row"],
            "status": b["status"],
            "point": b["point"],
            "median": b["median"],
            "ci95": b["ci95"],
            **{f"{m} {UNITS[u]}": b["in_units"][u][m] for u in others if "in_units" in b for m in ("median", "ci95")},
            "between cells": b["between"],
            "grid step": b["grid_step"],
            "crossed": b["crossed_fraction"],
            "note": b["note"],
        }
        for b in reduction["boundary"]
    ]
    checkpoint = reduction["sweep"]["checkpoint"]
    replay_rows = [
        {
            "kind": r["kind"],
            rk: r["row"],
            col.name: r["col"],
            "seed": r.get("seed"),
            "outcome": r.get("outcome", r.get("recovery_search")),
            "t_fail": r.get("t_fail"),
            "attempts": r.get("recovery_attempts"),
            "matched recorded": r.get("matched_recorded_survivor"),
            "bitwise equal": (r.get("equivalence") or {}).get("equal"),
            "cache_key": r.get("cache_key"),
        }
        for r in (replays or {}).get("replays", [])
    ]
    clip_rows = [
        {
            "kind": c["kind"],
            "file": c["file"],
            "outcome": c["outcome"],
            "t_fail": c["t_fail"],
            "before push": c.get("before_push"),
            "frames": c["frames"],
            "push frames": c.get("push_frames"),
            "frames show": c["frames_show"],
            "consistent": c["consistent"],
        }
        for c in clips or []
    ]
    count_rows = [
        {
            rk: c["row"],
            ck: c["col"],
            "n": c["n"],
            "failed": c["n_failed"],
            "failed before push": c.get("n_failed_before_push"),
            "survived (censored)": c["n_censored"],
            "diverged": c["n_diverged"],
            "S(5 s)": c["survival"],
            "KM median s": c["km_median_s"],
            "TTF p25 s": c["ttf_p25_s"],
            "TTF p75 s": c["ttf_p75_s"],
        }
        for c in reduction["cells"]
    ]
    early = reduction.get("failed_before_push")
    walking = (
        None
        if early is None
        else walking_warning(early, reduction["sweep"]["n_rollouts"], reduction["sweep"]["grid"]["push_t0_s"])
    )
    data = {
        "sweep": reduction["sweep"],
        "thresholds": reduction["thresholds"],
        "totals": reduction["totals"],
        "diverged_causes": reduction.get("diverged_causes"),
        "failed_before_push": early,
        "warnings": [walking] if walking else [],
        "rule_check": {k: v for k, v in reduction["rule_check"].items() if k != "examples"},
        "boundary": boundary_rows,
        "cells": [
            {
                rk: c["row"],
                cj: c["col"],
                **{
                    k: c.get(k)
                    for k in (
                        "n",
                        "n_failed",
                        "n_failed_before_push",
                        "n_censored",
                        "n_diverged",
                        "survival",
                        "km_median_s",
                    )
                },
            }
            for c in reduction["cells"]
        ],
        "selection_rule": (selection or {}).get("rule"),
        "replays": replay_rows,
        "equivalence": (replays or {}).get("equivalence_summary"),
        "clips": clip_rows,
        "rrd": [{k: r[k] for k in ("cache_key", "rrd_file", "qpos_file", "outcome")} for r in rrds or []],
        "training": reduction.get("training"),
        "robot": reduced_robot_ref(reduction),
        "method": reduction["method"],
    }
    write_json(out / "report.json", data)
    t = reduction["totals"]
    n_bound = sum(1 for b in reduction["boundary"] if b["status"] == "boundary")
    causes = reduction.get("diverged_causes") or {}
    step = next((b["grid_step"] for b in reduction["boundary"]), None)
    notes = [
        "Clips and .rrd files render the saved qpos of each record; their outcome labels are the records'.",
        f"Failures before the push: {early if early is not None else 'not counted (reduced before they were)'} of "
        f"{t['failed']} failures happened at or before the push start "
        f"({reduction['sweep']['grid']['push_t0_s']:g} s): the robot fell walking. They count in S like any "
        "failure (the rule and the keys are unchanged), are marked on the map (triangles, with their count) "
        "and have their own column and clip label.",
        "Boundary intervals come from resampling seeds within each cell and interpolating linearly between "
        "neighbouring cells; they do not include the grid's resolution"
        + (f" ({col.name} step {step:g} {col.unit})".replace(" )", ")") if step else "")
        + ": where S drops from 1 to 0 between two cells, "
        f"every resample crosses at the same {col.name} and the interval shrinks to a point. The column "
        f"'between cells' names the two {col.name} values the observed S falls through 0.5 between.",
    ]
    if walking:
        notes.insert(0, f"Warning: {walking}.")
    notes.insert(0, words(float(reduction["thresholds"].get("horizon_s", 5.0))))
    if t["diverged"]:
        notes.append(
            f"{t['diverged']} rollout(s) diverged ({causes.get('action', 0)} from a non-finite action of the "
            f"policy, {causes.get('state', 0)} from a non-finite state) and are left out of S; this sweep was "
            "reduced with --keep-diverged."
        )
    page = Page(
        title=f"Failure boundary: {reduction['sweep']['checkpoint']} on {reduction['sweep']['env']}",
        subtitle=f"{reduction['sweep']['n_rollouts']} rollouts, {len(reduction['sweep']['grid']['rows'])} "
        f"{_plural(row)} x {len(reduction['sweep']['grid']['cols'])} {_plural(col)} x "
        f"{reduction['sweep']['grid']['seeds_per_cell']} seeds; outcomes read from the store",
        headline=[
            ("failed", t["failed"]),
            ("of which before the push", early if early is not None else "n/a"),
            ("survived to the end (censored)", t["censored"]),
            ("diverged", t["diverged"]),
            ("diverged from a non-finite action", causes.get("action", 0)),
            ("rows with a boundary", f"{n_bound} / {len(reduction['boundary'])}"),
            (
                "rule agrees with records",
                f"{reduction['rule_check'].get('agree', 0)} / {reduction['rule_check'].get('checked', 0)}",
            ),
        ],
        notes=notes,
        tables=[
            Table(
                f"Boundary per {row.name} row ({col.unit or col.name}; intervals without the grid's resolution)",
                [
                    rk,
                    "status",
                    "point",
                    "median",
                    "ci95",
                    "between cells",
                    "grid step",
                    *unit_columns,
                    "crossed",
                    "note",
                ],
                boundary_rows,
            ),
            Table(
                "Replays (from the store)",
                ["kind", rk, col.name, "seed", "outcome", "t_fail", "attempts", "matched recorded", "bitwise equal"],
                replay_rows,
            ),
            Table(
                "Clips",
                [
                    "kind",
                    "file",
                    "outcome",
                    "t_fail",
                    "before push",
                    "frames",
                    "push frames",
                    "frames show",
                    "consistent",
                ],
                clip_rows,
            ),
            Table(
                "Per-cell counts (Kaplan-Meier, censored at the horizon)",
                [
                    rk,
                    ck,
                    "n",
                    "failed",
                    "failed before push",
                    "survived (censored)",
                    "diverged",
                    "S(5 s)",
                    "KM median s",
                    "TTF p25 s",
                    "TTF p75 s",
                ],
                count_rows,
            ),
        ],
        figures=figures,
        videos=[(clip_caption(checkpoint, c), f"../clips/{c['file']}") for c in clips or []],
        links=[
            (
                f"{r['rrd_file']} ({r['outcome']}; open with `rerun`) and its qpos: {r['qpos_file']}",
                f"../rrd/{r['rrd_file']}",
            )
            for r in rrds or []
        ],
        links_title="Rerun recordings (.rrd, from the stored qpos)",
    )
    render(out / "report.html", page, data)
    return out / "report.html"


def diff_figures(out: Path, diff: Mapping) -> list[tuple[str, str]]:
    mus, pushes = diff["grid"]["rows"], diff["grid"]["cols"]
    row, col = grid_axes(diff["grid"])
    a, b = diff["a"]["checkpoint"], diff["b"]["checkpoint"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, surface, name, side in ((axes[0], diff["surface_a"], a, "a"), (axes[1], diff["surface_b"], b, "b")):
        heatmap(ax, mus, pushes, surface, grid=diff["grid"])
        trained = overlay_training(ax, diff[side].get("training"), mus, pushes, diff["grid"])
        ax.set_title(
            f"{name}: danger = 1 - S" + (" (green: its training distribution)" if trained else ""), fontsize=10
        )
    save_png(fig, out / "surfaces.png")

    fig, ax = plt.subplots(figsize=(8, 6))
    delta = [[None] * len(pushes) for _ in mus]
    for c in diff["cells"]:
        delta[c["row_idx"]][c["col_idx"]] = c["delta_survival"]
    heatmap(ax, mus, pushes, delta, cmap="RdBu", vmin=-1.0, vmax=1.0, label=f"S({b}) - S({a})", grid=diff["grid"])
    for c in diff["cells"]:
        if c["change"] != "unchanged":
            ax.plot(c["col"], c["row"], "+" if c["change"] == "safer" else "x", color="black", ms=9, mew=2)
        q = c.get("q_fisher")
        if q is not None and q < 1.0:
            ax.annotate(
                f"{q:.2f}" if q >= 0.01 else f"{q:.0e}",
                (c["col"], c["row"]),
                fontsize=4.5,
                ha="center",
                va="top",
                xytext=(0, -3),
                textcoords="offset points",
                color="#333333",
            )
    changes = {c["change"] for c in diff["cells"]}
    marks = [
        m
        for m, change in (("+ = significantly safer", "safer"), ("x = significantly worse", "worse"))
        if change in changes
    ]  # the title names only the marks drawn
    numbered = any(c.get("q_fisher") is not None and c["q_fisher"] < 1.0 for c in diff["cells"])
    ax.set_title(
        "; ".join(
            [
                "Survival change",
                *([", ".join(marks) + f" (BH q < {diff['summary']['fdr_q']})"] if marks else []),
                *(["numbers: Fisher q-value per cell (where < 1)"] if numbered else []),
            ]
        ),
        fontsize=8,
    )
    save_png(fig, out / "delta.png")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for side, color, name in (("a", "#d62728", a), ("b", "#1f4e99", b)):
        rows = [r for r in diff["boundary_displacement"] if r[f"{side}_median"] is not None]
        if rows:
            med = np.array([r[f"{side}_median"] for r in rows])
            lo = med - np.array([r[f"{side}_ci95"][0] for r in rows])
            hi = np.array([r[f"{side}_ci95"][1] for r in rows]) - med
            ax.errorbar(med, [r["row"] for r in rows], xerr=[lo, hi], fmt="o-", color=color, capsize=3, label=name)
    ax.set_xlim(pushes[0], pushes[-1])
    ax.set_ylim(_edges(mus)[0], _edges(mus)[-1])
    ax.set_xlabel(col.label)
    ax.set_ylabel(row.label)
    ax.legend(fontsize=8)
    ax.set_title("Boundary per row, both checkpoints (bootstrap median, 95% interval)", fontsize=10)
    save_png(fig, out / "boundary_shift.png")
    return [
        ("Both surfaces", "surfaces.png"),
        ("Cell-by-cell change", "delta.png"),
        ("Boundary displacement", "boundary_shift.png"),
    ]


def diff_report(out: Path, diff: Mapping) -> Path:
    figures = diff_figures(out, diff)
    data = {
        k: diff[k]
        for k in (
            "a",
            "b",
            "grid",
            "thresholds",
            "summary",
            "shrinkage_census",
            "safer_cells",
            "boundary_displacement",
            "method",
        )
        if k in diff
    }
    data["logrank_summary"] = diff.get("logrank_summary")
    row, col = grid_axes(diff["grid"])
    rk, ck = _name(row), _col_header(col)
    cell_rows = [
        {
            rk: c["row"],
            ck: c["col"],
            "failed A": f"{c['failed_a']}/{c['n_a']}",
            "failed B": f"{c['failed_b']}/{c['n_b']}",
            "before push A": c.get("failed_before_push_a"),
            "before push B": c.get("failed_before_push_b"),
            "dS": c["delta_survival"],
            "p Fisher": c["p_fisher"],
            "q Fisher": c.get("q_fisher"),
            "p log-rank": c.get("p_logrank"),
            "q log-rank": c.get("q_logrank"),
            "change": c["change"],
        }
        for c in diff["cells"]
        if c["failed_a"] or c["failed_b"]
    ]
    data["cells_with_failures"] = cell_rows
    write_json(out / "report.json", data)
    s = diff["summary"]
    census = diff["shrinkage_census"]
    against = [r for r in diff["boundary_displacement"] if r.get("logrank_disagrees")]
    cc = _col_key(col)
    notes = [
        f"Shrinkage census: {census['cells_significantly_worse']} cell(s) significantly worse."
        + ("" if not census["cells"] else " Listed below."),
        f"Diverged rollouts (left out of both tables): A {diff['a']['totals']['diverged']}, "
        f"B {diff['b']['totals']['diverged']}.",
        "Boundary intervals do not include the grid's resolution (see each sweep's report).",
    ]
    notes.insert(0, words(float(diff["thresholds"].get("horizon_s", 5.0))))
    if against:
        notes.append(
            f"In {len(against)} row(s) the log-rank direction disagrees with the boundary shift: the test "
            "weighs when robots fall, the boundary whether they survive, and in cells where every robot of "
            "both checkpoints fell, S is 0 on both sides while B's robots fell sooner (or later). Each such "
            "row says so in 'logrank_note'."
        )
    page = Page(
        title=f"Failure boundary diff: {diff['a']['checkpoint']} -> {diff['b']['checkpoint']}",
        subtitle=f"{s['cells']} cells x {diff['grid']['seeds_per_cell']} seeds per sweep; Fisher exact per cell, "
        f"Benjamini-Hochberg q < {s['fdr_q']}",
        headline=[("cells safer", s["safer"]), ("cells worse (shrinkage)", s["worse"]), ("unchanged", s["unchanged"])],
        notes=notes,
        tables=[
            Table(
                "Shrinkage census: cells significantly worse",
                [rk, cc, "survival_a", "survival_b", "p_fisher"],
                _relabel(census["cells"], row, col),
            ),
            Table(
                "Cells made safer",
                [rk, cc, "survival_a", "survival_b", "p_fisher"],
                _relabel(diff["safer_cells"], row, col),
            ),
            Table(
                f"Boundary displacement per row ({col.unit or col.name}) and the row's stratified log-rank test",
                [
                    rk,
                    "a",
                    "b",
                    "displacement",
                    "p_logrank_row",
                    "q_logrank_row",
                    "logrank_row_direction",
                    "logrank_note",
                    "note",
                ],
                _relabel(diff["boundary_displacement"], row, col),
            ),
            Table(
                "Cells with any failure: counts, Fisher and log-rank p- and q-values (BH over all cells)",
                [
                    rk,
                    ck,
                    "failed A",
                    "failed B",
                    "before push A",
                    "before push B",
                    "dS",
                    "p Fisher",
                    "q Fisher",
                    "p log-rank",
                    "q log-rank",
                    "change",
                ],
                cell_rows,
            ),
        ],
        figures=figures,
    )
    render(out / "report.html", page, data)
    return out / "report.html"


def _row_label(values: Mapping) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in values.items())


def _draw_rows(ax, rows: Sequence[Mapping], ys: Sequence[float], color: str, label: str) -> None:
    """Each located row's estimate and 95% interval; rows with no crossing in range as an arrow at the end
    they lie beyond."""
    located = [(r, y) for r, y in zip(rows, ys) if r["status"] == "crossing"]
    if located:
        est = np.array([r["estimate_pct_bw"] for r, _ in located])
        lo = est - np.array([r["ci95_pct_bw"][0] for r, _ in located])
        hi = np.array([r["ci95_pct_bw"][1] for r, _ in located]) - est
        ax.errorbar(est, [y for _, y in located], xerr=[lo, hi], fmt="o", color=color, ms=4, capsize=3, label=label)
    for r, y in zip(rows, ys):
        if r["status"] != "crossing":
            ax.annotate(
                r["status"],
                (0.01 if r["status"] == "below range" else 0.99, y),
                xycoords=("axes fraction", "data"),
                ha="left" if r["status"] == "below range" else "right",
                va="center",
                fontsize=7,
                color=color,
            )


def search_figures(out: Path, search: Mapping) -> list[tuple[str, str]]:
    rows, lo_hi = search["rows"], search["push_range_pct_bw"]
    axes_ = search["row_axes"]
    single = len(axes_) == 1
    ys = [r["values"][next(iter(axes_))] for r in rows] if single else list(range(len(rows)))
    grid = search.get("grid_comparison")
    fig, ax = plt.subplots(figsize=(8, max(4.5, 0.28 * len(rows) + 1.5)))
    if grid and single:
        heatmap(
            ax,
            grid["grid"]["rows"],
            grid["grid"]["cols"],
            [[None if v is None else 1.0 - v for v in row] for row in grid["survival"]],
            cmap=LinearSegmentedColormap.from_list("light_greys", ["white", "#8c8c8c"]),  # the points stay legible
            label="grid: danger = 1 - S",
        )
    rng = np.random.default_rng(0)  # jitter only spreads the markers of equal worlds; seeded, so the PNG repeats
    step = (np.diff(sorted(set(ys))).min() if len(set(ys)) > 1 else 1.0) * 0.25
    for r, y in zip(rows, ys):
        for e in r["evidence"]:
            n, k = e["n"], e["survived"]
            jitter = rng.uniform(-step, step, n)
            ax.scatter(
                np.full(n, e["push_pct_bw"]),
                y + jitter,
                s=6,
                c=["#2ca02c"] * k + ["#d62728"] * (n - k),
                alpha=0.6,
                linewidths=0,
            )
    _draw_rows(ax, rows, ys, "#1f4e99", f"search: crossing of S = {search['level']:g}, 95% interval")
    if grid:
        by_row = {g["row"]: g for g in grid["rows"] if g["grid_median_pct_bw"] is not None}
        pts = [(by_row[r["row"]], y) for r, y in zip(rows, ys) if r["row"] in by_row]
        if pts:
            med = np.array([g["grid_median_pct_bw"] for g, _ in pts])
            ax.errorbar(
                med,
                [y + step * 1.5 for _, y in pts],
                xerr=[
                    med - np.array([g["grid_ci95_pct_bw"][0] for g, _ in pts]),
                    np.array([g["grid_ci95_pct_bw"][1] for g, _ in pts]) - med,
                ],
                fmt="s",
                color="#ff7f0e",
                ms=4,
                capsize=2,
                label="grid: bootstrap median, 95% CI",
            )
    ax.set_xlim(lo_hi[0] - 2, lo_hi[1] + 2)
    ax.set_xlabel("lateral push (% bodyweight)")
    if single:
        ax.set_ylabel(AXES[next(iter(axes_))].label)
    else:
        ax.set_yticks(ys, [_row_label(r["values"]) for r in rows], fontsize=6)
    ax.set_title("Sampled worlds (green survived, red failed) and each row's crossing", fontsize=9)
    ax.legend(loc="upper right", fontsize=7)
    save_png(fig, out / "search_map.png")

    fig, ax = plt.subplots(figsize=(7, max(3.0, 0.22 * len(rows) + 1.2)))
    ax.barh(range(len(rows)), [r["rollouts"] for r in rows], color="#1f4e99")
    ax.barh(range(len(rows)), [r["grid_worlds"] for r in rows], color="#ff7f0e", label="of which grid worlds")
    ax.set_yticks(range(len(rows)), [_row_label(r["values"]) for r in rows], fontsize=6)
    ax.set_xlabel("rollouts")
    ax.legend(fontsize=7)
    ax.set_title(f"Rollouts per row ({search['totals']['rollouts']} of a {search['budget']} budget)", fontsize=9)
    save_png(fig, out / "search_rollouts.png")
    figures = [
        (
            "Sampled worlds on the map, each row's crossing with its 95% interval"
            + (" and the grid's boundary (orange) over the grid's danger" if grid else ""),
            "search_map.png",
        ),
        ("Rollouts spent per row", "search_rollouts.png"),
    ]
    if not single:
        names = list(axes_)
        fig, axs = plt.subplots(1, len(names), figsize=(4 * len(names), 3.4), squeeze=False, layout="constrained")
        for ax, name in zip(axs[0], names):
            located = [r for r in rows if r["status"] == "crossing"]
            x = np.array([r["values"][name] for r in located])
            est = np.array([r["estimate_pct_bw"] for r in located])
            ax.errorbar(
                x,
                est,
                yerr=[
                    est - np.array([r["ci95_pct_bw"][0] for r in located]),
                    np.array([r["ci95_pct_bw"][1] for r in located]) - est,
                ],
                fmt="o",
                ms=3,
                alpha=0.6,
                color="#1f4e99",
                capsize=2,
            )
            vals = axes_[name]
            ax.plot(
                vals,
                [np.median(est[x == v]) if (x == v).any() else np.nan for v in vals],
                "-",
                color="black",
                lw=1.5,
                label="median over the other axes",
            )
            ax.set_xlabel(AXES[name].label)
            ax.set_ylabel("crossing push (%BW)")
            ax.legend(fontsize=7)
        save_png(fig, out / "search_axes.png")
        figures.append(
            (
                "Where the boundary moves along each row axis (every located row; line: median over the "
                "other axes' values)",
                "search_axes.png",
            )
        )
    return figures


def search_report(out: Path, search: Mapping) -> Path:
    """Write report.json, the figures and report.html for a search folder's search.json."""
    figures = search_figures(out, search)
    t = search["totals"]
    row_table = [
        {
            "row": _row_label(r["values"]),
            "status": r["status"],
            "stopped": r["stopped"],
            "estimate": r["estimate_pct_bw"],
            "ci95": r["ci95_pct_bw"],
            "width": r["width_pct_bw"],
            "rollouts": r["rollouts"],
            "grid worlds": r["grid_worlds"],
            "survived": r["survived"],
            "diverged": r["diverged"],
            "non-monotone": r["monotonicity"]["flagged"],
            "note": r["note"],
        }
        for r in search["rows"]
    ]
    evidence = [
        {
            "row": _row_label(r["values"]),
            "status": r["status"],
            "evidence": r["note"],
            "pushes (n, survived)": "; ".join(f"{e['push_pct_bw']:g}: {e['survived']}/{e['n']}" for e in r["evidence"]),
        }
        for r in search["rows"]
        if r["status"] != "crossing" or r["monotonicity"]["flagged"]
    ]
    grid = search.get("grid_comparison")
    data = {
        k: search[k]
        for k in (
            "checkpoint",
            "robot",
            "row_axes",
            "fixed",
            "push_range_pct_bw",
            "level",
            "target_width_pct_bw",
            "budget",
            "batch",
            "seed_block",
            "seed_scheme",
            "method",
            "totals",
            "grid_comparison",
        )
    }
    data["rows"] = row_table
    data["no_crossing_or_flagged"] = evidence
    write_json(out / "report.json", data)
    notes = [f"{k}: {v}" for k, v in search["method"].items()]
    notes.append(
        "The equivalence gate (`verify`) re-simulates a sweep's worlds; a search's rollouts come from the "
        "same simulator and loop, and the grid worlds it shares are the sweep's own records."
    )
    if grid:
        covered = [g for g in grid["rows"] if g["search_covers_grid_median"] is not None]
        notes.append(
            f"Grid in the store: {grid['rollouts']} rollouts; the search's interval holds the grid's bootstrap "
            f"median in {sum(g['search_covers_grid_median'] for g in covered)} of {len(covered)} rows where "
            "the grid has a boundary."
        )
    page = Page(
        title=f"Boundary search: {search['checkpoint']['name']}",
        subtitle=f"{t['rows']} rows ({', '.join(search['row_axes'])}) x push {search['push_range_pct_bw'][0]:g}-"
        f"{search['push_range_pct_bw'][1]:g} % of body weight (%BW); crossing of survival S = "
        f"{search['level']:g}; seed block {search['seed_block']}",
        headline=[
            ("rows located", f"{t['located']} / {t['rows']}"),
            ("below the push range", t["below_range"]),
            ("above the push range", t["above_range"]),
            ("stopped by the budget", t["budget_stopped"]),
            ("flagged non-monotone", t["non_monotone"]),
            ("rollouts", f"{t['rollouts']} / {search['budget']}"),
            ("grid worlds reused", t["grid_worlds"]),
        ]
        + ([("grid rollouts", grid["rollouts"])] if grid else []),
        notes=notes,
        tables=[
            Table(
                "Rows (%BW)",
                [
                    "row",
                    "status",
                    "stopped",
                    "estimate",
                    "ci95",
                    "width",
                    "rollouts",
                    "grid worlds",
                    "survived",
                    "diverged",
                    "non-monotone",
                    "note",
                ],
                row_table,
            ),
            Table(
                "Rows with no crossing in range, or flagged non-monotone: the evidence",
                ["row", "status", "evidence", "pushes (n, survived)"],
                evidence,
            ),
        ]
        + (
            [
                Table(
                    "Search against the grid in the store",
                    ["mu", "grid_status", "grid_median_pct_bw", "grid_ci95_pct_bw", "search_covers_grid_median"],
                    grid["rows"],
                )
            ]
            if grid
            else []
        ),
        figures=figures,
    )
    render(out / "report.html", page, data)
    return out / "report.html"


def run(req: ReportRequest) -> Result:
    """`policylab boundary report`: OUT/report/report.json and report.html, for an analysis folder (with
    whichever later stages it has) or a diff folder."""
    from policylab.config import load_json_file
    from policylab.rollout.store import Store
    from policylab.studies.boundary import gate

    if stage_path(req.out, "search").is_file():
        claim_out_dir(req.out / "report", {"kind": "search"})
        return Result(search_report(req.out / "report", read_stage(req.out, "search")))
    config = load_json_file(req.out / "config.json", "out")
    sweeps = (
        [(config["store"], config["a"]), (config["store_b"], config["b"])]
        if "a" in config
        else [(config["store"], config["checkpoint"])]
    )
    for root, name in sweeps:
        if not (Path(root) / "index.sqlite").is_file():
            raise BadInput("out", f"the store {root} that {req.out} was made from is gone (no index.sqlite)")
        with Store(root, readonly=True) as store:
            gate.require(store, name, "out")
    if stage_path(req.out, "diff").is_file():
        diff = read_stage(req.out, "diff")
        claim_out_dir(req.out / "report", {"kind": "diff"})
        return Result(diff_report(req.out / "report", diff))
    reduction = read_stage(req.out, "reduce")
    later = {
        stage: read_stage(req.out, stage) if stage_path(req.out, stage).is_file() else None
        for stage in ("select", "replay", "clips", "rrd")
    }
    claim_out_dir(req.out / "report", {"kind": "sweep"})
    return Result(
        sweep_report(req.out / "report", reduction, later["select"], later["replay"], later["clips"], later["rrd"])
    )
