"""Atomic, deterministic file writes.

A reader never sees a half-written file (temp file + rename), and the same content always gives
the same bytes: array payloads are zip archives with fixed timestamps, so their sha256 is a
stable fingerprint of the data.

Atomic, not durable: there is no fsync. A killed run (the case resumption is built for) never
leaves a partial file, since the rename happens only after the write; surviving a power cut is
left to the file system. An fsync per record cost ~9 ms, a minute per 6,400-rollout sweep.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import math
import os
import struct
import threading
import zipfile
import zlib
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from policylab.hashing import canonical_json, pretty_json

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
            _write_all(fd, [memoryview(data)] if isinstance(data, (bytes, bytearray, memoryview)) else
                       [memoryview(part) for part in data])
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


def write_jsonl(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, "".join(canonical_json(r) + "\n" for r in rows))


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
        out.append(struct.pack("<4s2B4HL2L2H", b"PK\003\004", 20, 0, 0, zipfile.ZIP_DEFLATED, _DOS_TIME, _DOS_DATE,
                               crc, len(body), len(raw), len(fname), 0))
        out.append(fname)
        out.append(body)
        central.append(struct.pack("<4s4B4HL2L5H2L", b"PK\001\002", 20, 3, 20, 0, 0, zipfile.ZIP_DEFLATED,
                                   _DOS_TIME, _DOS_DATE, crc, len(body), len(raw), len(fname), 0, 0, 0, 0,
                                   _EXTERNAL_ATTR, offset) + fname)
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


class EncodedArrays(dict):
    """Named arrays with their packed encoding (`pack_arrays`: `.packed` and `.digest`), made once.

    A batch runner builds its payloads this way where it runs (a worker process, or beside the
    simulation in-process: `in_background`, on a small thread pool, since zstd, sha256 and numpy's
    copies release the GIL), so the store's writer only writes the bytes (`Store.put` takes them as
    given). Read-only, and the arrays must not change afterwards; pickles with its bytes.
    """

    def __init__(self, arrays: Mapping[str, np.ndarray],
                 packed: tuple[bytes, str] | Callable[[], tuple[bytes, str]] | None = None):
        super().__init__(arrays)
        self._packed = pack_arrays(self) if packed is None else packed

    @classmethod
    def in_background(cls, payloads: Sequence[Mapping[str, np.ndarray]]) -> list["EncodedArrays"]:
        """Each payload as `EncodedArrays` whose packing runs on the encoder threads
        (`pack_in_background`); `.packed` and `.digest` wait for it."""
        packing = pack_in_background(payloads)
        return [cls(p, functools.partial(_nth, packing, i)) for i, p in enumerate(payloads)]

    @property
    def packed(self) -> bytes:
        return self._encoding()[0]

    @property
    def digest(self) -> str:
        return self._encoding()[1]

    def _encoding(self) -> tuple[bytes, str]:
        if callable(self._packed):
            self._packed = self._packed()
        return self._packed

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError("EncodedArrays is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore

    def __reduce__(self):
        return EncodedArrays, (dict(self), self._encoding())


def _nth(packing: Callable[[], list], i: int) -> tuple[bytes, str]:
    return packing()[i]


# -- packed arrays: a rollout's payload inside a store's unit file -------------------------------
PACKED_MAGIC = b"PLP1"
# zstd's level per payload, by what most of its bytes are (measured on real payloads, after the shuffle,
# BENCHMARKS.md "The store"): float64 trajectories (a robot's state) keep little to squeeze but their
# noisy low mantissa bytes, and level -1 packs them as small as level 3 (Go1: 0.876 vs 0.873 of the
# raw bytes) at twice its speed; narrower items (Breakout's float32 features, int8 actions) repeat,
# and level 3 keeps them a fifth smaller than -1 does (0.141 vs 0.178), 9 barely smaller still.
ZSTD_LEVEL_WIDE = -1  # at least half the payload's bytes are items of 8 bytes or more
ZSTD_LEVEL = 3  # the rest
_LOCAL = threading.local()


def arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over a rollout's canonical arrays, whatever container holds them: per array in name
    order, the canonical JSON of ``[name, dtype.str, shape]`` then its C-order bytes."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(_entry(name, a).encode())
        h.update(memoryview(a).cast("B") if a.size else b"")
    return h.hexdigest()


def _entry(name: str, a: np.ndarray) -> str:
    """`canonical_json([name, a.dtype.str, list(a.shape)])`, written directly (it is made per array)."""
    return f"[{_ENCODE_STR(name)},{_ENCODE_STR(a.dtype.str)},[{','.join(map(str, a.shape))}]]"


_ENCODE_STR = json.encoder.encode_basestring_ascii


def pack_arrays(arrays: Mapping[str, np.ndarray]) -> tuple[bytes, str]:
    """(packed bytes, `arrays_digest`) of named arrays: lossless and byte-deterministic.

    Layout: ``PLP1``, a little-endian u32 header length, the header (canonical JSON
    ``[[name, dtype.str, shape], ...]`` in name order), then one zstd frame of every array's bytes,
    each byte-shuffled by its item size (the k-th byte of every item together: a float's exponent
    bytes repeat along a trajectory, so they compress, where the raw interleaved bytes barely do),
    at `ZSTD_LEVEL_WIDE` or `ZSTD_LEVEL` by the payload's item sizes (a reader needs neither).
    """
    return pack_many([arrays])[0]


def pack_many(payloads: Sequence[Mapping[str, np.ndarray]]) -> list[tuple[bytes, str]]:
    """`[pack_arrays(p) for p in payloads]`, the same bytes, with less work per payload: payloads whose
    arrays share names, dtypes and shapes (a unit of fixed-length trajectories) are shuffled together,
    one numpy copy per array name for all of them, and share their header and its hashing; per
    payload only its sha256 and its zstd frame remain (both release the GIL)."""
    out: list = [None] * len(payloads)
    groups: dict[tuple, list[int]] = {}
    named = []
    for i, arrays in enumerate(payloads):
        pairs = [(name, np.ascontiguousarray(arrays[name])) for name in sorted(arrays)]
        named.append(pairs)
        groups.setdefault(tuple((name, a.dtype.str, a.shape) for name, a in pairs), []).append(i)
    for signature, members in groups.items():
        for i, packed in zip(members, _pack_group(signature, [named[i] for i in members])):
            out[i] = packed
    return out


def pack_in_background(payloads: Sequence[Mapping[str, np.ndarray]]) -> Callable[[], list[tuple[bytes, str]]]:
    """Start `pack_many(payloads)` on the encoder threads, one share of the payloads per thread (their
    zstd, sha256 and numpy copies release the GIL, so the caller goes on meanwhile); returns a
    function that waits for the packings and returns them in order."""
    if not payloads:
        return list
    pool, threads = _encoder_pool()
    step = -(-len(payloads) // threads)
    futures = [pool.submit(pack_many, payloads[i : i + step]) for i in range(0, len(payloads), step)]
    done: list = []

    def wait() -> list[tuple[bytes, str]]:
        if not done:
            done.extend(packed for f in futures for packed in f.result())
        return done

    return wait


def _pack_group(signature: tuple, group: list[list[tuple[str, np.ndarray]]]) -> list[tuple[bytes, str]]:
    """`pack_arrays` of payloads that all have `signature` ((name, dtype.str, shape) per array)."""
    n = len(group)
    entries = [_entry(name, group[0][j][1]) for j, (name, _, _) in enumerate(signature)]
    head = ("[" + ",".join(entries) + "]").encode()
    prefix = PACKED_MAGIC + struct.pack("<I", len(head)) + head
    sizes = []
    for j, (name, _, _) in enumerate(signature):
        a = group[0][j][1]
        if a.dtype.hasobject:
            raise TypeError(f"array {name!r} holds Python objects; payloads hold numbers only")
        sizes.append(a.nbytes)
    width = sum(sizes)
    shuffled = np.empty(n * width, np.uint8)  # payload r's shuffled bytes at [r * width, (r + 1) * width)
    raws = []  # per array: every payload's C-order bytes, back to back
    at = 0
    for j, size in enumerate(sizes):
        itemsize = group[0][j][1].dtype.itemsize
        stacked = group[0][j][1][None] if n == 1 else np.stack([p[j][1] for p in group])
        raw = stacked.reshape(-1).view(np.uint8)
        raws.append(memoryview(raw))
        if size and itemsize > 1:  # the k-th byte of every item together, for all payloads in one copy
            target = np.ndarray((n, itemsize, size // itemsize), np.uint8, shuffled, at, (width, size // itemsize, 1))
            target[...] = raw.reshape(n, size // itemsize, itemsize).transpose(0, 2, 1)
        elif size:
            np.ndarray((n, size), np.uint8, shuffled, at, (width, 1))[...] = raw.reshape(n, size)
        at += size
    body = memoryview(shuffled)
    tails = [e.encode() for e in entries]
    first = hashlib.sha256(tails[0] if tails else b"")
    wide = sum(size for size, (_, a) in zip(sizes, group[0]) if a.dtype.itemsize >= 8)
    compress = _zstd(ZSTD_LEVEL_WIDE if 2 * wide >= width > 0 else ZSTD_LEVEL).compress
    out = []
    for r in range(n):
        h = first.copy()
        for j, size in enumerate(sizes):
            if j:
                h.update(tails[j])
            if size:
                h.update(raws[j][r * size : (r + 1) * size])
        out.append((prefix + compress(body[r * width : (r + 1) * width]), h.hexdigest()))
    return out


def unpack_arrays(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The arrays `pack_arrays` packed; ValueError on bytes that are not such a payload."""
    import zstandard

    blob = memoryview(blob)
    if bytes(blob[:4]) != PACKED_MAGIC or len(blob) < 8:
        raise ValueError("not a packed payload (bad magic)")
    (n,) = struct.unpack("<I", blob[4:8])
    try:
        header = json.loads(bytes(blob[8 : 8 + n]))
        dtypes = [(name, np.dtype(dt), tuple(shape)) for name, dt, shape in header]
        size = sum(dt.itemsize * math.prod(shape) for _, dt, shape in dtypes)
        data = _zstd_d().decompress(blob[8 + n :], max_output_size=size) if size else b""
    except (ValueError, TypeError, zstandard.ZstdError) as exc:
        raise ValueError(f"not a packed payload ({exc})") from None
    if len(data) != size:
        raise ValueError("packed payload holds fewer bytes than its header says")
    out, at = {}, 0
    for name, dt, shape in dtypes:
        nbytes = dt.itemsize * math.prod(shape)
        chunk = np.frombuffer(data, np.uint8, nbytes, at)
        at += nbytes
        if dt.itemsize > 1 and nbytes:
            chunk = chunk.reshape(dt.itemsize, -1).T
        out[name] = np.ascontiguousarray(chunk).view(dt).reshape(shape)
    return out


def _zstd(level: int):
    """This thread's compressor at `level` (a zstandard compressor is not to be shared between threads)."""
    compressors = _LOCAL.__dict__.setdefault("c", {})
    if level not in compressors:
        import zstandard

        compressors[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
    return compressors[level]


def _zstd_d():
    if not hasattr(_LOCAL, "d"):
        import zstandard

        _LOCAL.d = zstandard.ZstdDecompressor()
    return _LOCAL.d


_POOLS: dict = {}
_POOLS_LOCK = threading.Lock()


def thread_pool(name: str, workers: int):
    """The process's one thread pool named `name` (threads `policylab-<name>`), started on first use: the
    encoder threads here, the store's unit-file writer. Idle threads cost nothing, so pools live as
    long as the process."""
    with _POOLS_LOCK:
        if name not in _POOLS:
            from concurrent.futures import ThreadPoolExecutor

            _POOLS[name] = ThreadPoolExecutor(workers, thread_name_prefix=f"policylab-{name}")
        return _POOLS[name]


def _encoder_pool():
    """Threads that encode payloads in the background, one per CPU this process may use, and their number."""
    cpus = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    return thread_pool("encode", cpus), cpus


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
