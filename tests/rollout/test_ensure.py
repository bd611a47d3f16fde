"""`rollout.ensure`, the one loop that turns planned rollouts into records, on a real runner (Lava
Leap training runs) and a real store: only missing keys run, labels are recorded but not keyed,
an interrupted call resumes to the same store, and the executors give the same records."""

from __future__ import annotations

import pytest

from policylab.rollout.ensure import EnsureStats, Planned, ensure
from policylab.rollout.store import Store
from policylab.studies.lava_leap import runs
from policylab.studies.lava_leap.config import LavaLeapConfig

CFG = LavaLeapConfig(rounds=140, n_seeds=3)


def _plan(label: str = "a") -> list[Planned]:
    out = []
    for algo in ("reinforce", "grpo"):
        for seed in CFG.seeds:
            p = runs.planned(CFG, algo, seed)
            out.append(Planned(p.study, p.world, p.policy, p.protocol, {"name": label}, p.detail))
    return out


def test_only_missing_keys_run_and_labels_are_not_keyed(tmp_path):
    with Store(tmp_path / "s") as store:
        first = EnsureStats()
        records = ensure(store, _plan("a")[:4], runs.Runner(), stats=first)
        assert (first.planned, first.present, first.ran) == (4, 0, 4)
        again = EnsureStats()
        records = ensure(store, _plan("b"), runs.Runner(), stats=again)  # same worlds under another label
        assert (again.planned, again.present, again.ran) == (6, 4, 2)
        assert len(store.keys()) == 6 and len(records) == 6
        labels = sorted(r.data["world"]["name"] for r in records.values())
        assert labels == ["a"] * 4 + ["b"] * 2  # the first writer's label stays; the key ignores it


def test_duplicate_keys_in_one_call_run_once(tmp_path):
    plan = _plan()
    with Store(tmp_path / "s") as store:
        stats = EnsureStats()
        ensure(store, plan + plan, runs.Runner(), stats=stats)
        assert stats.ran == len(plan) and len(store.keys()) == len(plan)


def test_interrupted_call_resumes_to_the_same_store(tmp_path):
    with Store(tmp_path / "whole") as whole:
        ensure(whole, _plan(), runs.Runner())
        expected = whole.fingerprint()
    with Store(tmp_path / "parts") as parts:
        partial = ensure(parts, _plan(), runs.Runner(), max_units=2)
        assert len(partial) == 2 and len(parts.keys()) == 2
        ensure(parts, _plan(), runs.Runner())
        assert parts.fingerprint() == expected


@pytest.mark.parametrize("executor", ["processes"])
def test_executors_write_the_same_records(tmp_path, executor):
    with Store(tmp_path / "local") as a, Store(tmp_path / executor) as b:
        ensure(a, _plan(), runs.Runner())
        ensure(b, _plan(), runs.Runner(), executor=executor, workers=2)
        assert a.fingerprint() == b.fingerprint()
