"""The training loop's report: report.json (the original's sections plus the statistics) and an
HTML page with the verdict up front, the paired validation chart, the rank scatter of the
screened candidates and the pick's ALE video."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.fileio import write_json
from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render

PICK_C, BASE_C = "#2f7d4f", "#8c8c8c"


def write_train_report(out: Path, data: dict) -> Path:
    write_json(out / "report.json", data)
    ev, tr, dec = data["evaluation"], data["training"], data["decision"]
    figs = out / "figures"
    _paired_chart(ev["paired_by_seed"], figs / "validation_paired.png")
    figures = [("Validation on ALE, paired by seed: the pick vs the baseline", "figures/validation_paired.png")]
    if tr["screening"]:
        _rank_chart(tr["top_search_candidates"], tr["screening"], figs / "screening_rank.png")
        figures.append(("Screened candidates: search-env mean vs ALE mean", "figures/screening_rank.png"))
    _search_chart(tr, figs / "search_scores.png")
    figures.append(("Search-env score means of all candidates", "figures/search_scores.png"))
    video = data["evidence"]["video"]
    corr = tr["shadow_vs_ale_rank_correlation"]
    page = Page(
        title=f"Breakout training loop: {dec['verdict']}",
        subtitle=(f"{tr['searched_candidates']} candidates searched on {data['objective']['search_env']}, "
                  f"picked {tr['selected_candidate']['candidate_id']} on {tr['selected_on']}, validated on ALE "
                  f"against {data['objective']['baseline']} on {ev['paired_delta']['n']} fresh seeds"),
        headline=[
            ("verdict", dec["verdict"]),
            ("pick ALE mean", ev["new_policy"]["mean"]),
            ("pick 95% CI", ev["new_policy"]["mean_ci95"]),
            ("baseline ALE mean", ev["baseline_policy"]["mean"]),
            ("paired delta", ev["paired_delta"]["mean_delta"]),
            ("delta 95% CI", ev["paired_delta"]["ci95"]),
            ("P(improvement)", ev["paired_delta"]["prob_improvement"]),
            ("regret on ALE", None if ev["regret"] is None else ev["regret"]["regret"]),
            ("Spearman search vs ALE", None if corr is None else corr["spearman"]),
        ],
        notes=[dec["verdict_rule"] + "."]
        + ([dec["failure_reason"]] if dec["failure_reason"] else []),
        tables=[
            Table("Validation, paired by seed", ["seed", "pick_score", "baseline_score", "delta"],
                  ev["paired_by_seed"]),
            Table("ALE screening", ["candidate_id", "score_mean", "score_min", "score_max", "low_score_count"],
                  tr["screening"]),
            Table("Top search candidates (selection rule order)",
                  ["candidate_id", "score_mean", "score_min", "score_max", "low_score_count"],
                  tr["top_search_candidates"]),
        ],
        figures=figures,
        videos=[] if video is None else [(f"The pick on ALE, validation seed {video['seed']}", video["path"])],
    )
    render(out / "report.html", page, data)
    return out / "report.html"


def _paired_chart(rows: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 3.2))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["pick_score"] for r in rows], 0.4, color=PICK_C, label="pick")
    ax.bar(x + 0.2, [r["baseline_score"] for r in rows], 0.4, color=BASE_C, label="baseline")
    ax.set_xticks(x, [str(r["seed"]) for r in rows], rotation=90, fontsize=7)
    ax.set_xlabel("validation seed")
    ax.set_ylabel("ALE score")
    ax.legend(frameon=False)
    save_png(fig, path)


def _rank_chart(search: list[dict], screening: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(4.5, 4))
    by_id = {r["candidate_id"]: r["score_mean"] for r in search}
    for r in screening:
        sim = by_id.get(r["candidate_id"])
        if sim is None:
            continue
        ax.scatter(sim, r["score_mean"], color=PICK_C)
        ax.annotate(r["candidate_id"], (sim, r["score_mean"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("search-env mean score")
    ax.set_ylabel("ALE screening mean score")
    save_png(fig, path)


def _search_chart(training: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3))
    means = [r["score_mean"] for r in training["all_candidates"]]
    ax.hist(means, bins=min(20, max(3, len(means))), color=BASE_C)
    ax.axvline(training["selected_candidate"]["score_mean"], color=PICK_C, label="pick (search env)")
    ax.set_xlabel("search-env score mean")
    ax.set_ylabel("candidates")
    ax.legend(frameon=False)
    save_png(fig, path)
