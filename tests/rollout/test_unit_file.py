"""Unit files written by workers: through fsspec (local and memory filesystems), the same bytes as
the driver writes, and committed from the file on resume (digests checked) instead of run again."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest

from policylab.hashing import canonical_json
from policylab.rollout import unit_file
from policylab.rollout.ensure import EnsureStats, WrittenUnit, adopt_unit_files, ensure, run_and_write
from policylab.rollout.payloads import pack_arrays
from policylab.rollout.store import Store, frozen_provenance
from policylab.studies.lava_leap import runs
from tests.rollout.test_ensure import _plan

KEYS = ["k1", "k2", "k3"]
OUTCOMES = [{"status": "survived", "t": 1.5}, {"status": "failed", "t": None}, {"x": [1, 2]}]
BLOBS = [pack_arrays({"a": np.arange(5.0)}), None, pack_arrays({"b": np.ones((2, 3), np.float32)})]
RECORDS = ['{"key":"k1","x":1}', '{"key":"k2","x":"a\\nb"}', '{"key":"k3"}']


@pytest.mark.parametrize("base", ["file", "plain", "memory"])
def test_a_unit_file_written_through_fsspec_reads_back(tmp_path, base):
    root = {"file": f"file://{tmp_path}/store", "plain": str(tmp_path / "store"), "memory": "memory://store-test"}[base]
    parts, places = unit_file.encode(KEYS, [canonical_json(o) for o in OUTCOMES], BLOBS, RECORDS)
    rel = unit_file.name(KEYS)
    unit_file.write(root, rel, parts)
    assert unit_file.read(root, rel) == b"".join(parts)
    assert unit_file.parse(unit_file.read(root, rel)) == (
        [[k, o, *(p and (p[1], p[2], p[0]) or (None,) * 3)] for k, o, p in zip(KEYS, OUTCOMES, places)],
        RECORDS,
    )
    fs, path = fsspec.core.url_to_fs(root)
    assert fs.ls(f"{path.rstrip('/')}/units", detail=False) == [f"{path.rstrip('/')}/{rel}"]  # no temp file left
    if base != "memory":
        trailer = unit_file.trailer_of(tmp_path / "store" / rel)
        assert [e[0] for e in trailer] == KEYS and [e[1] for e in trailer] == OUTCOMES
        assert [None if e[2] is None else (e[4], e[2], e[3]) for e in trailer] == places
    assert places[1] is None and places[0][1] == 0 and places[2][1] == len(BLOBS[0][0])


def test_a_worker_writes_its_unit_and_the_driver_commits_the_same_store(tmp_path):
    plan = _plan()
    runner = runs.Runner()
    units = runner.pack(plan)
    with Store(tmp_path / "driver") as driver:
        for unit, work in units:  # what the driver writes for each unit alone
            driver.put_many([p.put(o, payload) for p, (o, payload) in zip(unit, runner.run(work))])
        expected = {k: driver.require(k) for k in driver.keys()}
    with Store(tmp_path / "workers") as store:
        for unit, work in units:
            keys = [p.key for p in unit]
            written = run_and_write((runner.run, work, str(tmp_path / "workers"), unit, frozen_provenance()))
            assert isinstance(written, WrittenUnit) and len(written) == len(unit)
            assert (tmp_path / "workers" / unit_file.name(keys)).read_bytes() == (
                tmp_path / "driver" / unit_file.name(keys)
            ).read_bytes()  # the same bytes, whoever writes
        assert store.keys() == []  # nothing committed yet: these are files of a killed driver
        stats = EnsureStats()
        ensure(store, plan, runner, stats=stats)
        assert (stats.adopted, stats.ran) == (len(plan), 0)  # committed from the files, nothing run again
        assert {k: store.require(k) for k in store.keys()} == expected


def test_a_unit_file_whose_digests_do_not_check_is_run_again(tmp_path):
    plan = _plan()
    runner = runs.Runner()
    units = runner.pack(plan)
    root = tmp_path / "s"
    with Store(root) as store:
        for unit, work in units[:2]:
            run_and_write((runner.run, work, str(root), unit, frozen_provenance()))
        bad = root / unit_file.name([p.key for p in units[0][0]])
        data = bytearray(bad.read_bytes())
        data[len(data) // 3] ^= 0x40
        bad.write_bytes(bytes(data))
        assert adopt_unit_files(store, []) == set()
        stats = EnsureStats()
        ensure(store, plan, runner, stats=stats)
        assert stats.adopted == len(units[1][0]) and stats.ran == len(plan) - stats.adopted
    with Store(tmp_path / "plain") as plain:
        ensure(plain, plan, runner)
        with Store(root) as store:
            assert store.fingerprint() == plain.fingerprint()


def test_the_local_writer_gathers_units_into_files_of_file_rollouts(tmp_path, monkeypatch):
    from policylab.rollout import ensure as ensure_module

    monkeypatch.setattr(ensure_module, "GATHER_S", 1e9)  # gather by count alone: the layout is then fixed
    monkeypatch.setattr(ensure_module, "FILE_ROLLOUTS", 4)
    plan = _plan()
    runner = runs.Runner()
    assert len(runner.pack(plan)) == len(plan) == 6  # one training run per unit
    with Store(tmp_path / "s") as store:
        ensure(store, plan, runner)
        files = sorted((tmp_path / "s" / "units").glob("*.pack"))
        assert len(files) == 2  # 4 + the 2 the end of the run flushed
        assert sorted(len(unit_file.trailer_of(f)) for f in files) == [2, 4]
        with Store(tmp_path / "plain") as plain:
            monkeypatch.setattr(ensure_module, "FILE_ROLLOUTS", 1)
            ensure(plain, plan, runner)
            assert len(list((tmp_path / "plain" / "units").glob("*.pack"))) == 6
            assert plain.fingerprint() == store.fingerprint()
            assert [plain.require(k).data for k in plain.keys()] == [store.require(k).data for k in store.keys()]
