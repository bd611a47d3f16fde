"""Packed payloads: the bytes follow the documented layout (checked against a reference written here
from the layout alone: one payload at a time, plain numpy and one zstd `compress`), and every batch
path (`pack_many`, `Packing`, `EncodedArrays.in_background`) makes those bytes and digests."""

import hashlib
import json
import pickle
import struct

import numpy as np
import pytest
import zstandard

from policylab.rollout import payloads
from policylab.rollout.payloads import (
    ZSTD_LEVEL,
    ZSTD_LEVEL_WIDE,
    EncodedArrays,
    Packing,
    arrays_digest,
    pack_arrays,
    pack_many,
    unpack_arrays,
)


def _payloads():
    """Payloads of a few shapes mixed (a unit of fixed-length trajectories, then others), in no order."""
    rng = np.random.default_rng(3)
    same = [
        {
            "qpos": np.cumsum(rng.normal(size=(40, 19)), axis=0),
            "ctrl": rng.normal(size=(39, 8)).astype(np.float32),
            "done": np.array([i % 2 == 0]),
        }
        for i in range(30)
    ]
    ragged = [{"qpos": rng.normal(size=(n, 3)), "t": np.arange(n)} for n in range(1, 8)]
    odd = [
        {},
        {"e": np.zeros((0, 4), np.float32)},
        {"x": np.float64(2.5)},
        {"big": np.arange(10, dtype=">f8")},
        {"big": np.arange(10, 20, dtype=">f8")},
        {"f": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "s": np.arange(9, dtype=np.int16)[::2]},
        {
            "obs": rng.integers(0, 200, size=(300, 9)).astype(np.float32),
            "action": rng.integers(0, 3, 299).astype(np.int8),
        },
    ]
    out = same + ragged + odd
    return [out[i] for i in rng.permutation(len(out))]


def test_pack_many_is_pack_arrays_one_by_one_and_lossless():
    payloads = _payloads()
    packed = pack_many(payloads)
    assert packed == [pack_arrays(p) for p in payloads]
    for p, (blob, digest) in zip(payloads, packed):
        back = unpack_arrays(blob)
        assert digest == arrays_digest(p) == arrays_digest(back)
        for name, a in p.items():
            a = np.ascontiguousarray(a)
            assert back[name].dtype == a.dtype and back[name].shape == a.shape and np.array_equal(back[name], a)


def test_encoded_in_background_carries_the_same_bytes_and_pickles_with_them():
    payloads = _payloads()
    encoded = EncodedArrays.in_background(payloads)
    assert [(e.packed, e.digest) for e in encoded] == [pack_arrays(p) for p in payloads]
    again = pickle.loads(pickle.dumps(encoded[0]))
    assert (again.packed, again.digest) == (encoded[0].packed, encoded[0].digest)
    assert sorted(again) == sorted(encoded[0])


def _reference(arrays):
    """The layout of one payload, written from its description: header of [name, dtype.str, shape] in name
    order; each array's C-order bytes shuffled by item size; one zstd frame at the level its item sizes
    choose; the digest over each array's header entry and bytes."""
    names = sorted(arrays)
    arrs = [np.ascontiguousarray(arrays[n]) for n in names]
    entries = [[n, a.dtype.str, list(a.shape)] for n, a in zip(names, arrs)]
    head = json.dumps(entries, separators=(",", ":")).encode()
    body = b"".join(a.view(np.uint8).reshape(-1, a.dtype.itemsize).T.tobytes() if a.size else b"" for a in arrs)
    width = sum(a.nbytes for a in arrs)
    wide = sum(a.nbytes for a in arrs if a.dtype.itemsize >= 8)
    level = ZSTD_LEVEL_WIDE if 2 * wide >= width > 0 else ZSTD_LEVEL
    frame = zstandard.ZstdCompressor(level=level, write_content_size=True).compress(body)
    h = hashlib.sha256()
    for entry, a in zip(entries, arrs):
        h.update(json.dumps(entry, separators=(",", ":")).encode())
        h.update(a.tobytes())
    return b"PLP1" + struct.pack("<I", len(head)) + head + frame, h.hexdigest()


def test_packed_bytes_follow_the_layout():
    for p in _payloads():
        assert pack_arrays(p) == _reference(p)


@pytest.mark.parametrize("cpus", [1, 2, 6])
def test_a_unit_packed_for_the_store_is_the_same_bytes_in_parts(monkeypatch, cpus):
    """`Packing` (frames from one zstd call on a background thread, digests on the caller's) hands each
    payload over as (header, frame): joined, `pack_arrays`'s bytes; a unit of one shape included, and
    on a machine of more CPUs, where zstd compresses the group on several threads of its own."""
    monkeypatch.setattr(payloads, "default_workers", lambda: cpus)
    rng = np.random.default_rng(5)
    unit = [{"qpos": np.cumsum(rng.normal(size=(40, 19)), axis=0)} for _ in range(300)]
    for batch in (unit, _payloads()):
        got = Packing(batch).result()
        assert [(b"".join(bytes(memoryview(x)) for x in parts), digest) for parts, digest in got] == [
            _reference(p) for p in batch
        ]
