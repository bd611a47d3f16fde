"""Broken and misfitting linear-policy files (for the Ant's sizes, 27 -> 8), with the words of the one-line
error each must produce: the policy loader's tests and the boundary commands' front-door tests share them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from policylab.policies import linear
from policylab.studies.boundary.constants import CHECKPOINT_DIR


def _policy(weights, mean=None, std=None):
    return linear.LinearPolicy(
        np.asarray(weights, dtype=float), np.zeros(27) if mean is None else mean, np.ones(27) if std is None else std
    )


def write_bad_policy_files(d: Path) -> dict[str, tuple]:
    """Write the files into folder `d`; name -> (path or checkpoint name, words in the error line)."""
    good = (CHECKPOINT_DIR / "ant_v0.npz").read_bytes()
    (d / "text.npz").write_text("weights = [[0.1, 0.2]]\n")
    np.save(d / "array.npy", np.zeros((8, 27)))
    (d / "array.npy").rename(d / "array.npz")  # an .npy, not an .npz archive
    (d / "truncated.npz").write_bytes(good[: len(good) // 2])
    flipped = bytearray(good)
    flipped[100:110] = bytes(b ^ 0xFF for b in flipped[100:110])  # inside the first member's deflated bytes
    (d / "crc.npz").write_bytes(bytes(flipped))
    with zipfile.ZipFile(d / "garbage.npz", "w") as zf:  # a zip whose member is no .npy array
        zf.writestr("weights.npy", b"\x93NUMPY garbage that is no array header")
    linear.save(d / "narrow.npz", _policy(np.zeros((8, 20))))
    linear.save(d / "biped.npz", _policy(np.zeros((4, 27))))
    linear.save(d / "nan.npz", _policy(np.full((8, 27), np.nan)))
    linear.save(d / "zero_std.npz", _policy(np.zeros((8, 27)), std=np.zeros(27)))
    np.savez(d / "no_std.npz", weights=np.zeros((8, 27)), obs_mean=np.zeros(27))
    (d / "weights.txt").write_text("0.1")
    return {
        "text": (d / "text.npz", "is not an .npz file"),
        "npy": (d / "array.npz", "is not an .npz file"),
        "truncated": (d / "truncated.npz", "is not an .npz file"),
        "corrupt": (d / "crc.npz", "is a corrupt .npz"),
        "garbage": (d / "garbage.npz", "is a corrupt .npz"),
        "narrow": (d / "narrow.npz", "weights is float64 (8, 20);"),
        "biped": (d / "biped.npz", "weights is float64 (4, 27)"),
        "nan": (d / "nan.npz", "weights holds non-finite values"),
        "zero_std": (d / "zero_std.npz", "obs_std must be positive"),
        "no_std": (d / "no_std.npz", "missing obs_std"),
        "not_npz_suffix": (d / "weights.txt", "unknown checkpoint"),
        "unknown_name": ("ant_v9", "unknown checkpoint 'ant_v9'; expected one of ant_v0, ant_v1"),
        "missing_file": (d / "gone.npz", "unknown checkpoint"),
    }
