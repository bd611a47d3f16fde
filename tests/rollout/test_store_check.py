"""`policylab store check [--repair]` on real stores written by `ensure` (Lava Leap training runs):
tampered and deleted payloads, orphans and temp files are found; repair removes exactly the
damaged rows, and the next run plays exactly those rollouts again, to the store an undamaged run
wrote."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from policylab.cli import invoke
from policylab.errors import BadInput
from policylab.hashing import canonical_json
from policylab.rollout.ensure import EnsureStats, ensure
from policylab.rollout.store import Store
from policylab.rollout.store_check import check_store
from policylab.studies.lava_leap import runs
from tests.rollout.test_ensure import _plan


def _cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = invoke([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_check_finds_and_repair_removes_exactly_the_damage(tmp_path):
    whole = tmp_path / "whole"
    with Store(whole) as store:
        ensure(store, _plan(), runs.Runner())
        expected = store.fingerprint()
        records = {k: store.require(k) for k in store.keys()}
    assert _cli("store", "check", whole)[0] == 0
    damaged = tmp_path / "damaged"
    shutil.copytree(whole, damaged)
    keys = sorted(records)
    flipped, deleted = records[keys[0]], records[keys[3]]
    blob = bytearray((damaged / flipped.payload_path).read_bytes())
    blob[flipped.payload_offset + flipped.payload_length // 2] ^= 0x10
    (damaged / flipped.payload_path).write_bytes(bytes(blob))
    (damaged / deleted.payload_path).unlink()
    (damaged / "units" / "0123.pack").write_bytes(b"an orphan")
    dead = f".x.pack.{2**22 + 12345}-1-0.tmp"  # above the kernel's default pid_max: no live writer has it
    (damaged / "units" / dead).write_bytes(b"partial")
    lost = sorted(k for k, r in records.items() if r.payload_path in (flipped.payload_path, deleted.payload_path))

    found = check_store(damaged)
    assert [d["key"] for d in found["damaged"]] == lost
    assert found["orphans"] == ["units/0123.pack"] and found["temp_files"] == [
        {"path": f"units/{dead}", "writer_gone": True}
    ]
    code, out, _ = _cli("store", "check", damaged)
    assert code == 1 and f"{len(lost)} damaged rows" in out and "--repair" in out

    with Store(damaged, readonly=True) as store:  # what any command reading it says (tests/studies/boundary too)
        try:
            store.payload(flipped.key)
        except ValueError as exc:
            assert f"policylab store check {damaged} --repair" in str(exc)
        else:
            raise AssertionError("a flipped byte went unnoticed")

    code, out, _ = _cli("store", "check", damaged, "--repair")
    assert code == 0 and f"{len(lost)} damaged rows (0 put back by their unit files, {len(lost)} removed)" in out
    assert not (damaged / "units" / "0123.pack").exists() and not (damaged / "units" / dead).exists()
    with Store(damaged) as store:
        assert sorted(set(keys) - set(store.keys())) == lost
        stats = EnsureStats()
        ensure(store, _plan(), runs.Runner(), stats=stats)
        assert stats.ran == len(lost)  # exactly the damaged rollouts again
        assert store.fingerprint() == expected
    assert _cli("store", "check", damaged)[0] == 0


def test_check_reads_a_read_only_store_without_writing(tmp_path):
    root = tmp_path / "s"
    with Store(root) as store:
        ensure(store, _plan()[:2], runs.Runner())
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    assert check_store(root)["damaged"] == []
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before
    assert sorted(os.listdir(root)) == ["index.sqlite", "units"]


# -- the index: damaged, edited, emptied, lost, foreign, read-only -------------------------------------------
def _whole(tmp_path):
    """A store written by a real run, closed (its log checkpointed), and its records."""
    root = tmp_path / "whole"
    with Store(root) as store:
        ensure(store, _plan(), runs.Runner())
        return root, {k: store.require(k) for k in store.keys()}


def _copy(root, to):
    shutil.copytree(root, to)
    return to


def _units(root):
    return {p.name: p.read_bytes() for p in (root / "units").iterdir()}


def _repaired_to(root, records):
    """`store check --repair` rebuilt every record, deleted no unit file, and a check then finds nothing."""
    units = _units(root)
    code, out, err = _cli("store", "check", root, "--repair")
    assert code == 0, (out, err)
    assert _units(root) == units  # nothing that holds a row was deleted
    with Store(root, readonly=True) as store:
        assert {k: store.require(k) for k in store.keys()} == records
    assert _cli("store", "check", root)[0] == 0
    return out


def test_a_flipped_index_page_is_damage_and_repair_rebuilds_the_index(tmp_path):
    root, records = _whole(tmp_path)
    damaged = _copy(root, tmp_path / "damaged")
    index = damaged / "index.sqlite"
    with sqlite3.connect(index) as db:  # the rollouts table's b-tree root page: its first byte is the page's type
        (page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name='rollouts'").fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    data = bytearray(index.read_bytes())
    at = (page - 1) * size + (100 if page == 1 else 0)
    assert data[at] in (0x05, 0x0D)  # an interior or leaf table page
    data[at] ^= 0xFF
    index.write_bytes(bytes(data))
    code, out, err = _cli("store", "check", damaged)
    assert code == 1 and "damaged index: index.sqlite" in out and "Traceback" not in err, (out, err)
    assert "--repair" in out and "0 orphan files" in out
    out = _repaired_to(damaged, records)
    assert (damaged / "index.damaged.sqlite").read_bytes() == bytes(data)  # kept, not deleted


def test_an_edited_record_is_damage_and_repair_puts_the_unit_files_back(tmp_path):
    root, records = _whole(tmp_path)
    edited = _copy(root, tmp_path / "edited")
    key = sorted(records)[2]
    data = json.loads(json.dumps(records[key].data))
    name = sorted(data["outcome"])[0]
    data["outcome"][name] = 0.999 if data["outcome"][name] != 0.999 else 0.5
    with sqlite3.connect(edited / "index.sqlite") as db:  # an outcome changed by hand, the rest as it was
        db.execute("UPDATE rollouts SET record=? WHERE key=?", (canonical_json(data), key))
    db.close()
    code, out, _ = _cli("store", "check", edited)
    assert code == 1 and f"damaged: {key}: its record differs from its unit file's" in out
    assert "1 damaged rows (1 held intact by their unit files, 0 to remove)" in out
    assert "1 damaged rows (1 put back by their unit files, 0 removed)" in _repaired_to(edited, records)


def test_an_emptied_index_is_rebuilt_from_the_unit_files_not_orphaned(tmp_path):
    root, records = _whole(tmp_path)
    emptied = _copy(root, tmp_path / "emptied")
    with sqlite3.connect(emptied / "index.sqlite") as db:
        db.execute("DELETE FROM rollouts")
    db.close()
    code, out, _ = _cli("store", "check", emptied)
    assert code == 1 and f"{len(records)} rollouts missing from the index" in out and "0 orphan files" in out
    _repaired_to(emptied, records)
    lost = _copy(root, tmp_path / "lost")
    (lost / "index.sqlite").unlink()  # no index at all: check still takes the folder
    assert _cli("store", "check", lost)[0] == 1
    _repaired_to(lost, records)


def test_a_deleted_wal_is_recovered_from_the_unit_files(tmp_path):
    root = tmp_path / "live"
    with Store(root) as store:  # open: SQLite's log holds the committed rows, not yet in index.sqlite
        ensure(store, _plan(), runs.Runner())
        records = {k: store.require(k) for k in store.keys()}
        without, with_log = tmp_path / "without-wal", tmp_path / "with-wal"
        for folder in (without, with_log):
            shutil.copytree(root / "units", folder / "units")
            shutil.copy(root / "index.sqlite", folder / "index.sqlite")
        shutil.copy(root / "index.sqlite-wal", with_log / "index.sqlite-wal")
    with Store(with_log, readonly=True) as store:
        assert len(store.keys()) == len(records)  # the log held them all
    with Store(without, readonly=True) as store:
        assert store.keys() == []  # and the index file alone none
    code, out, _ = _cli("store", "check", without)
    assert code == 1 and f"{len(records)} rollouts missing from the index" in out and "0 orphan files" in out
    _repaired_to(without, records)


def test_a_database_that_is_not_a_store_is_refused_untouched(tmp_path):
    folder = tmp_path / "other"
    folder.mkdir()
    with sqlite3.connect(folder / "index.sqlite") as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    db.close()
    before = (folder / "index.sqlite").read_bytes()
    for args in (("store", "check", folder), ("store", "check", folder, "--repair"), ("store", "pack", folder)):
        code, _, err = _cli(*args)
        assert code == 2 and "is not a policylab store index (it holds other tables: notes)" in err, err
    for readonly in (True, False):
        with pytest.raises(BadInput, match="not a policylab store index"):
            Store(folder, readonly=readonly)
    assert (folder / "index.sqlite").read_bytes() == before and os.listdir(folder) == ["index.sqlite"]


def test_a_read_only_store_refuses_a_write_saying_so(tmp_path):
    from tests.studies.boundary.test_store_sharing import _read_only_copy, _without_override

    root, _ = _whole(tmp_path)
    copy = _read_only_copy(root, tmp_path / "archived")
    r = subprocess.run(
        [*_without_override(), sys.executable, "-m", "policylab.cli", "store", "pack", str(copy)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"the store {copy} is read-only" in line


def _first_layout(root):
    """Every unit file of the store rewritten as the first layout (PLU1) wrote it: no records."""
    import struct

    from policylab.rollout import unit_file

    for path in (root / "units").glob("*.pack"):
        data = path.read_bytes()
        n_records, n, _ = struct.unpack("<QQ4s", data[-20:])
        end = len(data) - 20
        path.write_bytes(data[: end - n - n_records] + data[end - n : end] + struct.pack("<Q4s", n, b"PLU1"))
        assert unit_file.parse(path.read_bytes()).records is None


def test_first_layout_unit_files_are_checked_by_their_trailers_and_kept_for_a_rerun(tmp_path):
    root, records = _whole(tmp_path)
    old = _copy(root, tmp_path / "old")
    _first_layout(old)
    assert _cli("store", "check", old)[0] == 0
    key = sorted(records)[1]
    data = json.loads(json.dumps(records[key].data))
    name = sorted(data["outcome"])[0]
    data["outcome"][name] = 0.999 if data["outcome"][name] != 0.999 else 0.5
    with sqlite3.connect(old / "index.sqlite") as db:
        db.execute("UPDATE rollouts SET record=? WHERE key=?", (canonical_json(data), key))
    db.close()
    code, out, _ = _cli("store", "check", old)
    assert code == 1 and f"damaged: {key}: its outcome differs from its unit file's" in out
    units = _units(old)
    code, out, _ = _cli("store", "check", old, "--repair")
    assert code == 0 and "1 removed" in out and "kept: 1 unit files of an older layout" in out
    assert _units(old) == units  # the file still holds the rollout: the next run commits it, nothing runs
    with Store(old) as store:
        stats = EnsureStats()
        ensure(store, _plan(), runs.Runner(), stats=stats)
        assert (stats.adopted, stats.ran) == (1, 0)
        assert store.require(key).outcome == records[key].outcome
