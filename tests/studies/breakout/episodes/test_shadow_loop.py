"""Recording at the simulator's speed changes no record: the fused numba loop equals the Python loop
byte for byte, payloads encode to zipfile's exact bytes, and keys and records built from frozen
parts equal the canonical JSON of the plain ones."""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from dataclasses import replace

import numpy as np
import pytest

from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.params import load_preset
from policylab.fileio import _zipfile_bytes, arrays_to_bytes
from policylab.hashing import FrozenJSON, canonical_json, hash_obj
from policylab.policies.breakout import POLICIES, get_policy
from policylab.rollout.payloads import EncodedArrays, arrays_digest, pack_arrays
from policylab.rollout.store import Record, Store, rollout_key
from policylab.studies.breakout.episodes.runner import EpisodeTask, run_shadow_group, run_unit
from policylab.studies.breakout.search.search_space import random_candidates


def _tasks(policy, preset, serve, steps, groups=2, per=6):
    spec = get_policy(policy)
    protocol = Protocol(max_steps=steps, serve=serve).model_dump()
    shadow = load_preset(preset)
    params = [dict(spec.defaults)] + [{**spec.defaults, **c["params"]} for c in random_candidates(groups - 1, seed=909)]
    return [
        EpisodeTask(
            "shadow", tuple(range(40 + per * k, 40 + per * (k + 1))), policy, params[k], protocol, shadow, preset
        )
        for k in range(groups)
    ]


def _same(a, b):
    for ga, gb in zip(a, b, strict=True):
        for x, y in zip(ga, gb, strict=True):
            assert x.seed == y.seed
            assert canonical_json(x.outcome) == canonical_json(y.outcome)
            assert arrays_to_bytes(x.payload) == arrays_to_bytes(y.payload)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize(
    "preset,serve,steps",
    [("atari-cal", "auto", 700), ("go-v1", "never", 400), ("atari", "never", 300), ("ale-exact", "auto", 400)],
)
def test_fused_loop_equals_the_python_loop(policy, preset, serve, steps):
    tasks = _tasks(policy, preset, serve, steps)
    assert get_policy(policy).tracker is not None  # the built-in policies take the fused loop
    _same(run_shadow_group(tasks), run_shadow_group(tasks, fused=False))


def test_fused_loop_ends_episodes_and_writes_contiguous_payloads():
    (episodes,) = run_shadow_group(_tasks("breakout_policy_v3", "go-v1", "never", 2000, groups=1, per=4))
    for ep in episodes:
        n = ep.outcome["steps"]
        assert ep.outcome["done"] and n < 2000  # one ball each: every episode ends early
        assert ep.payload["obs"].shape == (n + 1, 9) and ep.payload["reward"].shape == (n,)
        assert all(a.flags.c_contiguous for a in ep.payload.values())


def test_a_capture_task_keeps_the_python_loop_and_its_frames():
    (task,) = _tasks("breakout_policy_v3", "atari-cal", "auto", 30, groups=1, per=1)
    (plain,) = run_shadow_group([task])
    (capture,) = run_shadow_group([replace(task, capture_every=10)])
    assert capture[0].payload["frames"].shape[0] == 4
    assert arrays_to_bytes({k: v for k, v in capture[0].payload.items() if k != "frames"}) == arrays_to_bytes(
        plain[0].payload
    )


def test_units_return_encoded_payloads_that_pickle_with_their_bytes():
    tasks = _tasks("breakout_policy_v3", "atari-cal", "auto", 200, groups=1, per=3)
    results = run_unit(tasks)
    for (_outcome, payload), ep in zip(results, run_shadow_group(tasks)[0]):
        assert isinstance(payload, EncodedArrays) and payload.packed == pack_arrays(ep.payload)[0]
        assert payload.digest == arrays_digest(ep.payload)
        again = pickle.loads(pickle.dumps(payload))
        assert again.packed == payload.packed and set(again) == set(ep.payload)
    with pytest.raises(TypeError):
        results[0][1]["obs"] = None


def test_payload_bytes_are_zipfiles_bytes():
    rng = np.random.default_rng(3)
    cases = [
        {},
        {"a": np.zeros(0)},
        {"x": np.float64(2.5)},
        {"b": rng.random((5, 3)), "a": np.arange(7, dtype=np.int8)},
        {"frames": rng.integers(0, 255, (3, 21, 16, 3), dtype=np.uint8)},
        {"f": np.asfortranarray(rng.random((4, 5))), "v": rng.random((10, 9))[:, ::2]},
        {"obs": np.round(rng.normal(size=(301, 9)) * 8).astype(np.float32), "reward": np.zeros(300, np.float32)},
    ]
    for arrays in cases:
        members = []
        for name in sorted(arrays):
            body = io.BytesIO()
            np.lib.format.write_array(body, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            members.append((f"{name}.npy", body.getvalue()))
        blob = arrays_to_bytes(arrays)
        assert blob == _zipfile_bytes(members)
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            assert zf.testzip() is None
        with np.load(io.BytesIO(blob)) as data:
            assert sorted(data.files) == sorted(arrays)


def test_frozen_parts_give_canonical_keys_and_records(tmp_path):
    physics = load_preset("atari-cal").physics()
    world = {"env": "shadow", "physics": FrozenJSON(physics), "seed": 7}
    plain = {**world, "physics": physics}
    policy = FrozenJSON({"name": "p", "params": {"a": 1.5, "b": [1, 2]}})
    protocol = {"max_steps": 10}
    assert canonical_json(world) == canonical_json(plain)
    assert rollout_key(world, policy, protocol) == hash_obj(
        {"world": plain, "policy": dict(policy), "protocol": protocol}, length=32
    )
    with pytest.raises(TypeError):
        policy["name"] = "q"
    assert pickle.loads(pickle.dumps(world["physics"])).canonical == world["physics"].canonical
    with Store(tmp_path / "s") as store:
        key = rollout_key(world, policy, protocol)
        rec = store.put(key, study="t", world=world, policy=policy, protocol=protocol, outcome={"score": 2.0})
        got = store.require(key)
        assert got == rec and got.outcome == {"score": 2.0}
        assert got.data["world"] == json.loads(canonical_json(plain)) and got.data["world_hash"] == hash_obj(plain)
        assert got.data["policy_hash"] == hash_obj(dict(policy))
        row = store._db.execute("SELECT record FROM rollouts").fetchone()[0]
        assert json.loads(row) == got.data and canonical_json(json.loads(row)) == row


def test_records_parse_lazily_and_stay_read_only():
    text = canonical_json({"key": "k", "outcome": {"score": 3, "r": [1, 2]}, "world": {"seed": 1}})
    rec = Record("k", None, "p", "s", text=text)
    assert rec.outcome == {"score": 3, "r": [1, 2]} and rec.data["world"] == {"seed": 1}
    assert rec == Record("k", json.loads(text), "p", "s")
    assert pickle.loads(pickle.dumps(rec)) == rec
    odd = Record("k", None, None, None, text='{"aaa":1,"key":"k","outcome":{"x":1}}')  # not a store's order
    assert odd.outcome == {"x": 1}
    with pytest.raises(AttributeError):
        rec.key = "other"
