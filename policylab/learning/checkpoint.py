"""A learner's whole state in one file, written atomically (a killed run leaves the previous
checkpoint whole) and byte-deterministic: the same state gives the same bytes."""

from __future__ import annotations

import io
from pathlib import Path

import torch

from policylab.fileio import atomic_write_bytes


def to_bytes(state: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def write(path: Path, state: dict) -> None:
    atomic_write_bytes(path, to_bytes(state))


def read(path: Path) -> dict:
    """A checkpoint this package wrote (numpy arrays and generator states included, so not
    weights-only: read only files a run wrote itself)."""
    return torch.load(path, weights_only=False)
