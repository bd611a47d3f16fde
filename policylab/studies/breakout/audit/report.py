"""The audit page: audit.html, rendered from audit.json's data, with the gap table, the paired scores,
the per-episode features side by side and, with candidates, the rank chart and its noise ceiling."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render
from policylab.studies.breakout.episodes.report import ALE_C, SHADOW_C

FEATURE_BARS = [
    ("ball_abs_vx_mean", "ball |vx| (px/step)"),
    ("ball_abs_vy_mean", "ball |vy| (px/step)"),
    ("paddle_abs_delta_mean", "paddle |dx| (px/step)"),
    ("steps", "episode length (steps)"),
    ("reward_count", "bricks hit"),
]


def write_audit_report(out: Path, data: dict) -> Path:
    comp = data["comparison"]
    figs = out / "figures"
    figures = [
        ("Score per seed: shadow vs ALE", "figures/paired_scores.png"),
        ("Per-episode features, side by side (bars: means; dots: episodes)", "figures/features.png"),
    ]
    _paired_chart(comp["paired_by_seed"], figs / "paired_scores.png")
    _feature_chart(comp["shadow"]["rows"], comp["ale"]["rows"], figs / "features.png")
    tables = [
        Table("Gaps", ["gap", "detected", "confidence", "finding"], data["gap_audit"]),
        Table("Paired by seed", list(comp["paired_by_seed"][0]), comp["paired_by_seed"]),
    ]
    if data["rank_correlation"]:
        _rank_chart(data["candidates"], figs / "rank.png")
        figures.append(("Candidates: shadow mean vs ALE mean (and ALE vs ALE on disjoint seeds)", "figures/rank.png"))
        tables.append(
            Table(
                "Candidates",
                [
                    "candidate_id",
                    "shadow_score_mean",
                    "ale_score_mean",
                    "ale_reference_score_mean",
                    "score_ratio_shadow_over_ale",
                ],
                data["candidates"],
            )
        )
    if data.get("compare"):
        side = data["compare"]["side_by_side"]
        names = list(side)
        metric_rows = [
            {"metric": m, **{n: side[n][m] for n in names}}
            for m in ("spearman", "pearson", "reference_self_spearman", "median_abs_score_ratio_minus_1")
        ]
        metric_rows += [
            {"metric": f"{f} shadow/ALE", **{n: side[n]["features"][f]["ratio_shadow_over_ale"] for n in names}}
            for f in side[names[0]]["features"]
        ]
        tables.append(Table("Presets side by side", ["metric", *names], metric_rows))
        tables.append(
            Table("Candidates on both presets", list(data["compare"]["candidates"][0]), data["compare"]["candidates"])
        )
    dec = data["decision"]
    s, a = comp["shadow"]["score"], comp["ale"]["score"]
    headline = [
        ("shadow mean score", s["mean"]),
        ("shadow 95% CI", s["mean_ci95"]),
        ("ALE mean score", a["mean"]),
        ("ALE 95% CI", a["mean_ci95"]),
        ("primary failure class", dec["primary_failure_class"]),
        ("secondary", dec["secondary_failure_class"] or "none"),
    ]
    rank = data["rank_correlation"]
    if rank:
        headline.append(("Spearman shadow vs ALE", rank["spearman"]))
        headline.append(("ALE vs ALE ceiling", rank["reference_self_spearman"]))
    obj = data["objective"]
    page = Page(
        title=f"Env gap audit: {obj['policy']}",
        subtitle=f"shadow preset {obj['shadow']['preset']} vs ALE ("
        + ", ".join(f"{k}={v}" for k, v in obj["ale"]["protocol"].items())
        + f"), seeds {obj['seeds'][0]}..{obj['seeds'][-1]}",
        headline=headline,
        notes=[dec["statement"], "Next: " + dec["next_recommendation"]],
        tables=tables,
        figures=figures,
    )
    html = out / "audit.html"
    render(html, page, data, "audit.json")
    return html


def _paired_chart(paired: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 3))
    x = np.arange(len(paired))
    ax.bar(x - 0.2, [p["shadow_score"] for p in paired], 0.4, label="shadow", color=SHADOW_C)
    ax.bar(x + 0.2, [p["ale_score"] for p in paired], 0.4, label="ALE", color=ALE_C)
    ax.set_xticks(x, [str(p["seed"]) for p in paired], fontsize=7)
    ax.set_xlabel("seed")
    ax.set_ylabel("score")
    ax.legend(fontsize=8)
    save_png(fig, path)


def _feature_chart(shadow: list[dict], ale: list[dict], path: Path) -> None:
    fig, axes = plt.subplots(1, len(FEATURE_BARS), figsize=(11, 2.8))
    for ax, (field, label) in zip(axes, FEATURE_BARS):
        for i, (rows, colour) in enumerate(((shadow, SHADOW_C), (ale, ALE_C))):
            vals = np.array([float(r[field]) for r in rows])
            ax.bar(i, vals.mean(), color=colour, alpha=0.8)
            ax.scatter(np.full(vals.size, i) + np.linspace(-0.15, 0.15, vals.size), vals, s=6, color="k", zorder=3)
        ax.set_xticks([0, 1], ["shadow", "ALE"], fontsize=8)
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    save_png(fig, path)


def _rank_chart(cands: list[dict], path: Path) -> None:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for c in cands:
        a1.scatter(c["shadow_score_mean"], c["ale_score_mean"], color=ALE_C, s=14)
        a1.annotate(c["candidate_id"], (c["shadow_score_mean"], c["ale_score_mean"]), fontsize=6)
        a2.scatter(c["ale_reference_score_mean"], c["ale_score_mean"], color="#55a868", s=14)
    a1.set_xlabel("shadow mean score")
    a1.set_ylabel("ALE mean score")
    a1.set_title("shadow vs ALE", fontsize=9)
    a2.set_xlabel("ALE mean score (disjoint seeds)")
    a2.set_ylabel("ALE mean score")
    a2.set_title("ALE vs ALE (noise ceiling)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path)
