"""A unit file (`PLU2`): one unit of work's payloads back to back, then its records and a trailer naming its rollouts.

Byte layout, and the first layout (`PLU1`) still read: docs/design.md, "Module notes"."""

from __future__ import annotations

import json
import os
import socket
import struct
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from policylab.hashing import sha256_hex
from policylab.rollout.payloads import compress_text, decompress_text

MAGIC = b"PLU2"
MAGIC_V1 = b"PLU1"  # no records
_ENCODE_STR = json.encoder.encode_basestring_ascii
UNITS = "units"
_TAIL = struct.Struct("<QQ4s")
_TAIL_V1 = struct.Struct("<Q4s")


def name(keys: Sequence[str]) -> str:
    """The unit file of a unit's rollouts (relative to the store root), named by their keys."""
    return f"{UNITS}/{sha256_hex(chr(10).join(keys).encode())[:32]}.pack"


def encode(
    keys: Sequence[str], outcomes: Sequence[str], blobs: Sequence[tuple[Any, str] | None], records: Sequence[str]
) -> tuple[list[Any], list[tuple[str, int, int] | None]]:
    """(the file's bytes in parts, per rollout (sha256, offset, length) or None) of a unit whose
    outcomes are `outcomes` (each its canonical JSON text), payloads `blobs` ((packed bytes, or a
    tuple of buffers that are those bytes in parts; sha256) each) and index records `records` (each
    its canonical JSON text, which names its payload's sha256). The parts are written one after the
    other, never joined (a Go1 unit's file is 20 MB)."""
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
    packed = compress_text("\n".join(records).encode())
    trailer = ("[" + ",".join(entries) + "]").encode()  # canonical JSON, written directly
    return [*parts, packed, trailer, _TAIL.pack(len(packed), len(trailer), MAGIC)], places


class Unit(NamedTuple):
    """A unit file's trailer entries and records (None in a file of the first layout)."""

    entries: list[list]
    records: list[str] | None


def parse(data: bytes) -> Unit:
    """The trailer and records of a unit file's bytes; ValueError where they are not a unit file's."""
    magic = data[-4:]
    if magic == MAGIC and len(data) >= _TAIL.size:
        n_records, n, _ = _TAIL.unpack(data[-_TAIL.size :])
        end = len(data) - _TAIL.size
    elif magic == MAGIC_V1 and len(data) >= _TAIL_V1.size:
        n_records, (n, _) = None, _TAIL_V1.unpack(data[-_TAIL_V1.size :])
        end = len(data) - _TAIL_V1.size
    else:
        raise ValueError("no unit trailer")
    if n + (n_records or 0) > end:
        raise ValueError("a unit trailer longer than its file")
    entries = json.loads(data[end - n : end])
    if not isinstance(entries, list) or not all(isinstance(e, list) and len(e) == 5 for e in entries):
        raise ValueError("a unit trailer that is not a list of rollouts")
    if n_records is None:
        return Unit(entries, None)
    records = decompress_text(data[end - n - n_records : end - n]).decode().split("\n")
    if len(records) != len(entries):
        raise ValueError(f"{len(records)} records for {len(entries)} rollouts")
    return Unit(entries, records)


def trailer_of(path: os.PathLike | str) -> list[list]:
    """The trailer of a local unit file (either layout), read without reading its payloads or records."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size < _TAIL_V1.size:
            raise ValueError("too short for a unit file")
        f.seek(size - min(size, _TAIL.size))
        tail = f.read()
        if tail[-4:] == MAGIC and len(tail) == _TAIL.size:
            n_records, n, _ = _TAIL.unpack(tail)
            tail_size = _TAIL.size
        elif tail[-4:] == MAGIC_V1:
            (n, _), n_records = _TAIL_V1.unpack(tail[-_TAIL_V1.size :]), 0
            tail_size = _TAIL_V1.size
        else:
            raise ValueError("no unit trailer")
        if n + n_records + tail_size > size:
            raise ValueError("a unit trailer longer than its file")
        f.seek(size - tail_size - n)
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
