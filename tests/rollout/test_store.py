"""The store: keys, packed unit files, payload digests over arrays, version-1 stores read and packed,
creation in one transaction (a killed creation completed on open), temp files of killed writers."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.fileio import arrays_to_bytes
from policylab.hashing import FrozenJSON, canonical_json, sha256_hex
from policylab.rollout.payloads import arrays_digest, pack_arrays, unpack_arrays
from policylab.rollout.store import (
    PAGE_SIZE,
    SCHEMA_META,
    SCHEMA_VERSION,
    DamagedPayload,
    Put,
    Store,
    rollout_key,
)

WORLD = {"env": "test-env", "seed": 7, "preset": "p"}
POLICY = {"name": "pol", "params": {"a": 1.0}}
PROTOCOL = {"horizon": 10}


def _items(n, start=0):
    rng = np.random.default_rng(start)
    out = []
    for i in range(start, start + n):
        world = {"env": "e", "seed": i, "mu": 0.1 * i}
        out.append(
            Put(
                rollout_key(world, POLICY, PROTOCOL),
                "t",
                world,
                POLICY,
                PROTOCOL,
                {"status": "failed" if i % 3 else "survived", "t": float(i)},
                {
                    "qpos": np.cumsum(rng.normal(size=(50, 15)), axis=0),
                    "ctrl": rng.normal(size=(49, 8)).astype(np.float32),
                    "done": np.array([i % 2 == 0]),
                },
            )
        )
    return out


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
    rec = store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={"score": 3}, payload=traj)
    assert store.has(key)
    got = store.require(key)
    assert got.outcome == {"score": 3}
    assert got.data["provenance"]["numpy"] == np.__version__
    assert got.payload_sha256 == rec.payload_sha256 == arrays_digest(traj) == got.data["payload_sha256"]
    arrays = store.payload(key)
    for name in traj:
        np.testing.assert_array_equal(arrays[name], traj[name])
        assert arrays[name].dtype == traj[name].dtype
    blob = (tmp_path / "s" / got.payload_path).read_bytes()[
        got.payload_offset : got.payload_offset + got.payload_length
    ]
    assert arrays_digest(unpack_arrays(blob)) == got.payload_sha256
    assert store.schema_version == SCHEMA_VERSION


def test_a_unit_is_one_file_and_rollouts_read_alone(tmp_path):
    items = _items(40)
    with Store(tmp_path / "s") as store:
        assert store.put_many(items[:25]) == 25
        assert store.put_many(items) == 15  # present keys are left untouched, the rest are one more unit
        files = sorted((tmp_path / "s" / "units").iterdir())
        assert len(files) == 2
        for it in reversed(items):
            rec = store.require(it.key)
            assert rec.packed and rec.payload_sha256 == arrays_digest(it.payload)
            got = store.payload(it.key)
            assert all(np.array_equal(got[k], it.payload[k]) for k in it.payload)
    # losslessly smaller than the npz files of version 1 (random-walk trajectories)
    npz = sum(len(arrays_to_bytes(it.payload)) for it in items)
    assert sum(f.stat().st_size for f in files) < npz


def test_a_unit_whose_file_cannot_be_written_commits_no_row(tmp_path):
    items = _items(5)
    with Store(tmp_path / "s") as store:
        (tmp_path / "s" / "units").write_text("a file where the folder of unit files should be")
        with pytest.raises(OSError):
            store.put_many(items)
        assert store.keys() == []  # the rows were inserted beside the write, and rolled back
        (tmp_path / "s" / "units").unlink()
        assert store.put_many(items) == 5 and len(store.keys()) == 5


def test_packed_bytes_are_deterministic_and_lossless():
    a = {
        "b": np.ones((3, 3)),
        "a": np.arange(5),
        "e": np.zeros((0, 4), np.float32),
        "f": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "flag": np.array([True, False]),
    }
    blob, digest = pack_arrays(a)
    assert (blob, digest) == pack_arrays(dict(reversed(list(a.items()))))
    back = unpack_arrays(blob)
    assert sorted(back) == sorted(a) and arrays_digest(back) == digest
    for k in a:
        assert back[k].dtype == a[k].dtype and back[k].shape == a[k].shape and np.array_equal(back[k], a[k])
    changed = dict(a, a=np.arange(5) + 1)
    assert arrays_digest(changed) != digest


def test_a_record_is_the_canonical_json_of_its_data(tmp_path):
    physics = FrozenJSON({"gravity": 9.81, "paddle": [1, 2], "name": "p"})
    world = {"env": "e", "seed": 3, "physics": physics, "unicode": "caf\u00e9"}
    outcome = {"score": float("nan"), "steps": np.int64(7), "nested": {"b": 1, "a": [0.1, None]}}
    with Store(tmp_path / "s") as store:
        key = rollout_key(world, POLICY, PROTOCOL)
        store.put(
            key,
            study="t",
            world=world,
            policy=FrozenJSON(POLICY),
            protocol=PROTOCOL,
            outcome=outcome,
            payload={"x": np.zeros(3)},
        )
        row = store._db.execute("SELECT record FROM rollouts").fetchone()[0]
    data = json.loads(row)
    assert row == canonical_json(data)
    assert data["outcome"] == {"score": None, "steps": 7, "nested": {"a": [0.1, None], "b": 1}}
    assert data["world_hash"] == sha256_hex(canonical_json(world).encode())[:16]
    assert data["policy_hash"] == sha256_hex(canonical_json(POLICY).encode())[:16]


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


@pytest.mark.parametrize("damage", ["flip", "delete", "truncate"])
def test_damaged_payload_is_one_line_naming_the_check_command(tmp_path, damage):
    store = Store(tmp_path / "s")
    items = _items(3)
    store.put_many(items)
    rec = store.require(items[1].key)
    path = tmp_path / "s" / rec.payload_path
    if damage == "flip":
        blob = bytearray(path.read_bytes())
        blob[rec.payload_offset + rec.payload_length - 5] ^= 0x01
        path.write_bytes(bytes(blob))
    elif damage == "delete":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[: rec.payload_offset + 10])
    with pytest.raises(DamagedPayload, match="policylab store check .* --repair") as exc:
        store.payload(items[1].key)
    assert exc.value.key == items[1].key and "\n" not in str(exc.value)
    assert isinstance(exc.value, ValueError)  # BadInput: the CLI prints it as one line and exits 2


def test_index_is_wal_sqlite_and_reopens(tmp_path):
    store = Store(tmp_path / "s")
    key = rollout_key(WORLD, POLICY, PROTOCOL)
    store.put(key, study="t", world=WORLD, policy=POLICY, protocol=PROTOCOL, outcome={"v": 1})
    store.set_meta("grid", {"n": 3})
    store.close()
    with sqlite3.connect(tmp_path / "s" / "index.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
        row = db.execute("SELECT record FROM rollouts WHERE key=?", (key,)).fetchone()
    assert json.loads(row[0])["world"] == WORLD
    again = Store(tmp_path / "s")
    assert again.keys() == [key]
    assert again.get_meta("grid") == {"n": 3}
    assert again.get_meta(SCHEMA_META) == SCHEMA_VERSION
    assert again.has(key) and not again.has("other")


# -- version-1 stores ------------------------------------------------------------------------------
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS rollouts (key TEXT PRIMARY KEY, study TEXT NOT NULL, env TEXT NOT NULL,
    policy TEXT NOT NULL, seed INTEGER NOT NULL, record TEXT NOT NULL, payload_path TEXT, payload_sha256 TEXT);
CREATE INDEX IF NOT EXISTS rollouts_study ON rollouts(study, env, policy);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _v1_store(root, items):
    """A store as version 1 wrote it: one npz per rollout, its sha256 over the file, the path in the record."""
    root.mkdir(parents=True)
    db = sqlite3.connect(root / "index.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(V1_SCHEMA)
    with Store(root / "ref") as ref:  # records as this version writes them, then put in version 1's form
        ref.put_many(items)
        records = {it.key: ref.require(it.key).data for it in items}
    for it in items:
        blob = arrays_to_bytes(it.payload)
        rel = f"payloads/{it.key[:2]}/{it.key}.npz"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(blob)
        data = dict(records[it.key], payload_path=rel, payload_sha256=sha256_hex(blob))
        db.execute(
            "INSERT INTO rollouts VALUES (?,?,?,?,?,?,?,?)",
            (it.key, it.study, "e", "pol", it.world["seed"], json.dumps(data, sort_keys=True), rel, sha256_hex(blob)),
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return records


def test_a_version_1_store_reads_and_packs_into_unit_files(tmp_path):
    items = _items(12)
    root = tmp_path / "v1"
    _v1_store(root, items)
    with Store(root, readonly=True) as store:  # read as it is, not even upgraded
        assert store.schema_version == 1
        rec = store.require(items[0].key)
        assert not rec.packed and rec.payload_sha256 == sha256_hex(arrays_to_bytes(items[0].payload))
        assert rec.digest_of(items[0].payload) == rec.payload_sha256
        assert np.array_equal(store.payload(items[0].key)["qpos"], items[0].payload["qpos"])
    with Store(root) as store:  # opened for writing: upgraded in place, old rows still read, new ones packed
        assert store.schema_version == SCHEMA_VERSION
        assert store._db.execute("PRAGMA page_size").fetchone()[0] == 4096  # SQLite's, as version 1 made it
        store.put_many(_items(2, start=100))
        assert store.require(items[3].key).payload_path.endswith(".npz")
    assert invoke(["store", "pack", str(root)]) == 0
    assert not (root / "payloads").exists()
    with Store(root) as store:
        assert len(store.keys()) == 14 and len(list((root / "units").iterdir())) == 2
        for it in items:
            rec = store.require(it.key)
            assert rec.packed and rec.payload_sha256 == arrays_digest(it.payload) == rec.data["payload_sha256"]
            assert "payload_path" not in rec.data
            got = store.payload(it.key)
            assert all(np.array_equal(got[k], it.payload[k]) for k in it.payload)
    assert invoke(["store", "check", str(root)]) == 0


# -- creation and killed writers ---------------------------------------------------------------------
def test_a_half_created_or_empty_index_is_completed_on_open(tmp_path):
    half = tmp_path / "half"
    half.mkdir()
    with sqlite3.connect(half / "index.sqlite") as db:  # what a kill after the first statement of version 1 left
        db.execute(V1_SCHEMA.split(";")[0])
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "index.sqlite").write_bytes(b"")
    for root in (half, empty):
        with Store(root, readonly=True) as store:  # a reader completes it too: it holds nothing yet
            assert store.keys() == []
        with Store(root) as store:
            store.put_many(_items(2))
            assert len(store.keys()) == 2 and store.schema_version == SCHEMA_VERSION


KILL_DURING_CREATION = """
import os, sys
from pathlib import Path
from policylab.rollout.store import Store
root = Path(sys.argv[1])
for i in range(100000):
    Store(root / str(i)).close()
    print(i, flush=True)
"""


def test_a_store_whose_creation_was_killed_opens(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_DURING_CREATION, str(tmp_path)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    for _ in range(30):  # well into the loop, so the kill lands inside some creation
        proc.stdout.readline()
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    roots = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(roots) >= 30
    for root in roots:
        with Store(root) as store:
            store.put_many(_items(1))
            assert len(store.keys()) == 1


def test_temp_files_of_killed_writers_are_removed_on_open_and_live_ones_kept(tmp_path):
    root = tmp_path / "s"
    with Store(root) as store:
        store.put_many(_items(2))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = [root / "units" / f".abc.pack.{dead_pid}-1-0.tmp", root / f".index.{dead_pid}-2-3.tmp"]
    live = root / "units" / f".def.pack.{os.getpid()}-1-0.tmp"
    for p in stale + [live]:
        p.write_bytes(b"partial")
    with Store(root, readonly=True):
        assert all(p.exists() for p in stale)  # a reader removes nothing
    Store(root).close()
    assert not any(p.exists() for p in stale) and live.exists()


def test_only_plain_temp_files_are_removed_never_a_folder_or_what_a_link_reaches(tmp_path):
    """A folder or a symlink whose name matches a dead writer's temp file is not the store's: opening
    the store keeps it (and does not fail on it), and removes nothing a link points at."""
    root = tmp_path / "s"
    Store(root).close()
    dead_pid = 2**22 + 12345  # above the kernel's default pid_max: no live writer has it
    folder = root / f".notes.{dead_pid}-1-0.tmp"
    folder.mkdir()
    (folder / "mine.txt").write_text("kept")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / f".abc.pack.{dead_pid}-1-0.tmp").write_text("kept too")
    link = root / f".link.{dead_pid}-1-0.tmp"
    link.symlink_to(outside / f".abc.pack.{dead_pid}-1-0.tmp")
    Store(root).close()
    assert (folder / "mine.txt").read_text() == "kept" and link.is_symlink()
    assert (outside / f".abc.pack.{dead_pid}-1-0.tmp").read_text() == "kept too"
