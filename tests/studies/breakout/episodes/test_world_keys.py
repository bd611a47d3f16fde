"""A world is its resolved parameters: a shadow rollout's key hashes the physics, never the preset's
name, so the same physics under two names is one world, played once."""

import json

from policylab.cli import invoke
from policylab.envs.breakout.ale import Protocol
from policylab.envs.breakout.key_versions import former_physics
from policylab.envs.breakout.params import load_preset
from policylab.hashing import hash_obj
from policylab.policies.breakout import V3_DEFAULTS
from policylab.rollout.store import Store, rollout_key
from policylab.studies.breakout import options
from policylab.studies.breakout.episodes import runner
from policylab.studies.breakout.episodes.runner import EpisodeTask, key_of, planned
from policylab.studies.breakout.requests import DEFAULT_PRESET

PROTOCOL = Protocol(max_steps=60).model_dump()
SMALL = ["--env", "shadow", "--policy", "breakout_policy_v3", "--episodes", "3", "--seed", "5", "--max-steps", "60"]


def _copy_of_atari_cal(tmp_path, name="my-copy"):
    path = tmp_path / "copy.json"
    path.write_text(json.dumps({**load_preset("atari-cal").model_dump(), "name": name}))
    return path


def _task(shadow, preset):
    return EpisodeTask("shadow", (5, 6), "breakout_policy_v3", dict(V3_DEFAULTS), PROTOCOL, shadow, preset)


def test_equal_physics_under_two_names_give_equal_keys_and_keep_their_labels(tmp_path):
    copy = _copy_of_atari_cal(tmp_path)
    a = _task(load_preset("atari-cal"), "atari-cal")
    b = _task(load_preset(copy), str(copy))
    assert a.shadow.name != b.shadow.name and a.shadow.digest() == b.shadow.digest()
    assert [key_of(a, s) for s in a.seeds] == [key_of(b, s) for s in b.seeds]
    assert planned(a, 5).labels["preset"] == "atari-cal" and planned(b, 5).labels["preset"] == str(copy)
    assert "atari-cal" not in json.dumps(runner.world_key(a, 5))  # the name is a label only
    # other physics, other key: sticky given explicitly is part of the world
    c = _task(load_preset("atari-cal", sticky_prob=0.0), "atari-cal")
    assert key_of(c, 5) != key_of(a, 5)
    # a task given only a preset resolves it once, to the same world
    assert key_of(
        EpisodeTask("shadow", (5,), "breakout_policy_v3", dict(V3_DEFAULTS), PROTOCOL, preset="atari-cal"), 5
    ) == key_of(a, 5)


def test_the_store_does_not_replay_the_same_physics_under_another_name(tmp_path, capsys):
    store = tmp_path / "store"
    first, second = tmp_path / "first", tmp_path / "second"
    assert (
        invoke(["breakout", "eval", *SMALL, "--preset", "atari-cal", "--store", str(store), "--out", str(first)]) == 0
    )
    assert "shadow episodes" in capsys.readouterr().err
    before = Store(store).fingerprint()
    copy = _copy_of_atari_cal(tmp_path)
    assert invoke(["breakout", "eval", *SMALL, "--preset", str(copy), "--store", str(store), "--out", str(second)]) == 0
    assert "3 in the store, 0 to run" in capsys.readouterr().err  # nothing had to run
    assert Store(store).fingerprint() == before
    assert (first / "episodes.jsonl").read_bytes() == (second / "episodes.jsonl").read_bytes()
    with Store(store) as s:
        assert {r.data["world"]["preset"] for r in s.records()} == {"atari-cal"}  # the first name's label


def test_tasks_sharing_a_key_in_one_call_play_it_once(tmp_path):
    copy = _copy_of_atari_cal(tmp_path)
    a, b = _task(load_preset("atari-cal"), "atari-cal"), _task(load_preset(copy), "copy")
    with Store(tmp_path / "store") as store:
        records = runner.ensure_episodes(store, [a, b])
        assert len(store.keys()) == 2
        assert records[(0, 5)].key == records[(1, 5)].key
        assert records[(1, 6)].data["world"]["preset"] == "atari-cal"


def test_a_command_resolves_its_preset_once(tmp_path, monkeypatch):
    calls = []
    real = options.load_preset

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(options, "load_preset", counting)
    monkeypatch.setattr(runner, "load_preset", counting)
    assert invoke(["breakout", "eval", *SMALL, "--out", str(tmp_path / "out")]) == 0
    assert calls == [DEFAULT_PRESET]


def _as_key_version_1(fresh: Store, old: Store) -> None:
    """Copy every record of `fresh` (ROM worlds, key version 2) into `old` as the code before version 2 stored
    it: the world's physics every `ShadowParams` field of `ale-exact`, the key hashing that."""
    v1 = former_physics(load_preset("ale-exact"))[0]
    assert hash_obj(v1) == "25ee0bba4d4d3d49"  # ale-exact's digest as a ShadowParams, pinned before version 2
    for r in fresh.records():
        world = r.data["world"]
        assert world["physics"]["key_version"] == 2
        old_world = {"env": "shadow", "physics": v1, "physics_hash": hash_obj(v1), "seed": world["seed"]}
        key = rollout_key(old_world, r.data["policy"], r.data["protocol"])
        old.put(
            key,
            study=r.data["study"],
            world={**old_world, "preset": world["preset"]},
            policy=r.data["policy"],
            protocol=r.data["protocol"],
            outcome=r.outcome,
            payload=fresh.payload(r.key),
        )


def test_a_store_written_under_key_version_1_is_still_read(tmp_path, capsys):
    fresh, old = tmp_path / "fresh", tmp_path / "old"
    assert (
        invoke(
            ["breakout", "eval", *SMALL, "--preset", "ale-exact", "--store", str(fresh), "--out", str(tmp_path / "a")]
        )
        == 0
    )
    with Store(fresh) as f, Store(old) as o:
        _as_key_version_1(f, o)
        before = o.fingerprint()
    capsys.readouterr()
    assert (
        invoke(["breakout", "eval", *SMALL, "--preset", "ale-exact", "--store", str(old), "--out", str(tmp_path / "b")])
        == 0
    )
    assert "3 in the store, 0 to run" in capsys.readouterr().err  # found under the version-1 keys
    with Store(old) as o:
        assert o.fingerprint() == before  # nothing was played or written again
    assert (tmp_path / "a" / "episodes.jsonl").read_bytes() == (tmp_path / "b" / "episodes.jsonl").read_bytes()
