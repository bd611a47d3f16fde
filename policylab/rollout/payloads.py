"""Packed payloads (`PLP1`): a rollout's arrays as the store holds them, and their sha256 over the canonical arrays.

Format and the batch write path: docs/design.md, "The store" and "Module notes"."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from policylab.fileio import thread_pool
from policylab.rollout.executors import default_workers

PACKED_MAGIC = b"PLP1"
# zstd's level per payload, by what most of its bytes are (measured on real payloads, after the shuffle,
# BENCHMARKS.md "The store"): float64 trajectories (a robot's state) keep little to squeeze but their
# noisy low mantissa bytes, and level -1 packs them as small as level 3 (Go1: 0.876 vs 0.873 of the
# raw bytes) at twice its speed; narrower items (Breakout's float32 features, int8 actions) repeat,
# and level 3 keeps them a fifth smaller than -1 does (0.141 vs 0.178), 9 barely smaller still.
ZSTD_LEVEL_WIDE = -1  # at least half the payload's bytes are items of 8 bytes or more
ZSTD_LEVEL = 3  # the rest
_LOCAL = threading.local()
_ENCODE_STR = json.encoder.encode_basestring_ascii


def arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over a rollout's canonical arrays, whatever container holds them: per array in name
    order, the canonical JSON of ``[name, dtype.str, shape]`` then its C-order bytes."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(_entry(name, a).encode())
        h.update(a)
    return h.hexdigest()


def _entry(name: str, a: np.ndarray) -> str:
    """`canonical_json([name, a.dtype.str, list(a.shape)])`, written directly (it is made per array)."""
    return f"[{_ENCODE_STR(name)},{_ENCODE_STR(a.dtype.str)},[{','.join(map(str, a.shape))}]]"


def pack_arrays(arrays: Mapping[str, np.ndarray]) -> tuple[bytes, str]:
    """(packed bytes, `arrays_digest`) of named arrays (the layout: docs/design.md, "The store")."""
    return pack_many([arrays])[0]


def pack_many(payloads: Sequence[Mapping[str, np.ndarray]]) -> list[tuple[bytes, str]]:
    """`[pack_arrays(p) for p in payloads]`, the same bytes, made a group at a time on this thread."""
    out: list = [None] * len(payloads)
    for group in _groups(payloads):
        frames = group.compress(group.shuffled())
        for k, (i, digest) in enumerate(zip(group.members, group.digests())):
            out[i] = (group.prefix + frames[k].tobytes(), digest)
    return out


class Packing:
    """A batch of payloads being packed. Construction groups, shuffles and hashes them on the caller's
    thread and starts their zstd frames on a background thread (one call into zstd per group, without
    the GIL); `result()` waits for the frames and returns per payload ((header, frame), sha256): the
    two parts of its packed bytes, never joined (a unit file is written from its parts)."""

    def __init__(self, payloads: Sequence[Mapping[str, np.ndarray]]):
        self.n = len(payloads)
        self.groups = _groups(payloads)
        bodies = [g.shuffled() for g in self.groups]
        self._frames = (
            thread_pool("frames", 1).submit(lambda: [g.compress(body) for g, body in zip(self.groups, bodies)])
            if self.groups
            else None
        )
        # Hashing next lets the thread start at once: each update releases the GIL, where Python work
        # here would hold it from the thread for up to the switch interval.
        self._digests = [g.digests() for g in self.groups]

    def result(self) -> list[tuple[tuple[bytes, Any], str]]:
        frames = self._frames.result() if self._frames is not None else []
        out: list = [None] * self.n
        for group, sums, made in zip(self.groups, self._digests, frames):
            for k, (i, digest) in enumerate(zip(group.members, sums)):
                out[i] = ((group.prefix, made[k]), digest)
        return out


class _Group:
    """Payloads that share their arrays' names, dtypes and shapes, packed together: one header, one
    stack and shuffle per array name, one zstd call for all frames."""

    __slots__ = ("members", "columns", "prefix", "tails", "sizes", "level")

    def __init__(self, names: list[str], first: list[np.ndarray]):
        """An empty group for payloads shaped like `first` (its arrays, in the order of `names`)."""
        self.members: list[int] = []  # the payloads' positions in the batch
        self.columns: list[list[np.ndarray]] = [[] for _ in names]  # per array name, every member's array
        entries = [_entry(name, a) for name, a in zip(names, first)]
        head = ("[" + ",".join(entries) + "]").encode()
        self.prefix = PACKED_MAGIC + struct.pack("<I", len(head)) + head
        self.tails = [e.encode() for e in entries]
        for name, a in zip(names, first):
            if a.dtype.hasobject:
                raise TypeError(f"array {name!r} holds Python objects; payloads hold numbers only")
        self.sizes = [a.nbytes for a in first]
        width = sum(self.sizes)
        wide = sum(a.nbytes for a in first if a.dtype.itemsize >= 8)
        self.level = ZSTD_LEVEL_WIDE if 2 * wide >= width > 0 else ZSTD_LEVEL

    def digests(self) -> list[str]:
        """Each member's `arrays_digest`, sharing the hash of the first array's header entry."""
        first = hashlib.sha256(self.tails[0] if self.tails else b"")
        out = []
        for r in range(len(self.members)):
            h = first.copy()
            for j, column in enumerate(self.columns):
                if j:
                    h.update(self.tails[j])
                h.update(column[r])
            out.append(h.hexdigest())
        return out

    def shuffled(self) -> np.ndarray:
        """Every member's bytes, each byte-shuffled, back to back (member r at [r * width, (r + 1) * width)):
        one stack and one shuffling copy per array name."""
        n, width = len(self.members), sum(self.sizes)
        shuffled = np.empty(n * width, np.uint8)
        at = 0
        for column, size in zip(self.columns, self.sizes):
            itemsize = column[0].dtype.itemsize
            stacked = (np.stack if column[0].ndim == 0 else np.concatenate)(column, dtype=column[0].dtype)
            raw = stacked.reshape(-1).view(np.uint8)
            if size and itemsize > 1:  # the k-th byte of every item together, for all members in one copy
                target = np.ndarray(
                    (n, itemsize, size // itemsize), np.uint8, shuffled, at, (width, size // itemsize, 1)
                )
                target[...] = raw.reshape(n, size // itemsize, itemsize).transpose(0, 2, 1)
            elif size:
                np.ndarray((n, size), np.uint8, shuffled, at, (width, 1))[...] = raw.reshape(n, size)
            at += size
        return shuffled

    def compress(self, shuffled: np.ndarray) -> Any:
        """Each member's zstd frame of its shuffled bytes (indexable, each a buffer): one call into zstd,
        which holds the GIL only to start and to return."""
        n, width = len(self.members), sum(self.sizes)
        compressor = _zstd(self.level)
        if not width:
            return [_Frame(compressor.compress(b""))] * n
        import zstandard

        segments = np.empty((n, 2), "<u8")
        segments[:, 0] = np.arange(n, dtype=np.uint64) * width
        segments[:, 1] = width
        return compressor.multi_compress_to_buffer(
            zstandard.BufferWithSegments(shuffled, segments.tobytes()), threads=max(0, default_workers() - 2)
        )  # beside the caller and this one


class _Frame(bytes):
    """A frame made alone, with the `tobytes` of the frames `multi_compress_to_buffer` returns."""

    def tobytes(self) -> bytes:
        return bytes(self)


def _groups(payloads: Sequence[Mapping[str, np.ndarray]]) -> list[_Group]:
    """The payloads grouped by their arrays' names, dtypes and shapes, in order of first appearance
    (this runs per payload on the store's writing thread, so it is kept lean)."""
    by_signature: dict[tuple, _Group] = {}
    for i, arrays in enumerate(payloads):
        names = sorted(arrays)
        column = [np.ascontiguousarray(arrays[name]) for name in names]
        signature = (*names, *[(a.dtype, a.shape) for a in column])  # equal dtypes have one dtype.str
        group = by_signature.get(signature)
        if group is None:
            group = by_signature[signature] = _Group(names, column)
        group.members.append(i)
        for j, a in enumerate(column):
            group.columns[j].append(a)
    return list(by_signature.values())


class EncodedArrays(dict):
    """Named arrays with their packed encoding (`pack_arrays`: `.packed` and `.digest`), made once.

    A batch runner builds its payloads this way where it runs (a worker process, or beside the
    simulation in-process: `in_background`, on the encoder threads), so the store's writer only
    writes the bytes (`Store.put` takes them as given). Read-only, and the arrays must not change
    afterwards; pickles with its bytes.
    """

    def __init__(
        self,
        arrays: Mapping[str, np.ndarray],
        packed: tuple[bytes, str] | Callable[[], tuple[bytes, str]] | None = None,
    ):
        super().__init__(arrays)
        self._packed = pack_arrays(self) if packed is None else packed

    @classmethod
    def in_background(cls, payloads: Sequence[Mapping[str, np.ndarray]]) -> list[EncodedArrays]:
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


def pack_in_background(payloads: Sequence[Mapping[str, np.ndarray]]) -> Callable[[], list[tuple[bytes, str]]]:
    """Start `pack_many(payloads)` on the encoder threads, one share of the payloads per thread (for a
    caller that simulates meanwhile); returns a function that waits for the packings and returns them
    in order."""
    if not payloads:
        return list
    threads = default_workers()
    pool = thread_pool("encode", threads)
    step = -(-len(payloads) // threads)
    futures = [pool.submit(pack_many, payloads[i : i + step]) for i in range(0, len(payloads), step)]
    done: list = []

    def wait() -> list[tuple[bytes, str]]:
        if not done:
            done.extend(packed for f in futures for packed in f.result())
        return done

    return wait


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


def compress_text(data: bytes) -> bytes:
    """One zstd frame of `data` at `ZSTD_LEVEL` (a unit file's records: canonical JSON that repeats)."""
    return _zstd(ZSTD_LEVEL).compress(data)


def decompress_text(frame: bytes) -> bytes:
    """The bytes of a `compress_text` frame; ValueError where it is not one."""
    import zstandard

    try:
        return _zstd_d().decompress(frame)
    except zstandard.ZstdError as exc:
        raise ValueError(f"not a zstd frame: {exc}") from None
