"""The store: keys, atomic single writes, payload hashes, resume semantics."""

import json
import sqlite3

import numpy as np
import pytest

from policylab.fileio import arrays_to_bytes
from policylab.hashing import sha256_hex
from policylab.rollout.store import Store, rollout_key

WORLD = {"env": "test-env", "seed": 7, "preset": "p"}
POLICY = {"name": "pol", "params": {"a": 1.0}}
PROTOCOL = {"horizon": 10}


def test_key_depends_on_content_not_order():
    k1 = rollout_key({"env": "e", "seed": 1}, {"name": "p", "params": {"x": 1, "y": 2}}, {"h": 5})
    k2 = rollout_key({"seed": 1, "env": "e"}, {"params": {"y": 2, "x": 1}, "name": "p"}, {"h": 5})
    k3 = rollout_key({"env": "e", "seed": 2}, {"name": "p", "params": {"x": 1, "y": 2}}, {"h": 5})
    assert k1 == k2
    assert k1 != k3


def test_put_get_payload_roundtrip(tmp_path):
    store = Store(tmp_path / "s")
    key = rollout_key(WORLD, POLICY, PROTOCOL)
    traj = {"x": np.arange(12, dtype=np.float64).reshape(6, 2), "r": np.array([0, 1, 0], np.int8)}
    rec = store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL,
                    outcome={"score": 3}, payload=traj)
    assert store.has(key)
    got = store.require(key)
    assert got.outcome == {"score": 3}
    assert got.data["provenance"]["numpy"] == np.__version__
    assert got.payload_sha256 == rec.payload_sha256
    arrays = store.payload(key)
    np.testing.assert_array_equal(arrays["x"], traj["x"])
    np.testing.assert_array_equal(arrays["r"], traj["r"])
    assert sha256_hex((tmp_path / "s" / got.payload_path).read_bytes()) == got.payload_sha256


def test_present_key_is_never_rewritten(tmp_path):
    store = Store(tmp_path / "s")
    key = rollout_key(WORLD, POLICY, PROTOCOL)
    store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={"score": 1})
    store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={"score": 99})
    assert store.require(key).outcome == {"score": 1}
    assert len(store.keys()) == 1


def test_payload_bytes_are_deterministic():
    arrays = {"b": np.ones((3, 3)), "a": np.arange(5)}
    assert arrays_to_bytes(arrays) == arrays_to_bytes(dict(reversed(list(arrays.items()))))


def test_tampered_payload_is_detected(tmp_path):
    store = Store(tmp_path / "s")
    key = rollout_key(WORLD, POLICY, PROTOCOL)
    rec = store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={},
                    payload={"x": np.zeros(4)})
    path = tmp_path / "s" / rec.payload_path
    path.write_bytes(arrays_to_bytes({"x": np.ones(4)}))
    with pytest.raises(ValueError, match="sha256"):
        store.payload(key)


def test_index_is_wal_sqlite_and_reopens(tmp_path):
    store = Store(tmp_path / "s")
    key = rollout_key(WORLD, POLICY, PROTOCOL)
    store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={"v": 1})
    store.set_meta("grid", {"n": 3})
    store.close()
    with sqlite3.connect(tmp_path / "s" / "index.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = db.execute("SELECT record FROM rollouts WHERE key=?", (key,)).fetchone()
    assert json.loads(row[0])["world"] == WORLD
    again = Store(tmp_path / "s")
    assert again.keys() == [key]
    assert again.get_meta("grid") == {"n": 3}
    assert again.has(key) and not again.has("other")
