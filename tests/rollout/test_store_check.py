"""`policylab store check [--repair]` on real stores written by `ensure` (Lava Leap training runs):
tampered and deleted payloads, orphans and temp files are found; repair removes exactly the
damaged rows, and the next run plays exactly those rollouts again, to the store an undamaged run
wrote."""

from __future__ import annotations

import contextlib
import io
import os
import shutil

from policylab.cli import invoke
from policylab.rollout.ensure import EnsureStats, ensure
from policylab.rollout.store import Store
from policylab.rollout.store_check import check_store
from tests.rollout.test_ensure import _plan
from policylab.studies.lava_leap import runs


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
    dead = f".x.pack.{2 ** 22 + 12345}-1-0.tmp"  # above the kernel's default pid_max: no live writer has it
    (damaged / "units" / dead).write_bytes(b"partial")
    lost = sorted(k for k, r in records.items() if r.payload_path in (flipped.payload_path, deleted.payload_path))

    found = check_store(damaged)
    assert [d["key"] for d in found["damaged"]] == lost
    assert found["orphans"] == ["units/0123.pack"] and found["temp_files"] == [
        {"path": f"units/{dead}", "writer_gone": True}]
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
