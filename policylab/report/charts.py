"""Matplotlib on the Agg backend, with PNGs that are byte-identical for identical data."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from policylab.fileio import atomic_write_bytes  # noqa: E402


def save_png(fig: "plt.Figure", path: str | Path, dpi: int = 110) -> None:
    """Save without the 'Software' metadata stamp and close the figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


__all__ = ["plt", "save_png"]
