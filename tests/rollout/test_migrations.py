"""`rollout.migrations`, what reads a store's older forms: records stored under a former key version are
found through `ensure` and nothing runs again, and a version-1 table and payload folder read as that
version left them (tests/rollout/test_store.py opens, upgrades and packs a whole version-1 store)."""

from __future__ import annotations

import sqlite3

from policylab.rollout import migrations
from policylab.rollout.ensure import EnsureStats, Planned, ensure
from policylab.rollout.store import Store
from policylab.studies.lava_leap import runs
from policylab.studies.lava_leap.config import LavaLeapConfig

CFG = LavaLeapConfig(rounds=140, n_seeds=2)


def test_a_record_stored_under_a_former_key_is_the_rollouts_own_and_nothing_runs(tmp_path):
    former = [runs.planned(CFG, "reinforce", seed) for seed in CFG.seeds]
    now = [  # the same worlds, hashed in a later form that names its version
        Planned(p.study, {**p.world, "key_version": 2}, p.policy, p.protocol, detail=p.detail, former_worlds=(p.world,))
        for p in former
    ]
    with Store(tmp_path / "s") as store:
        stored = ensure(store, former, runs.Runner())
        stats = EnsureStats()
        found = ensure(store, now, runs.Runner(), stats=stats)
        assert stats.ran == 0 and store.keys() == sorted(p.key for p in former)
        assert {p.key: found[q.key] for p, q in zip(former, now)} == stored


def test_the_former_key_found_first_is_taken_and_a_key_without_one_is_left_out():
    present = {"b1", "b2", "c"}
    assert migrations.stored_under_former_keys({"a": ["a0", "b1", "b2"], "x": ["x0"]}, present) == {"a": "b1"}


def test_a_version_1_table_reads_null_offsets_and_gains_the_columns(tmp_path):
    db = sqlite3.connect(tmp_path / "v1.sqlite")
    db.execute("CREATE TABLE rollouts (key TEXT, payload_path TEXT)")
    db.execute("INSERT INTO rollouts VALUES ('k', 'payloads/ab/k.npz')")
    columns = {r[1] for r in db.execute("PRAGMA table_info(rollouts)")}
    select = migrations.row_select(columns, "key, payload_path, payload_offset, payload_length")
    assert db.execute(f"SELECT {select} FROM rollouts").fetchall() == [("k", "payloads/ab/k.npz", None, None)]
    db.executescript(migrations.upgrade_sql(columns))
    upgraded = {r[1] for r in db.execute("PRAGMA table_info(rollouts)")}
    assert migrations.upgrade_sql(upgraded) == "" and migrations.upgrade_sql(set()) == ""
    assert migrations.row_select(upgraded, "payload_offset, payload_length") == "payload_offset, payload_length"


def test_npz_folders_are_never_reached_through_a_link(tmp_path):
    (tmp_path / "s" / "payloads" / "ab").mkdir(parents=True)
    (tmp_path / "s" / "payloads" / "ab" / "k.npz").write_bytes(b"")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.npz").write_bytes(b"")
    (tmp_path / "s" / "payloads" / "cd").symlink_to(tmp_path / "elsewhere")
    assert migrations.npz_files(tmp_path / "s") == ["payloads/ab/k.npz"]
