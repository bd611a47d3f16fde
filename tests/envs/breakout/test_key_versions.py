"""`envs.breakout.key_versions`, the one place that says what Breakout keys hashed in their former forms: a
field added to `ShadowParams` is keyed only away from the value every world had before it, and a world of
either model names its former physics (tests/envs/breakout/rom/test_params.py pins the ROM model's
version-1 digests; tests/studies/breakout/episodes/test_world_keys.py reads a store written under them)."""

from __future__ import annotations

from policylab.envs.breakout.key_versions import LATER_FIELDS, former_physics, unkeyed_fields
from policylab.envs.breakout.params import load_preset


def test_a_later_field_is_keyed_only_away_from_its_old_value():
    p = load_preset("atari")
    assert unkeyed_fields(p) == set(LATER_FIELDS) and not set(LATER_FIELDS) & set(p.physics())
    ale_rng = load_preset("atari", rng="ale", serve_pick="frame")
    assert unkeyed_fields(ale_rng) == {"model"} and ale_rng.physics()["rng"] == "ale"
    assert ale_rng.digest() != load_preset("atari", serve_pick="frame").digest()


def test_a_physics_world_has_no_former_physics_and_a_rom_world_its_version_1():
    assert former_physics(load_preset("atari")) == []
    (v1,) = former_physics(load_preset("ale-exact", frameskip=2))
    assert v1["frameskip"] == 2 and "key_version" not in v1 and v1["rng"] == "ale"
