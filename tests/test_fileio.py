"""Packed payloads made in batches (`pack_many`, `EncodedArrays.in_background`) are the bytes
`pack_arrays` makes one by one; a file written from parts (`atomic_write_bytes`) is their join."""

import pickle

import numpy as np

from policylab.fileio import (EncodedArrays, arrays_digest, atomic_write_bytes, pack_arrays, pack_many,
                              unpack_arrays)


def _payloads():
    """Payloads of a few shapes mixed (a unit of fixed-length trajectories, then others), in no order."""
    rng = np.random.default_rng(3)
    same = [{"qpos": np.cumsum(rng.normal(size=(40, 19)), axis=0),
             "ctrl": rng.normal(size=(39, 8)).astype(np.float32), "done": np.array([i % 2 == 0])} for i in range(30)]
    ragged = [{"qpos": rng.normal(size=(n, 3)), "t": np.arange(n)} for n in range(1, 8)]
    odd = [{}, {"e": np.zeros((0, 4), np.float32)}, {"x": np.float64(2.5)}, {"big": np.arange(10, dtype=">f8")},
           {"f": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "s": np.arange(9, dtype=np.int16)[::2]},
           {"obs": rng.integers(0, 200, size=(300, 9)).astype(np.float32), "action": rng.integers(0, 3, 299).astype(np.int8)}]
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


def test_a_file_written_from_parts_is_their_join(tmp_path):
    rng = np.random.default_rng(0)
    parts = [rng.bytes(int(n)) for n in rng.integers(0, 3000, size=2500)]  # more parts than one writev takes
    atomic_write_bytes(tmp_path / "f", parts)
    assert (tmp_path / "f").read_bytes() == b"".join(parts)
    assert [p.name for p in tmp_path.iterdir()] == ["f"]  # no temp file left
