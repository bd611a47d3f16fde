"""Atomic, deterministic file writes.

A reader never sees a half-written file (temp file + rename), and the same content always gives
the same bytes: array payloads are zip archives with fixed timestamps, so their sha256 is a
stable fingerprint of the data.

Atomic, not durable: there is no fsync. A killed run (the case resumption is built for) never
leaves a partial file, since the rename happens only after the write; surviving a power cut is
left to the file system. An fsync per record cost ~9 ms, a minute per 6,400-rollout sweep.
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from policylab.hashing import canonical_json, pretty_json

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are meant to be read and served
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Pretty, sorted JSON; identical input gives identical bytes."""
    atomic_write_text(path, pretty_json(obj))


def write_jsonl(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, "".join(canonical_json(r) + "\n" for r in rows))


def arrays_to_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Serialize named arrays as an .npz-compatible zip with fixed timestamps (byte-deterministic).

    Deflate level 1: trajectories of floats barely compress, so a higher level only costs CPU
    (measured on boundary sweeps: level 6 spent ~35 s per 6,400 records for a 3% smaller file).
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            body = io.BytesIO()
            np.lib.format.write_array(body, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, body.getvalue(), compresslevel=1)
    return buf.getvalue()


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
