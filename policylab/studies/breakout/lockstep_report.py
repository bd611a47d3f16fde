"""The lockstep page and its frame strips (`policylab breakout lockstep`).

A strip shows the frames around one episode's first divergence: one column per frame (the first
divergence's column is marked by a yellow bar on top), rows ALE, shadow, and ALE dimmed with every
pixel whose colour differs from the shadow's in magenta. PNGs are written by Pillow without
metadata, so the same frames give the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from policylab.report.html import Page, Table, render

GAP = 4  # px between frames and rows
MARK = np.array([255, 0, 255], dtype=np.uint8)
FIRST, OTHER, BG = (240, 200, 0), (110, 110, 110), (255, 255, 255)


def strip_image(frames: list[tuple[int, np.ndarray, np.ndarray]], first_frame: int) -> np.ndarray:
    """(H, W, 3) uint8: the strip of `frames` [(frame, ALE screen, shadow screen), ...]."""
    columns = []
    for frame, ale, shadow in frames:
        h, w, _ = ale.shape
        differ = (ale != shadow).any(axis=2)
        marked = ale // 3
        marked[differ] = MARK
        bar = np.empty((GAP, w, 3), dtype=np.uint8)
        bar[:] = FIRST if frame == first_frame else OTHER
        gap = np.full((GAP, w, 3), BG, dtype=np.uint8)
        columns.append(np.concatenate([bar, gap, ale, gap, shadow, gap, marked], axis=0))
    spacer = np.full((columns[0].shape[0], GAP, 3), BG, dtype=np.uint8)
    parts = []
    for k, col in enumerate(columns):
        parts += [spacer, col] if k else [col]
    return np.concatenate(parts, axis=1)


def strip_png(frames: list[tuple[int, np.ndarray, np.ndarray]], first_frame: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(strip_image(frames, first_frame)).save(buf, format="PNG", optimize=False)
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
    classes = [{"first differing quantity": q, "episodes": c["episodes"], "fraction": c["fraction"],
                "median first frame": c["median_first_frame"], "earliest": c["earliest_first_frame"]}
               for q, c in s["divergence_classes"].items()]
    policies = [{"policy": k, "episodes": v["episodes"], "identical to the end": v["identical_to_end"],
                 "median first divergence frame": v["median_first_divergence_frame"], "frames": v["frames"]}
                for k, v in s["by_policy"].items()]
    bands = [{"screen rows": f"{b['first_row']}-{b['last_row']}", "frames (most in one row)": b["frames_max"]}
             for b in s["screen_difference_bands"]]
    episodes = [{"episode": r["episode"], "seed": r["seed"], "policy": r["policy"], "frames": r["frames"],
                 "identical to the end": r["identical_to_end"],
                 "first divergence": _value(r["first_divergence"], "frame"),
                 "quantity": _value(r["first_divergence"], "quantity"),
                 "ALE": str(_value(r["first_divergence"], "ale")), "shadow": str(_value(r["first_divergence"], "shadow")),
                 "identical screens": r["screen_identical_frames"], "ALE score": r["ale_score"],
                 "shadow score": r["shadow_score"]} for r in data["episodes"]]
    figures = []
    for st in data["strips"]:
        d = st["first_divergence"]
        figures.append((f"Episode {st['episode']} (seed {st['seed']}, {st['policy']}): first divergence at frame "
                        f"{d['frame']}, {d['quantity']} ALE {d['ale']} vs shadow {d['shadow']}. Frames "
                        f"{st['frames'][0]}-{st['frames'][-1]} left to right (yellow bar: the first divergence); "
                        "rows: ALE, shadow, pixels that differ (magenta)", st["file"]))
    page = Page(
        title=f"Breakout lockstep: ALE vs shadow preset {cfg['preset']}",
        subtitle=(f"{s['episodes']} episodes of up to {cfg['max_steps']} agent steps x {cfg['frameskip']} frames, "
                  f"sticky {cfg['sticky']} decided once per frame for both games, policies "
                  f"{', '.join(cfg['policy'])}, seeds from {cfg['seed']}"),
        headline=headline,
        notes=[data["method"]["first_divergence_rule"]],
        tables=[Table("Divergence classes (the first quantity that differed)",
                      ["first differing quantity", "episodes", "fraction", "median first frame", "earliest"], classes),
                Table("By policy", ["policy", "episodes", "identical to the end", "median first divergence frame",
                                    "frames"], policies),
                Table("Screen rows that differed", ["screen rows", "frames (most in one row)"], bands),
                Table("Episodes", list(episodes[0]), episodes)],
        figures=figures,
    )
    path = out / "report.html"
    render(path, page, {k: data[k] for k in ("summary", "config", "method", "pick", "strips")},
           json_name="lockstep.json")
    return path
