"""Atomic, deterministic file writes: temp file + rename, no fsync (atomic, not durable: docs/design.md).

Array archives are zips with fixed timestamps, so their sha256 fingerprints the data."""

from __future__ import annotations

import io
import itertools
import os
import struct
import threading
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from policylab.hashing import pretty_json

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def atomic_write_bytes(path: str | os.PathLike, data: bytes | Sequence[bytes]) -> None:
    """Write `data` (bytes, or a list of parts written one after the other without joining them: a
    store's unit file is its payloads) to a temporary file beside `path` (mode 0644), then rename it
    over `path`."""
    path = os.fspath(path)
    fd, tmp = _open_temp(path)
    try:
        try:
            os.fchmod(fd, 0o644)  # whatever the umask: outputs are meant to be read and served
            _write_all(
                fd,
                [memoryview(data)]
                if isinstance(data, (bytes, bytearray, memoryview))
                else [memoryview(part) for part in data],
            )
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_IOV_MAX = 1024  # parts per writev call (Linux's IOV_MAX)


def _write_all(fd: int, views: list[memoryview]) -> None:
    views = [v.cast("B") for v in views if v.nbytes]
    i = 0
    while i < len(views):
        written = os.writev(fd, views[i : i + _IOV_MAX])
        while written:  # step over what was written; a short write leaves the rest of a part
            if written >= views[i].nbytes:
                written -= views[i].nbytes
                i += 1
            else:
                views[i] = views[i][written:]
                written = 0


_TMP_COUNTER = itertools.count()
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _open_temp(path: str) -> tuple[int, str]:
    """A new file beside `path`, named by process, thread and a counter (no other writer picks that
    name; one left by a killed run is stepped over)."""
    folder, name = os.path.split(path)
    for _ in range(1000):
        tmp = os.path.join(folder, f".{name}.{os.getpid()}-{threading.get_ident()}-{next(_TMP_COUNTER)}.tmp")
        try:
            return os.open(tmp, _TMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:  # the folder is made on first use only (a store writes thousands of files)
            os.makedirs(folder or ".", exist_ok=True)
            return os.open(tmp, _TMP_FLAGS, 0o600), tmp
    raise FileExistsError(f"no free temporary name beside {path}")


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Pretty, sorted JSON; identical input gives identical bytes."""
    atomic_write_text(path, pretty_json(obj))


def write_wallclock(folder: str | os.PathLike, seconds: float, **measures: float) -> None:
    """FOLDER/wallclock.json: a run's wall-clock time (and rates made from it), the one file of a run that
    differs between two runs of the same config; every other file is deterministic."""
    note = "wall-clock time only; every other file is deterministic"
    write_json(os.path.join(folder, "wallclock.json"), {"wall_seconds": seconds, **measures, "note": note})


def arrays_to_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Serialize named arrays as an .npz-compatible zip with fixed timestamps (byte-deterministic).

    Deflate level 1: trajectories of floats barely compress, so a higher level only costs CPU
    (measured on boundary sweeps: level 6 spent ~35 s per 6,400 records for a 3% smaller file).

    The archive is the one `zipfile` writes for these members (`_zipfile_bytes`, tests compare the
    two byte for byte), assembled directly: zipfile's per-member bookkeeping cost more than a short
    episode's compression. Archives zipfile would write differently (zip64 sizes, non-ASCII
    names) are left to zipfile.
    """
    members = []
    total = 0
    for name in sorted(arrays):
        body = io.BytesIO()
        np.lib.format.write_array(body, np.ascontiguousarray(arrays[name]), allow_pickle=False)
        members.append((f"{name}.npy", body.getvalue()))
        total += len(members[-1][1])
    if total > _DIRECT_ZIP_LIMIT or len(members) > 1000 or not all(n.isascii() for n, _ in members):
        return _zipfile_bytes(members)
    return _zip_deflate1(members)


_DIRECT_ZIP_LIMIT = 1 << 30  # far below zipfile's zip64 threshold (~2 GiB per member or archive)
_DOS_TIME = _FIXED_ZIP_TIME[3] << 11 | _FIXED_ZIP_TIME[4] << 5 | _FIXED_ZIP_TIME[5] // 2
_DOS_DATE = (_FIXED_ZIP_TIME[0] - 1980) << 9 | _FIXED_ZIP_TIME[1] << 5 | _FIXED_ZIP_TIME[2]
_EXTERNAL_ATTR = 0o644 << 16


def _zip_deflate1(members: list[tuple[str, bytes]]) -> bytes:
    """What `_zipfile_bytes` writes, without zipfile: per member a local header (version 20, no flags,
    deflate, fixed DOS time, CRC and sizes), the raw-deflate body (level 1, one compress + flush, as
    zipfile calls it), then the central directory (made by 2.0 on Unix, external attributes 0644)
    and the end record."""
    out, central, offset = [], [], 0
    for name, raw in members:
        fname = name.encode("ascii")
        comp = zlib.compressobj(1, zlib.DEFLATED, -15)
        body = comp.compress(raw) + comp.flush()
        crc = zlib.crc32(raw)
        out.append(
            struct.pack(
                "<4s2B4HL2L2H",
                b"PK\003\004",
                20,
                0,
                0,
                zipfile.ZIP_DEFLATED,
                _DOS_TIME,
                _DOS_DATE,
                crc,
                len(body),
                len(raw),
                len(fname),
                0,
            )
        )
        out.append(fname)
        out.append(body)
        central.append(
            struct.pack(
                "<4s4B4HL2L5H2L",
                b"PK\001\002",
                20,
                3,
                20,
                0,
                0,
                zipfile.ZIP_DEFLATED,
                _DOS_TIME,
                _DOS_DATE,
                crc,
                len(body),
                len(raw),
                len(fname),
                0,
                0,
                0,
                0,
                _EXTERNAL_ATTR,
                offset,
            )
            + fname
        )
        offset += 30 + len(fname) + len(body)
    size = sum(len(c) for c in central)
    end = struct.pack("<4s4H2LH", b"PK\005\006", 0, 0, len(members), len(members), size, offset, 0)
    return b"".join(out + central + [end])


def _zipfile_bytes(members: list[tuple[str, bytes]]) -> bytes:
    """The reference: the archive as `zipfile` writes these (name, npy bytes) members."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, raw in members:
            info = zipfile.ZipInfo(name, date_time=_FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = _EXTERNAL_ATTR
            zf.writestr(info, raw, compresslevel=1)
    return buf.getvalue()


_POOLS: dict = {}
_POOLS_LOCK = threading.Lock()


def thread_pool(name: str, workers: int):
    """The process's one thread pool named `name` (threads `policylab-<name>`), started on first use: the
    payload encoders (`rollout.payloads`), the store's unit-file writer. Idle threads cost nothing, so
    pools live as long as the process."""
    with _POOLS_LOCK:
        if name not in _POOLS:
            from concurrent.futures import ThreadPoolExecutor

            _POOLS[name] = ThreadPoolExecutor(workers, thread_name_prefix=f"policylab-{name}")
        return _POOLS[name]


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
