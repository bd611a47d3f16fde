"""The six charts of the post, plus the slow seed and the walkthrough's weight change, in its house style.

200 dpi on a fixed canvas; PNGs carry no timestamp or software stamp, so identical data gives identical bytes."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from matplotlib import font_manager
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.path import Path as BezierPath

from policylab.fileio import atomic_write_bytes
from policylab.report.charts import plt
from policylab.studies.lava_leap.floor import EXIT, FLOOR

TEAL, BLUE, GRAY, CEIL = "#2D7A6E", "#5A82B5", "#94A3B8", "#475569"
LAVA, SAFE, SOFT, INK, MUTED = "#C06A5A", "#E2E8F0", "#D3E8E3", "#0F172A", "#64748B"
COLOR = {"grpo": TEAL, "ppo": BLUE, "reinforce": GRAY}
NAME = {"grpo": "GRPO", "ppo": "PPO", "reinforce": "REINFORCE"}
ALGOS = ("reinforce", "ppo", "grpo")
DPI = 200
PATTERN_NAME = {
    0b000: "no lava in view",
    0b001: "lava 3 ahead",
    0b010: "lava 2 ahead",
    0b011: "2-wide lava, 2 ahead",
    0b100: "lava directly ahead",
    0b110: "2-wide lava, directly ahead",
    0b101: "two channels, one tile apart",
    0b111: "a 3-wide channel",
}
NEVER = (0b101, 0b111)
FILES = {
    "e1": "e1-before-after.png",
    "e2": "e2-training-curves.png",
    "e3a": "e3a-group-advantage.png",
    "e3b": "e3b-critic-blindspot.png",
    "e4": "e4-ratio-spread.png",
    "e5": "e5-policy-learned.png",
    "slow": "e2b-slow-seed.png",
    "walk": "e4b-update-weights.png",
}
OCCURRING = (0b100, 0b110, 0b000, 0b001, 0b010, 0b011)
ROW_NAMES = ("lava +1", "lava +2", "lava +3", "bias")
TILE_TICKS = [0, 5, 10, 15, 20, 25, 30, 35, 39]


def _families() -> list[str]:
    """Noto Sans where installed, else DejaVu Sans (listing a missing family only adds warnings)."""
    have = {f.name for f in font_manager.fontManager.ttflist}
    return [f for f in ("Noto Sans", "DejaVu Sans") if f in have] or ["DejaVu Sans"]


def style() -> dict:
    return {
        "font.family": _families(),
        "figure.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.facecolor": "white",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.edgecolor": MUTED,
        "axes.linewidth": 0.8,
        "axes.grid": True,
        "grid.color": INK,
        "grid.alpha": 0.15,
        "grid.linewidth": 0.8,
        "axes.titlesize": 15,
        "axes.titleweight": "bold",
        "axes.titlecolor": INK,
        "axes.titlelocation": "left",
        "axes.titlepad": 12,
        "axes.labelsize": 12,
        "axes.labelcolor": INK,
        "xtick.labelsize": 11,
        "ytick.labelsize": 11,
        "xtick.color": MUTED,
        "ytick.color": MUTED,
        "xtick.major.size": 0,
        "ytick.major.size": 0,
        "xtick.major.pad": 6,
        "ytick.major.pad": 6,
        "text.color": INK,
        "legend.frameon": False,
        "legend.fontsize": 10,
    }


def header(fig, title: str, subtitle: str, x: float = 0.06, y: float = 0.965) -> None:
    """Left-aligned takeaway title plus a muted one-line subtitle, in figure coordinates.

    Titles are computed from data, so a long one is set smaller until it fits the canvas.
    """
    title_text = fig.text(x, y, title, fontsize=15, fontweight="bold", color=INK, ha="left", va="top")
    sub_text = fig.text(x, y - 0.068, subtitle, fontsize=10.5, color=MUTED, ha="left", va="top")
    renderer = fig.canvas.get_renderer()
    room = fig.bbox.width * (0.99 - x)
    for text in (title_text, sub_text):
        while text.get_window_extent(renderer).width > room and text.get_fontsize() > 8:
            text.set_fontsize(text.get_fontsize() - 0.5)


def spread(ys: list[float], gap: float) -> list[float]:
    """Label positions nudged apart (upwards, in order) so no two are closer than `gap`."""
    order = sorted(range(len(ys)), key=lambda i: (ys[i], i))
    out = list(ys)
    for lo, hi in zip(order, order[1:]):
        if out[hi] - out[lo] < gap:
            out[hi] = out[lo] + gap
    return out


def save(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def draw_floor(ax, lava, y, h=0.36, w=0.84) -> None:
    for t in range(FLOOR):
        ax.add_patch(Rectangle((t - w / 2, y - h / 2), w, h, lw=0, color=LAVA if lava[t] else SAFE, zorder=1))


def draw_hops(ax, path, y, color, lw=1.3) -> None:
    """One arc per move: low for a STEP, taller for a LEAP."""
    for a, b in zip(path[:-1], path[1:]):
        lift = 0.16 + 0.11 * (b - a)
        verts = [(a, y + 0.2), ((a + b) / 2, y + 0.2 + 2 * lift), (b, y + 0.2)]
        codes = [BezierPath.MOVETO, BezierPath.CURVE3, BezierPath.CURVE3]
        ax.add_patch(PathPatch(BezierPath(verts, codes), fill=False, ec=color, lw=lw, capstyle="round", zorder=3))


def bare_axes(ax) -> None:
    ax.set_yticks([])
    ax.grid(False)
    ax.spines["left"].set_visible(False)
    ax.spines["bottom"].set_visible(False)


def draw_e1(path, lava, before, after, title, rounds) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(9.5, 4.6), sharex=True)
    fig.subplots_adjust(left=0.06, right=0.885, top=0.77, bottom=0.13, hspace=0.5)
    panels = [
        (axes[0], before, MUTED, "Untrained (all eight weights zero)"),
        (axes[1], after, TEAL, f"Trained with GRPO ({rounds} updates)"),
    ]
    for ax, runs, color, label in panels:
        n_exit = sum(run.reward == 1.0 for run in runs)
        for i, run in enumerate(runs):
            y = len(runs) - 1 - i
            draw_floor(ax, lava, y)
            draw_hops(ax, run.path, y, color)
            if run.reward == 1.0:
                ax.scatter([EXIT], [y], s=46, color=TEAL, edgecolor="white", lw=1.2, zorder=5)
                ax.text(40.4, y, "exit", va="center", fontsize=10, color=INK, fontweight="bold")
            else:
                ax.scatter([run.path[-1]], [y], marker="x", s=34, color=INK, lw=1.8, zorder=5)
                ax.text(40.4, y, f"fell at {run.path[-1]}", va="center", fontsize=10, color=MUTED)
        ax.set_title(
            f"{label}: reached the exit {n_exit} of {len(runs)}", fontsize=11.5, fontweight="bold", pad=4, color=INK
        )
        ax.set_ylim(-0.6, len(runs) - 0.25)
        ax.set_xlim(-0.8, 39.8)
        bare_axes(ax)
    axes[1].set_xticks(TILE_TICKS)
    axes[1].set_xlabel("Tile (start = 0, exit dock = 39)", fontsize=11)
    header(
        fig,
        title,
        f"The same floor, played {len(before)} times by each bot. Low arcs are steps, "
        "tall arcs are leaps; red tiles are lava.",
    )
    save(fig, path)


def draw_e2(path, updates, curves, ceiling, untrained, n_seeds, G, title) -> None:
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    fig.subplots_adjust(left=0.09, right=0.80, top=0.80, bottom=0.14)
    finals = {}
    for algo in ALGOS:
        Y = np.array(curves[algo])
        for y in Y:
            ax.plot(updates, y, color=COLOR[algo], lw=0.8, alpha=0.3, zorder=2)
        mean = Y.mean(axis=0)
        ax.plot(updates, mean, color=COLOR[algo], lw=2.8 if algo == "grpo" else 2.0, zorder=3, solid_capstyle="round")
        ax.scatter([updates[-1]], [mean[-1]], s=30, color=COLOR[algo], zorder=4)
        finals[algo] = mean[-1]
    ax.axhline(ceiling, color=CEIL, lw=1.4, ls=(0, (5, 4)), zorder=1)
    names = [*ALGOS, "ceiling"]  # direct labels, nudged apart where they would collide
    label_y = dict(zip(names, spread([*finals.values(), ceiling], 0.024)))
    dx = updates[-1] * 7 / 300
    for algo in ALGOS:
        ax.text(
            updates[-1] + dx,
            label_y[algo],
            f"{NAME[algo]} {finals[algo]:.3f}",
            va="center",
            fontsize=11,
            color=INK,
            fontweight="bold" if algo == "grpo" else "normal",
            clip_on=False,
        )
    ax.text(
        updates[-1] + dx,
        label_y["ceiling"],
        f"Best possible {ceiling:.3f}",
        va="center",
        fontsize=11,
        color=CEIL,
        clip_on=False,
    )
    ax.annotate(
        f"untrained {untrained:.3f}",
        xy=(0, untrained),
        xytext=(updates[-1] * 14 / 300, untrained - 0.03),
        fontsize=10,
        color=MUTED,
        arrowprops=dict(arrowstyle="-", color=MUTED, lw=0.8),
    )
    ax.set_xlim(0, updates[-1])
    ax.set_ylim(0.24, 0.6)
    ax.set_xlabel(f"Training updates (each: one new floor, played {G} times)")
    ax.set_ylabel("Mean score, 200 test floors")
    header(
        fig,
        title,
        f"Thick lines: mean of {n_seeds} training seeds; thin lines: each seed. "
        "Dashed: the best of all 256 fixed policies.",
        x=0.09,
    )
    save(fig, path)


def draw_e3a(path, runs, r, adv, title) -> None:
    order = sorted(range(len(runs)), key=lambda i: (r[i], i))
    mean, std = r.mean(), r.std()
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    fig.subplots_adjust(left=0.09, right=0.855, top=0.79, bottom=0.17)
    ax.axhspan(mean - std, mean + std, color=SOFT, lw=0, zorder=0)
    ax.axhline(mean, color=INK, lw=1.2, zorder=2)
    x = np.arange(len(runs))
    ax.bar(x, r[order], width=0.62, color=[TEAL if adv[i] > 0 else LAVA for i in order], zorder=3)
    for xi, i in zip(x, order):
        ax.text(
            xi,
            r[i] + 0.025,
            f"{adv[i]:+.2f}",
            ha="center",
            va="bottom",
            fontsize=11,
            color=INK,
            fontweight="bold" if adv[i] > 0 else "normal",
            zorder=4,
            bbox=dict(boxstyle="square,pad=0.15", fc="white", ec="none"),
        )
    ax.set_xticks(x, [f"run {i + 1}\ntile {runs[i].path[-1]}" for i in order])
    right = len(runs) - 0.45
    ax.text(right, mean, f"group mean {mean:.2f}", va="center", fontsize=10.5, color=INK, clip_on=False)
    ax.text(right, mean + std, f"+1 std {mean + std:.2f}", va="center", fontsize=10, color=MUTED, clip_on=False)
    ax.text(right, mean - std, f"-1 std {mean - std:.2f}", va="center", fontsize=10, color=MUTED, clip_on=False)
    ax.set_xlim(-0.6, len(runs) - 0.5)
    ax.set_ylim(0, max(r) + 0.16)
    ax.set_ylabel("Score r = final tile / 39")
    ax.grid(axis="x", visible=False)
    died = all(run.reward < 1 for run in runs)
    header(
        fig,
        title,
        f"One hard floor, {len(runs)} runs{', every one ended in lava' if died else ''}. "
        "Above each bar: its advantage, (r - mean) / std.",
        x=0.09,
    )
    save(fig, path)


def draw_e3b(path, easy, hard, easy_runs, hard_runs, forecast, title) -> None:
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    fig.subplots_adjust(left=0.18, right=0.97, top=0.78, bottom=0.14)
    for y0, lava, runs, label in [(2.25, easy, easy_runs, "Easy floor"), (0.0, hard, hard_runs, "Hard floor")]:
        draw_floor(ax, lava, y0, h=0.3)
        ends = [int(run.path[-1]) for run in runs]
        tallest = max(ends.count(e) for e in ends)
        rise = min(0.2, 1.0 / max(1, tallest - 1))  # stacks of equal end tiles stay inside the panel
        stack: dict[int, int] = {}
        for e in sorted(ends):
            k = stack.get(e, 0)
            stack[e] = k + 1
            ax.scatter([e], [y0 + 0.36 + rise * k], s=36, color=INK, edgecolor="white", lw=1.0, zorder=5)
        mean_tile = np.mean([run.reward for run in runs]) * EXIT
        ax.scatter([mean_tile], [y0 - 0.34], marker="^", s=70, color=TEAL, zorder=5, clip_on=False)
        right = mean_tile < 0.75 * EXIT  # near the dock the label goes on the triangle's left
        ax.text(
            mean_tile + (0.6 if right else -0.6),
            y0 - 0.36,
            f"group mean {mean_tile / EXIT:.2f}",
            fontsize=10.5,
            color=INK,
            va="center",
            ha="left" if right else "right",
        )
        ax.text(-1.4, y0 + 0.12, label, ha="right", va="center", fontsize=12, fontweight="bold", color=INK)
        ax.text(
            -1.4,
            y0 - 0.2,
            f"scores {min(ends) / EXIT:.2f} to {max(ends) / EXIT:.2f}",
            ha="right",
            va="center",
            fontsize=10,
            color=MUTED,
        )
    xf = forecast * EXIT
    ax.plot([xf, xf], [-0.55, 3.55], color=BLUE, lw=1.6, ls=(0, (4, 3)), zorder=2)
    ax.text(
        xf - 0.5,
        3.55,
        f"PPO critic's forecast from the start line: {forecast:.2f}",
        fontsize=10.5,
        color=INK,
        va="center",
        ha="right",
    )
    ax.text(xf - 0.5, 3.25, "(the same number for every floor)", fontsize=10, color=MUTED, va="center", ha="right")
    ax.set_xlim(-0.8, 39.8)
    ax.set_ylim(-0.62, 3.7)
    bare_axes(ax)
    ax.set_xticks(TILE_TICKS)
    ax.set_xlabel("Final tile of each run (score = tile / 39)", fontsize=11)
    header(
        fig,
        title,
        f"The trained PPO bot plays each floor {len(easy_runs)} times; each dot is where a "
        "run ended. Both floors look the same from the start.",
        x=0.035,
    )
    save(fig, path)


def draw_e4(path, trace, A, labels, eps, title) -> None:
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    fig.subplots_adjust(left=0.09, right=0.79, top=0.79, bottom=0.11)
    ax.axhspan(1 - eps, 1 + eps, color=SOFT, lw=0, zorder=0)
    jitter = np.random.default_rng(0).uniform(-0.22, 0.22, len(A))
    sign_color = np.array([TEAL if a > 0 else LAVA for a in A])
    for k, p in enumerate(trace):
        x = k + 1 + jitter
        free, cut = ~p["clipped"], p["clipped"]
        ax.scatter(x[free], p["rho"][free], s=18, lw=0, alpha=0.85, zorder=3, color=sign_color[free])
        ax.scatter(x[cut], p["rho"][cut], s=72, facecolor="white", edgecolor=sign_color[cut], lw=2.0, zorder=4)
    n = len(trace)
    lo = min(p["rho"].min() for p in trace)
    hi = max(p["rho"].max() for p in trace)
    ylim = (min(1 - eps - 0.04, lo - 0.03), max(1 + eps + 0.04, hi + 0.03))
    at = spread([trace[k]["rho"][j] for _, (k, j) in labels], 0.07 * (ylim[1] - ylim[0]))
    for (text, (k, j)), y in zip(labels, at):
        ax.annotate(
            text,
            xy=(k + 1 + jitter[j], trace[k]["rho"][j]),
            xytext=(n + 0.5, y),
            fontsize=10,
            color=INK,
            va="center",
            annotation_clip=False,
            arrowprops=dict(arrowstyle="-", color=MUTED, lw=0.8, shrinkA=0, shrinkB=6),
        )
    ax.text(0.53, 1 + eps + 0.008, f"clip band: {1 - eps:.1f} to {1 + eps:.1f}", fontsize=10, color=TEAL, va="bottom")
    ax.set_xticks(range(1, n + 1), [f"pass {k}" for k in range(1, n + 1)])
    ax.set_xlim(0.5, n + 0.4)
    ax.set_ylim(*ylim)
    ax.set_ylabel("ratio π_new(a|s) / π_old(a|s)")
    ax.grid(axis="x", visible=False)
    header(
        fig,
        title,
        f"Each dot is one of the group's {len(A)} steps. Teal: its run beat the group mean; "
        "red: fell short. Rings: clipped, no push.",
        x=0.09,
    )
    save(fig, path)


def draw_e5(path, before, after, rounds, title) -> None:
    """`after`: one leap table per GRPO seed; bars are their mean, dots each seed."""
    order = [0b100, 0b110, 0b000, 0b001, 0b010, 0b011, 0b101, 0b111]
    tables = np.atleast_2d(np.asarray(after, dtype=float))
    mean = tables.mean(axis=0)
    fig, ax = plt.subplots(figsize=(9.5, 4.6))
    fig.subplots_adjust(left=0.40, right=0.93, top=0.78, bottom=0.12)
    ys = np.arange(len(order))[::-1].astype(float)
    ys[-2:] -= 0.5  # set the impossible patterns apart
    for y, b in zip(ys, order):
        never = b in NEVER
        ax.barh(y + 0.17, before[b], height=0.3, color=SAFE, zorder=2)
        ax.barh(y - 0.17, mean[b], height=0.3, color=GRAY if never else TEAL, zorder=2)
        if len(tables) > 1:
            ax.scatter(tables[:, b], np.full(len(tables), y - 0.17), s=14, color=INK, lw=0, alpha=0.8, zorder=3)
        right = max(mean[b], tables[:, b].max())
        ax.text(
            right + 0.012,
            y - 0.17,
            f"{mean[b]:.3f}",
            va="center",
            fontsize=10.5,
            color=MUTED if never else INK,
            fontweight="normal" if never else "bold",
        )
        for j in range(3):  # the three sensor tiles, drawn as tiles
            ax.scatter(
                [-0.15 + 0.04 * j],
                [y],
                marker="s",
                s=110,
                clip_on=False,
                zorder=4,
                color=LAVA if (b >> (2 - j)) & 1 else SAFE,
                transform=ax.get_yaxis_transform(),
            )
        ax.text(
            -0.19,
            y,
            PATTERN_NAME[b],
            ha="right",
            va="center",
            fontsize=11,
            color=MUTED if never else INK,
            transform=ax.get_yaxis_transform(),
        )
    ax.text(
        before[0b100],
        ys[0] + 0.5,
        f"{before[0b100]:.1f} before training, for every pattern",
        ha="center",
        va="center",
        fontsize=10,
        color=MUTED,
    )
    ax.text(
        -0.19,
        (ys[-3] + ys[-2]) / 2,
        "never occur on a real floor:",
        ha="right",
        va="center",
        fontsize=10,
        color=MUTED,
        style="italic",
        transform=ax.get_yaxis_transform(),
    )
    ax.set_yticks([])
    ax.set_xlim(0, 1.08)
    ax.set_ylim(ys[-1] - 0.55, ys[0] + 0.85)
    ax.set_xlabel("P(LEAP): probability the bot leaps on this pattern", fontsize=11)
    ax.grid(axis="y", visible=False)
    ax.spines["left"].set_visible(False)
    ax.text(
        -0.11,
        ys[0] + 0.62,
        "+1 +2 +3",
        ha="center",
        va="center",
        fontsize=9.5,
        color=MUTED,
        transform=ax.get_yaxis_transform(),
    )
    seeds_note = f"teal: mean of {len(tables)} GRPO seeds, dots: each seed" if len(tables) > 1 else "teal"
    header(
        fig,
        title,
        f"Leap probability for each of the 8 sensor patterns: before training (light bars) and after "
        f"{rounds} GRPO updates ({seeds_note}).",
        x=0.035,
    )
    save(fig, path)


def draw_slow(path, updates, curves, seeds, slow, window, plateau, title) -> None:
    """Every GRPO seed's curve, the slow one thick, the window a plateau would have to sit in shaded,
    and the slow seed's plateau (updates (start, end), or None where it has none) marked."""
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    fig.subplots_adjust(left=0.09, right=0.82, top=0.79, bottom=0.14)
    ax.axvspan(window[0], window[1], color=SOFT, lw=0, zorder=0)
    for i, c in enumerate(curves):
        if i != slow:
            ax.plot(updates, c, color=GRAY, lw=1.0, alpha=0.7, zorder=2)
    ax.plot(updates, curves[slow], color=TEAL, lw=2.6, zorder=3)
    if plateau is not None:  # the slow seed's plateau, where there is one
        ax.axvspan(plateau[0], plateau[1], color=TEAL, alpha=0.18, lw=0, zorder=1)
        ax.text(
            (plateau[0] + plateau[1]) / 2,
            0.97,
            "plateau",
            ha="center",
            va="top",
            fontsize=9.5,
            color=TEAL,
            transform=ax.get_xaxis_transform(),
        )
    dx = updates[-1] * 0.015
    ax.text(
        updates[-1] + dx,
        curves[slow][-1],
        f"seed {seeds[slow]} {curves[slow][-1]:.3f}",
        va="center",
        fontsize=10.5,
        color=INK,
        fontweight="bold",
        clip_on=False,
    )
    if len(curves) > 1:
        others = [c[-1] for i, c in enumerate(curves) if i != slow]
        ax.text(
            updates[-1] + dx,
            ax.get_ylim()[0] + 0.1 * (ax.get_ylim()[1] - ax.get_ylim()[0]),
            f"grey: the other\n{len(others)} seeds, final\n{min(others):.3f} to {max(others):.3f}",
            va="bottom",
            fontsize=9.5,
            color=MUTED,
            clip_on=False,
        )
    ax.text(
        window[0] + 2,
        0.03,
        f"updates {window[0]}-{window[1]}",
        fontsize=9.5,
        color=TEAL,
        va="bottom",
        transform=ax.get_xaxis_transform(),
    )
    ax.set_xlim(0, updates[-1])
    ax.set_xlabel("Training updates")
    ax.set_ylabel("Mean score, 200 test floors")
    header(
        fig,
        title,
        f"GRPO, every training seed; thick: seed {seeds[slow]}, the lowest at update 100. "
        "Shaded: where a plateau would have to sit.",
        x=0.09,
    )
    save(fig, path)


def draw_walk(path, walk, title) -> None:
    """The walkthrough's update in two panels: P(LEAP) per occurring pattern before each pass and
    after the last, and the change of every weight (W after - W before) as a small annotated grid."""
    passes = walk["passes"]
    stages = [p["leap_table"] for p in passes] + [walk["leap_table_final"]]
    labels = ["start"] + [f"after {p['k']}" for p in passes]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.5, 4.4), gridspec_kw=dict(width_ratios=[1.6, 1]))
    fig.subplots_adjust(left=0.08, right=0.97, top=0.79, bottom=0.14, wspace=0.55)
    x = np.arange(len(stages))
    moved = sorted(OCCURRING, key=lambda b: -abs(stages[-1][b] - stages[0][b]))[:3]
    ends = [stages[-1][b] for b in OCCURRING]
    for b, y_label in zip(OCCURRING, spread(ends, 0.045)):
        y = [st[b] for st in stages]
        strong = b in moved
        ax.plot(x, y, color=TEAL if strong else GRAY, lw=2.0 if strong else 1.0, marker="o", ms=3.5, zorder=3)
        ax.text(x[-1] + 0.12, y_label, f"{b:03b}", va="center", fontsize=9.5, color=INK if strong else MUTED)
    ax.set_xticks(x, labels, fontsize=9.5)
    ax.set_xlim(-0.2, x[-1] + 0.6)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("GRPO pass")
    ax.set_ylabel("P(LEAP) on the pattern")
    W0 = np.asarray(walk["policy"]["W"], dtype=float)
    W1 = np.asarray(walk["W_final"], dtype=float)
    dW = W1 - W0
    lim = max(float(np.abs(dW).max()), 1e-9)
    ax2.imshow(dW, cmap="BrBG", vmin=-lim, vmax=lim, aspect="auto")
    for i in range(dW.shape[0]):
        for j in range(dW.shape[1]):
            dark = abs(dW[i, j]) > 0.55 * lim
            ax2.text(j, i, f"{dW[i, j]:+.3f}", ha="center", va="center", fontsize=10, color="white" if dark else INK)
    ax2.set_xticks([0, 1], ["STEP", "LEAP"])
    ax2.set_yticks(range(4), ROW_NAMES)
    ax2.grid(False)
    ax2.set_title("change of each weight", fontsize=10.5, color=INK, loc="left", pad=6)
    header(
        fig,
        title,
        f"Left: the six patterns that occur; the three that moved most in teal. Right: W after "
        f"minus W before, {len(passes)} passes at lr {walk['hyper']['lr']}.",
        x=0.08,
    )
    save(fig, path)


DRAW = {
    "e1": draw_e1,
    "e2": draw_e2,
    "e3a": draw_e3a,
    "e3b": draw_e3b,
    "e4": draw_e4,
    "e5": draw_e5,
    "slow": draw_slow,
    "walk": draw_walk,
}


def draw_all(charts: dict, assets: Path) -> list[Path]:
    """Draw every chart into `assets`; returns the paths in chart order."""
    out = []
    with plt.rc_context(style()):
        for name, draw in DRAW.items():
            path = Path(assets) / FILES[name]
            draw(path, **charts[name])
            out.append(path)
    return out
