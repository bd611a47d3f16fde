"""The training loop's report: report.json (the original's sections plus the statistics) and an
HTML page with the verdict, its interval and how sure it is up front."""

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
    conf, curse, est = ev["ale_confirmation"], ev["winners_curse"], tr["regret_estimate"]
    if conf is None:
        _paired_chart(ev["paired_by_seed"], figs / "validation_paired.png")
        figures = [("Validation on ALE, paired by seed: the pick vs the baseline", "figures/validation_paired.png")]
    else:
        _delta_hist(ev["paired_by_seed"], figs / "validation_deltas.png")
        figures = [
            (
                f"Validation on {ev['paired_delta']['n']:,} exact-shadow seeds: paired deltas (pick - baseline)",
                "figures/validation_deltas.png",
            )
        ]
    if tr["screening"]:
        _rank_chart(tr["top_search_candidates"], tr["screening"], figs / "screening_rank.png")
        figures.append(("Screened candidates: search-env mean vs ALE mean", "figures/screening_rank.png"))
    _search_chart(tr, figs / "search_scores.png")
    figures.append(("Search-env score means of all candidates (first round)", "figures/search_scores.png"))
    video = data["evidence"]["video"]
    corr = tr["shadow_vs_ale_rank_correlation"]
    d = ev["paired_delta"]
    schedule = " -> ".join(f"{r['candidates']} x {r['seeds_each']}" for r in tr["rounds"])
    page = Page(
        title=f"Breakout training loop: {dec['verdict']}",
        subtitle=(
            f"{tr['searched_candidates']} candidates searched on {data['objective']['search_env']} by successive "
            f"halving ({schedule} seeds, "
            f"objective {data['objective']['search_objective']}), picked "
            f"{tr['selected_candidate']['candidate_id']} on {tr['selected_on']}, validated against "
            f"{data['objective']['baseline']} on {d['n']:,} fresh seeds ({ev['validation_env']})"
        ),
        headline=[
            ("verdict", dec["verdict"]),
            ("paired delta", d["mean_delta"]),
            ("delta 95% CI", d["ci95"]),
            ("P(same verdict on a fresh set)", d["verdict_agreement"]),
            ("pick mean", ev["new_policy"]["mean"]),
            ("pick 95% CI", ev["new_policy"]["mean_ci95"]),
            ("baseline mean", ev["baseline_policy"]["mean"]),
            ("search mean of the pick", curse["search_mean"]),
            # a tile only where its number exists: a blank tile read as a missing number
            *([("ALE confirmed seeds", f"{conf['equal']} / {conf['of']}")] if conf is not None else []),
            *([("est. regret among finalists", est["mean_regret"])] if est is not None else []),
            *([("regret on ALE screening", ev["regret"]["regret"])] if ev["regret"] is not None else []),
            *([("Spearman search vs ALE", corr["spearman"])] if corr is not None else []),
        ],
        notes=list(dec["headlines"])
        + [dec["verdict_rule"] + "; the probability of the same verdict: " + d["verdict_agreement_method"] + "."]
        + (
            [
                f"Regret estimate: {est['method']}; mean {est['mean_regret']:.2f}, 95th percentile "
                f"{est['regret_q95']:.2f}, P(pick is the best finalist) {est['prob_pick_is_best']:.2f}."
            ]
            if est is not None
            else []
        )
        + ([dec["failure_reason"]] if dec["failure_reason"] else []),
        tables=[
            Table("Search rounds (successive halving)", ["round", "candidates", "seeds_each", "best"], tr["rounds"]),
            Table(
                "Contenders of the last round: mean with its t 95% interval",
                ["candidate_id", "seeds", "score_mean", "score_mean_ci95", "score_q25", "score_min", "low_score_count"],
                tr["contenders"],
            ),
            *(
                [
                    Table(
                        "ALE confirmation of the exact validation: ALE and shadow scores on the same seeds",
                        ["seed", "pick_shadow", "pick_ale", "baseline_shadow", "baseline_ale"],
                        conf["rows"],
                    )
                ]
                if conf is not None
                else [
                    Table(
                        "Validation, paired by seed",
                        ["seed", "pick_score", "baseline_score", "delta"],
                        ev["paired_by_seed"],
                    )
                ]
            ),
            Table(
                "ALE screening",
                ["candidate_id", "score_mean", "score_min", "score_max", "low_score_count"],
                tr["screening"],
            ),
        ],
        figures=figures,
        videos=[] if video is None else [(f"The pick on ALE, validation seed {video['seed']}", video["path"])],
    )
    render(out / "report.html", page, data)
    return out / "report.html"


def _delta_hist(rows: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3))
    deltas = [r["delta"] for r in rows]
    ax.hist(deltas, bins=40, color=PICK_C)
    ax.axvline(0, color=BASE_C)
    ax.axvline(float(np.mean(deltas)), color="black", linestyle="--", label="mean delta")
    ax.set_xlabel("pick score - baseline score, same seed")
    ax.set_ylabel("seeds")
    ax.legend(frameon=False)
    save_png(fig, path)


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
