"""The lockstep page and its frame strips (`policylab breakout lockstep`).

PNGs are written by Pillow without metadata, so the same frames give the same bytes."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from policylab.envs.breakout.contract import SCREEN_H, SCREEN_W
from policylab.report.html import Page, Table, render

GAP = 4  # px between frames and rows
ZOOM = 4  # the zoom row: a ZOOM_W x ZOOM_H window of each game, scaled ZOOM times, side by side
ZOOM_W, ZOOM_H = SCREEN_W // (2 * ZOOM), 30
MARK = np.array([255, 0, 255], dtype=np.uint8)
FIRST, OTHER, BG = (240, 200, 0), (110, 110, 110), (255, 255, 255)
BRICK_TOP, BRICK_LEFT, BRICK_W, BRICK_H = 57, 8, 8, 6  # ALE's wall (docs/breakout.md, presets)


def focus(first: dict) -> tuple[int, int]:
    """Screen (x, y) of what differed first: the ball (ALE's, or the shadow's when only it is in play), the
    paddle, the first differing brick, or the score line."""
    q, a, s = first["quantity"], first["ale_state"], first["shadow_state"]
    if q in ("in_play", "ball_x", "ball_y"):
        ball = a if a["in_play"] else s
        return int(ball["ball_x"] or 0) + 1, int(ball["ball_y"] or 0) + 2
    if q == "paddle_x":
        return a["paddle_x"] + 8, 191
    if q == "bricks" and first.get("cells"):
        r, c = first["cells"][0]
        return BRICK_LEFT + c * BRICK_W + BRICK_W // 2, BRICK_TOP + r * BRICK_H + BRICK_H // 2
    return SCREEN_W // 2, 10


def _zoom(screen: np.ndarray, x: int, y: int) -> np.ndarray:
    x0 = min(max(x - ZOOM_W // 2, 0), SCREEN_W - ZOOM_W)
    y0 = min(max(y - ZOOM_H // 2, 0), SCREEN_H - ZOOM_H)
    window = screen[y0 : y0 + ZOOM_H, x0 : x0 + ZOOM_W]
    return window.repeat(ZOOM, axis=0).repeat(ZOOM, axis=1)


def strip_image(frames: list[tuple[int, np.ndarray, np.ndarray]], first: dict) -> np.ndarray:
    """(H, W, 3) uint8: the strip of `frames` [(frame, ALE screen, shadow screen), ...] around `first`."""
    x, y = focus(first)
    columns = []
    for frame, ale, shadow in frames:
        h, w, _ = ale.shape
        differ = (ale != shadow).any(axis=2)
        marked = ale // 3
        marked[differ] = MARK
        bar = np.empty((GAP, w, 3), dtype=np.uint8)
        bar[:] = FIRST if frame == first["frame"] else OTHER
        gap = np.full((GAP, w, 3), BG, dtype=np.uint8)
        zoom = np.concatenate([_zoom(ale, x, y), _zoom(shadow, x, y)], axis=1)
        zoom[:, zoom.shape[1] // 2] = BG  # the seam between ALE and the shadow
        columns.append(np.concatenate([bar, gap, ale, gap, shadow, gap, marked, gap, zoom], axis=0))
    spacer = np.full((columns[0].shape[0], GAP, 3), BG, dtype=np.uint8)
    parts = []
    for k, col in enumerate(columns):
        parts += [spacer, col] if k else [col]
    return np.concatenate(parts, axis=1)


def strip_png(frames: list[tuple[int, np.ndarray, np.ndarray]], first: dict) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(strip_image(frames, first)).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def _value(d: dict | None, key: str):
    return None if d is None else d.get(key)


def write_report(out: Path, data: dict) -> Path:
    """report.html beside lockstep.json: headline, summary tables, the strips, every episode."""
    s = data["summary"]
    cfg = data["config"]
    med = s["median_first_divergence_frame"]
    headline = [
        ("episodes", s["episodes"]),
        ("identical to the end", f"{s['identical_to_end']} / {s['episodes']} ({s['identical_to_end_fraction']:.1%})"),
        ("median first divergence", "none" if med is None else f"frame {med:g}"),
        ("frames with identical screens", f"{s['screen_identical_fraction']:.1%}"),
    ]
    classes = [
        {
            "first differing quantity": q,
            "episodes": c["episodes"],
            "fraction": c["fraction"],
            "median first frame": c["median_first_frame"],
            "earliest": c["earliest_first_frame"],
        }
        for q, c in s["divergence_classes"].items()
    ]
    policies = [
        {
            "policy": k,
            "episodes": v["episodes"],
            "identical to the end": v["identical_to_end"],
            "median first divergence frame": v["median_first_divergence_frame"],
            "frames": v["frames"],
        }
        for k, v in s["by_policy"].items()
    ]
    bands = [
        {"screen rows": f"{b['first_row']}-{b['last_row']}", "frames (most in one row)": b["frames_max"]}
        for b in s["screen_difference_bands"]
    ]
    episodes = [
        {
            "episode": r["episode"],
            "seed": r["seed"],
            "policy": r["policy"],
            "frames": r["frames"],
            "identical to the end": r["identical_to_end"],
            "first divergence": _value(r["first_divergence"], "frame"),
            "quantity": _value(r["first_divergence"], "quantity"),
            "ALE": str(_value(r["first_divergence"], "ale")),
            "shadow": str(_value(r["first_divergence"], "shadow")),
            "identical screens": r["screen_identical_frames"],
            "ALE score": r["ale_score"],
            "shadow score": r["shadow_score"],
        }
        for r in data["episodes"]
    ]
    figures = []
    for st in data["strips"]:
        d = st["first_divergence"]
        figures.append(
            (
                f"Episode {st['episode']} (seed {st['seed']}, {st['policy']}): first divergence at frame "
                f"{d['frame']}, {d['quantity']} ALE {d['ale']} vs shadow {d['shadow']}. Frames "
                f"{st['frames'][0]}-{st['frames'][-1]} left to right (yellow bar: the first divergence); "
                "rows: ALE, shadow, pixels that differ (magenta), 4x zoom of ALE | shadow around "
                f"({', '.join(map(str, focus(d)))})",
                st["file"],
            )
        )
    page = Page(
        title=f"Breakout lockstep: ALE vs shadow preset {cfg['preset']}",
        subtitle=(
            f"{s['episodes']} episodes of up to {cfg['max_steps']} agent steps x {cfg['frameskip']} frames, "
            f"sticky {cfg['sticky']} decided once per frame for both games, policies "
            f"{', '.join(cfg['policy'])}, seeds from {cfg['seed']}"
        ),
        headline=headline,
        notes=[data["method"]["first_divergence_rule"]],
        tables=[
            Table(
                "Divergence classes (the first quantity that differed)",
                ["first differing quantity", "episodes", "fraction", "median first frame", "earliest"],
                classes,
            ),
            Table(
                "By policy",
                ["policy", "episodes", "identical to the end", "median first divergence frame", "frames"],
                policies,
            ),
            Table("Screen rows that differed", ["screen rows", "frames (most in one row)"], bands),
            Table("Episodes", list(episodes[0]), episodes),
        ],
        figures=figures,
    )
    path = out / "report.html"
    render(
        path, page, {k: data[k] for k in ("summary", "config", "method", "pick", "strips")}, json_name="lockstep.json"
    )
    return path
