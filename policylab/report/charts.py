"""Matplotlib on the Agg backend, with PNGs that are byte-identical for identical data."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from policylab.fileio import atomic_write_bytes


def save_png(fig: plt.Figure, path: str | Path, dpi: int = 110) -> None:
    """Save without the 'Software' metadata stamp and close the figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def learning_curves(curves: dict, timing: dict, panels, path: str | Path, color: str) -> None:
    """A learner's curves, one panel per (key, title) of `panels` against agent steps (millions); the key
    ``steps_per_s`` draws the wall-clock rate of `timing` (a learner's timing.json). None values are gaps."""
    import numpy as np

    rows = (len(panels) + 2) // 3
    fig, axes = plt.subplots(rows, 3, figsize=(12, 3 * rows))
    steps = np.asarray(curves["agent_steps"], dtype=float) / 1e6
    for ax, (key, label) in zip(axes.ravel(), panels):
        if key == "steps_per_s":
            x = np.asarray(timing["updates"], dtype=int)
            ax.plot(steps[x - 1] if len(x) else [], timing["steps_per_s"], color=color, lw=1)
        else:
            ax.plot(steps, [np.nan if v is None else v for v in curves[key]], color=color, lw=1)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("agent steps (millions)", fontsize=8)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    save_png(fig, path)


__all__ = ["learning_curves", "plt", "save_png"]
