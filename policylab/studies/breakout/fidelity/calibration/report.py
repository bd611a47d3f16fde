"""calibration.html: every change with the gap it addresses and its before/after numbers, the rejected
changes and why, the closed-loop statistics before/after against ALE, and the per-step replay agreement."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render
from policylab.studies.breakout.fidelity.calibration.metrics import STAT_FIELDS


def _stats_chart(data: dict, path: Path) -> None:
    ale, before, after = data["ale_trace_stats"], data["before"]["stats"], data["after"]["stats"]
    fig, ax = plt.subplots(figsize=(8, 3))
    x = np.arange(len(STAT_FIELDS))
    for k, (label, src) in enumerate((("shadow before", before), ("shadow after", after))):
        ax.bar(x + (k - 0.5) * 0.35, [src[f] / ale[f] if ale[f] else 0 for f in STAT_FIELDS], 0.35, label=label)
    ax.axhline(1.0, color="black", lw=1, label="ALE traces")
    ax.set_xticks(x, [f.replace("_mean", "").replace("_", " ") for f in STAT_FIELDS], fontsize=8)
    ax.set_ylabel("shadow / ALE")
    ax.legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)


def _change_rows(rows: list[dict]) -> list[dict]:
    return [
        {
            "change": r["change"],
            "kind": r["kind"],
            "gap": r["gap"],
            "why": r["why"],
            "objective before": r["objective_before"],
            "objective after": r["objective_after"],
            "ball replay frames before": r["replay_before"]["ball_frames_to_divergence_median"],
            "ball replay frames after": r["replay_after"]["ball_frames_to_divergence_median"],
            "paddle exact before": r["replay_before"]["paddle_exact_fraction"],
            "paddle exact after": r["replay_after"]["paddle_exact_fraction"],
            "reason": r.get("reason", ""),
        }
        for r in rows
    ]


def write_calibration_report(out: Path, data: dict) -> Path:
    _stats_chart(data, out / "figures" / "stats.png")
    cols = [
        "change",
        "kind",
        "gap",
        "why",
        "objective before",
        "objective after",
        "ball replay frames before",
        "ball replay frames after",
        "paddle exact before",
        "paddle exact after",
    ]
    stats_rows = [
        {
            "statistic": f,
            "ALE traces": data["ale_trace_stats"][f],
            "shadow before": data["before"]["stats"][f],
            "shadow after": data["after"]["stats"][f],
        }
        for f in STAT_FIELDS
    ]
    b, a = data["before"]["replay"], data["after"]["replay"]
    page = Page(
        title=f"Shadow Breakout calibration: {data['base']} -> {data['preset_name']}",
        subtitle=f"{len(data['traces'])} ALE traces recorded by `policylab breakout trace`",
        headline=[
            ("objective before", data["before"]["objective"]),
            ("objective after", data["after"]["objective"]),
            ("ball replay median frames before", b["ball_frames_to_divergence_median"]),
            ("ball replay median frames after", a["ball_frames_to_divergence_median"]),
            ("paddle frame-exact before", b["paddle_exact_fraction"]),
            ("paddle frame-exact after", a["paddle_exact_fraction"]),
            ("changes kept / rejected", f"{len(data['accepted'])} / {len(data['rejected'])}"),
        ],
        notes=[
            "Objective: mean |log(shadow/ALE)| over ball |vx|, |vy|, paddle |dx| per agent step and agent steps and "
            "points per life, the traces' policies played closed-loop in the shadow (64 seeds each).",
            "Replay: the traces' per-frame actions replayed with sticky 0; the ball is placed at each ALE serve; "
            "frames until ball or paddle differ by more than 1 px.",
        ],
        tables=[
            Table("Kept changes", cols, _change_rows(data["accepted"])),
            Table("Rejected changes", cols + ["reason"], _change_rows(data["rejected"])),
            Table("Checked, not modelled", ["mechanic", "gap", "evidence", "decision"], data["not_modelled"]),
            Table("Closed-loop statistics", ["statistic", "ALE traces", "shadow before", "shadow after"], stats_rows),
        ],
        figures=[("Closed-loop statistics, shadow / ALE traces", "figures/stats.png")],
    )
    html = out / "calibration.html"
    render(html, page, data, "calibration.json")
    return html
