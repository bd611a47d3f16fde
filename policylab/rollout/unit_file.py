"""A unit file: one unit of work's payloads back to back, then a trailer naming its rollouts.

    payload 0 | payload 1 | ... | trailer (canonical JSON) | u64 trailer length | b"PLU1"

The trailer is ``[[key, outcome, offset, length, sha256], ...]`` in the unit's order (offset and
length null for a rollout without a payload). Rows in the index locate a payload by offset and
length alone; the trailer makes the file self-describing, so a unit a worker wrote whose rows were
never committed (the driver was killed, or another run sharing the store is committing it) is
committed from the file, its digests checked, instead of being run again.

The file's bytes depend only on the unit's rollouts, so whoever writes it (the driver, a process
pool worker, a Ray worker on another node) writes the same file under the same name (`name`).
Workers write through fsspec, so the store root may be a shared folder or a filesystem URL.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import uuid
from typing import Any, Sequence

from policylab.hashing import sha256_hex

MAGIC = b"PLU1"
_ENCODE_STR = json.encoder.encode_basestring_ascii
UNITS = "units"
_TAIL = struct.Struct("<Q4s")


def name(keys: Sequence[str]) -> str:
    """The unit file of a unit's rollouts (relative to the store root), named by their keys."""
    return f"{UNITS}/{sha256_hex(chr(10).join(keys).encode())[:32]}.pack"


def encode(keys: Sequence[str], outcomes: Sequence[str],
           blobs: Sequence[tuple[Any, str] | None]) -> tuple[list[Any], list[tuple[str, int, int] | None]]:
    """(the file's bytes in parts, per rollout (sha256, offset, length) or None) of a unit whose
    outcomes are `outcomes` (each its canonical JSON text) and payloads `blobs` ((packed bytes, or
    a tuple of buffers that are those bytes in parts; sha256) each). The parts are written one after
    the other, never joined (a Go1 unit's file is 20 MB)."""
    places: list[tuple[str, int, int] | None] = []
    entries, parts, offset = [], [], 0
    for key, outcome, blob in zip(keys, outcomes, blobs):
        if blob is None:
            places.append(None)
            entries.append(f"[{_ENCODE_STR(key)},{outcome},null,null,null]")
            continue
        data, sha = blob
        if isinstance(data, tuple):
            size = sum(map(len, data))  # bytes, and the frames of `payloads.Packing`
            parts.extend(data)
        else:
            size = len(data)
            parts.append(data)
        places.append((sha, offset, size))
        entries.append(f"[{_ENCODE_STR(key)},{outcome},{offset},{size},{_ENCODE_STR(sha)}]")
        offset += size
    trailer = ("[" + ",".join(entries) + "]").encode()  # canonical JSON, written directly
    return [*parts, trailer, _TAIL.pack(len(trailer), MAGIC)], places


def trailer_of(path: os.PathLike | str) -> list[list]:
    """The trailer of a local unit file, read without reading its payloads."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size < _TAIL.size:
            raise ValueError("too short for a unit file")
        f.seek(size - _TAIL.size)
        n, magic = _TAIL.unpack(f.read(_TAIL.size))
        if magic != MAGIC or n > size - _TAIL.size:
            raise ValueError("no unit trailer")
        f.seek(size - _TAIL.size - n)
        return json.loads(f.read(n))


def write(base: str, rel: str, parts: Sequence[bytes]) -> None:
    """Write a unit file (its parts, `encode`) under `base` (a folder or an fsspec URL): a temp name
    carrying this process's pid and host (so only a dead writer's is ever removed), then a move onto
    the final name."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    folder, fname = os.path.split(f"{root.rstrip('/')}/{rel}")
    fs.makedirs(folder, exist_ok=True)
    tmp = f"{folder}/.{fname}.{os.getpid()}-0-{uuid.uuid4().hex}@{socket.gethostname()}.tmp"
    try:
        with fs.open(tmp, "wb") as f:
            for part in parts:
                f.write(part)
        fs.mv(tmp, f"{folder}/{fname}")
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def read(base: str, rel: str) -> bytes:
    import fsspec

    fs, root = fsspec.core.url_to_fs(base)
    with fs.open(f"{root.rstrip('/')}/{rel}", "rb") as f:
        return f.read()
