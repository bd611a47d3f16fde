"""mp4 writing (imageio-ffmpeg, libx264). Frames keep their size: macro_block_size=1."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import imageio.v3 as iio
import numpy as np


def write_mp4(path: str | Path, frames: np.ndarray, fps: int = 30, preset: str | None = None) -> None:
    """Write uint8 frames (T, H, W, 3) to `path` atomically, mode 0644 like every other output
    (`fileio.atomic_write_bytes`): mkstemp's temporary file is 0600, and the rename keeps its mode.

    Odd frame sizes are padded by one black row/column, since H.264 with yuv420p needs even sizes.
    `preset` is libx264's speed preset (None: its default, medium; "ultrafast" encodes a boundary clip
    about 10x faster for a larger file).
    """
    frames = np.asarray(frames, dtype=np.uint8)
    t, h, w, _ = frames.shape
    if h % 2 or w % 2:
        frames = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".mp4")
    try:
        try:
            os.fchmod(fd, 0o644)  # whatever the umask: outputs are meant to be read and served
        finally:
            os.close(fd)
        extra = {} if preset is None else {"output_params": ["-preset", preset]}
        iio.imwrite(
            tmp, frames, fps=fps, codec="libx264", macro_block_size=1, pixelformat="yuv420p", plugin="FFMPEG", **extra
        )
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_mp4(path: str | Path) -> np.ndarray:
    return iio.imread(path, plugin="FFMPEG")
