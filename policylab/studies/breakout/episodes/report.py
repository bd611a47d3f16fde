"""Eval reports: JSON first, then an HTML page with tables, charts and video.

Above `EMBED_EPISODES_MAX` episodes report.json is summarised (quantiles, `episodes_summary`); rows stay in
episodes.jsonl."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.envs.breakout.contract import F
from policylab.fileio import write_json
from policylab.policies.breakout import policy_label
from policylab.provenance import versions
from policylab.report.charts import plt, save_png
from policylab.report.html import Page, Table, render
from policylab.result import Result
from policylab.stats import distribution

SHADOW_C, ALE_C = "#4c72b0", "#dd8452"
EPISODE_COLUMNS = [
    "episode",
    "seed",
    "score",
    "steps",
    "done",
    "reward_count",
    "first_reward_step",
    "paddle_abs_delta_mean",
    "ball_abs_vx_mean",
    "ball_abs_vy_mean",
    "lives_start",
    "lives_end",
]
EMBED_EPISODES_MAX = 256  # evals with more episodes are summarised in report.json (see the module docstring)
BAR_CHART_MAX = 64  # score per seed as bars up to this many episodes, a histogram above
SUMMARY_ROWS = 10  # rows of each table in a summarised report
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
HISTOGRAM_BINS = 20


def write_eval_report(out: Path, config: dict, rows: list[dict], replay0: dict, video: dict | None) -> Result:
    """report.json and report.html of an eval; the command prints the mean with its interval and what it
    was measured on (the policy with its params, the env, the episodes)."""
    scores = [r["score"] for r in rows]
    dist = distribution(scores)
    numeric = [
        "steps",
        "reward_count",
        "paddle_abs_delta_mean",
        "paddle_abs_delta_max",
        "ball_abs_vx_mean",
        "ball_abs_vy_mean",
    ]
    numeric = [f for f in numeric if rows[0][f] is not None]  # a pixel episode has no ball or paddle features
    summarised = len(rows) > EMBED_EPISODES_MAX
    columns = {f: np.array([r[f] for r in rows], dtype=float) for f in numeric}
    env_name = "ALE Breakout" if config["env"] == "ale" else f"shadow Breakout ({config['preset']})"
    label = policy_label(config["policy"], config["params"])
    data = {
        "objective": {
            k: config[k]
            for k in (
                "command",
                "env",
                "policy",
                "params",
                "network",
                "episodes",
                "seed",
                "protocol",
                "preset",
                "shadow_overrides",
            )
            if k in config
        },
        "measured": {"policy": label, "env": env_name},
        "distribution": _summarised_distribution(dist, scores) if summarised else dist,
        "features": {
            "done_count": sum(1 for r in rows if r["done"]),
            "means": {f: float(np.mean(columns[f])) for f in numeric},
            "definitions": "see policylab/studies/breakout/episodes/features.py (one definition for both envs)",
        },
        **({"episodes_summary": _episodes_summary(rows, columns)} if summarised else {"episodes": rows}),
        "video": video,
        "evidence": {"store": config["store"], "provenance": versions()},
    }
    write_json(out / "report.json", data)
    figs = out / "figures"
    if len(rows) <= BAR_CHART_MAX:
        _scores_chart(rows, figs / "scores.png", config["env"])
        scores_caption = "Score per seed (line: mean)"
    else:
        _scores_histogram(scores, figs / "scores.png", config["env"], dist["mean"])
        scores_caption = f"Scores of all {len(rows):,} episodes (line: mean)"
    _episode_chart(replay0, figs / "episode0.png", rows[0])
    if summarised:
        summary = data["episodes_summary"]
        tables = [
            Table(f"Episodes: the first {len(summary['first'])}", EPISODE_COLUMNS, summary["first"]),
            Table(
                f"Episodes: the {len(summary['lowest_scores'])} lowest scores",
                EPISODE_COLUMNS,
                summary["lowest_scores"],
            ),
        ]
        notes = [
            "stdev is the population stdev, as in the original reports.",
            f"{len(rows):,} episodes: every row is in episodes.jsonl, every trajectory in the store "
            "(report.json holds a summary).",
        ]
    else:
        tables = [Table("Episodes", EPISODE_COLUMNS, rows)]
        notes = ["stdev is the population stdev, as in the original reports."]
    page = Page(
        title=f"{label} on {env_name}",
        subtitle=f"{len(rows)} episodes, seeds {rows[0]['seed']}..{rows[-1]['seed']}, protocol "
        + ", ".join(f"{k}={v}" for k, v in config["protocol"].items()),
        headline=[
            (f"{'ALE' if config['env'] == 'ale' else 'shadow'} mean score", dist["mean"]),
            ("95% CI of mean", dist["mean_ci95"]),
            ("median", dist["median"]),
            ("min / max", [dist["min"], dist["max"]]),
            (f"low scores (< {dist['low_score_threshold']:g})", dist["low_score_count"]),
            ("episodes done (lives out)", data["features"]["done_count"]),
        ],
        notes=notes,
        tables=tables,
        figures=[
            (scores_caption, "figures/scores.png"),
            (
                f"Episode 0 (seed {rows[0]['seed']}): "
                + ("ball and paddle" if "obs" in replay0 else "score and lives")
                + " over time",
                "figures/episode0.png",
            ),
        ],
        videos=[(f"Episode 0 (seed {video['seed']}), every {video['every_agent_steps']} agent steps", video["path"])]
        if video
        else [],
    )
    html = out / "report.html"
    render(html, page, data, "report.json")
    ci = dist["mean_ci95"]
    return Result(
        html,
        (
            f"{label} on {env_name}: mean score {dist['mean']:.2f}, 95% CI "
            + ("none from one episode" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]")
            + f" over {len(rows):,} episode{'s' if len(rows) != 1 else ''} (seeds "
            f"{rows[0]['seed']}..{rows[-1]['seed']})",
        ),
    )


def _quantiles(values: np.ndarray) -> dict:
    return {f"p{round(q * 100):02d}": float(v) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))}


def _summarised_distribution(dist: dict, scores: list[float]) -> dict:
    """`distribution` without its per-episode score list: quantiles and a histogram in its place."""
    x = np.asarray(scores, dtype=float)
    counts, edges = np.histogram(x, bins=HISTOGRAM_BINS)
    out = {k: v for k, v in dist.items() if k != "scores"}
    out["scores_omitted"] = f"more than {EMBED_EPISODES_MAX:,} episodes: every score is in episodes.jsonl"
    out["score_quantiles"] = _quantiles(x)
    out["score_histogram"] = {"bin_edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}
    return out


def _episodes_summary(rows: list[dict], columns: dict[str, np.ndarray]) -> dict:
    lowest = sorted(rows, key=lambda r: (r["score"], r["episode"]))[:SUMMARY_ROWS]
    return {
        "count": len(rows),
        "rows_in": "episodes.jsonl (one row per episode; its trajectory is the store record `key` names here)",
        "embedded_max": EMBED_EPISODES_MAX,
        "first": rows[:SUMMARY_ROWS],
        "lowest_scores": lowest,
        "feature_quantiles": {f: _quantiles(v) for f, v in columns.items()},
    }


def _scores_chart(rows: list[dict], path: Path, env: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3))
    seeds = [r["seed"] for r in rows]
    ax.bar(range(len(rows)), [r["score"] for r in rows], color=ALE_C if env == "ale" else SHADOW_C)
    ax.axhline(float(np.mean([r["score"] for r in rows])), color="k", lw=1)
    ax.set_xticks(range(len(rows)), [str(s) for s in seeds], fontsize=7)
    ax.set_xlabel("seed")
    ax.set_ylabel("score")
    save_png(fig, path)


def _scores_histogram(scores: list[float], path: Path, env: str, mean: float) -> None:
    fig, ax = plt.subplots(figsize=(7, 3))
    x = np.asarray(scores, dtype=float)
    bins = np.arange(np.floor(x.min()), np.ceil(x.max()) + 2) - 0.5 if x.max() - x.min() <= 60 else 40
    ax.hist(x, bins=bins, color=ALE_C if env == "ale" else SHADOW_C)
    ax.axvline(mean, color="k", lw=1)
    ax.set_xlabel("score")
    ax.set_ylabel("episodes")
    save_png(fig, path)


def _pixel_episode_chart(replay: dict, path: Path, row: dict) -> None:
    """A pixel episode's chart: its score and lives after each agent step (it records no features)."""
    reward = np.asarray(replay["reward"], dtype=float)
    t = np.arange(1, reward.size + 1)
    fig, ax = plt.subplots(figsize=(8, 2.8))
    ax.step(t, np.cumsum(reward), where="post", color="k", lw=0.8)
    ax.set_ylabel("score (black)")
    ax.set_xlabel("agent step")
    axb = ax.twinx()
    axb.step(t, np.asarray(replay["lives"], dtype=float)[1:], where="post", color="#55a868", lw=0.8)
    axb.set_ylabel("lives (green)", fontsize=7)
    fig.suptitle(f"seed {row['seed']}: score {row['score']:g}, {row['steps']} steps", fontsize=9)
    save_png(fig, path)


def _episode_chart(replay: dict, path: Path, row: dict) -> None:
    if "obs" not in replay:
        _pixel_episode_chart(replay, path, row)
        return
    obs = np.asarray(replay["obs"], dtype=float)[1:]
    t = np.arange(1, obs.shape[0] + 1)
    in_play = obs[:, F["ball_in_play"]] > 0
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 4.2), sharex=True)
    a1.plot(t, np.where(in_play, obs[:, F["ball_x"]], np.nan), lw=0.8, label="ball x", color="#c44e52")
    a1.plot(t, obs[:, F["paddle_x"]] + obs[:, F["paddle_width"]] / 2, lw=0.8, label="paddle centre", color="#4c72b0")
    a1.set_ylabel("x (px)")
    a1.legend(fontsize=7, loc="upper right")
    a2.plot(t, np.where(in_play, obs[:, F["ball_y"]], np.nan), lw=0.8, color="#c44e52", label="ball y")
    a2.invert_yaxis()
    a2.set_ylabel("y (px, down)")
    a2b = a2.twinx()
    a2b.step(t, obs[:, F["score"]], where="post", color="k", lw=0.8)
    a2b.step(t, obs[:, F["lives"]], where="post", color="#55a868", lw=0.8)
    a2b.set_ylabel("score (black), lives (green)", fontsize=7)
    a2.set_xlabel("agent step")
    fig.suptitle(f"seed {row['seed']}: score {row['score']:g}, {row['steps']} steps", fontsize=9)
    save_png(fig, path)
