"""The ROM model's parameters hold only what its kernel reads, so its worlds' keys hash only that; the keys
ROM worlds had before (key version 1: every `ShadowParams` field of `ale-exact`) are still derived exactly,
so their stores stay readable (docs/design.md, "Key versions")."""

from __future__ import annotations

import inspect
import re

import pytest

from policylab.envs.breakout.key_versions import former_physics
from policylab.envs.breakout.params import RomParams, ShadowParams, load_preset
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom.params import KERNEL_DTYPE, KEY_VERSION
from policylab.errors import BadInput
from policylab.hashing import hash_obj


def test_the_kernel_reads_exactly_the_record_and_the_record_is_the_parameters():
    read = set(re.findall(r"\bp\.(\w+)", inspect.getsource(rom_kernel)))
    assert read == set(KERNEL_DTYPE.names) == set(RomParams.model_fields) - {"name", "model"}


def test_an_ale_exact_world_is_keyed_by_what_the_kernel_reads():
    p = load_preset("ale-exact")
    assert isinstance(p, RomParams)
    assert p.physics() == {"key_version": KEY_VERSION, "model": "rom", "frameskip": 4, "sticky_prob": 0.25}
    assert load_preset("ale-exact", name="another label").digest() == p.digest()
    assert load_preset("ale-exact", frameskip=1).digest() != p.digest()
    assert load_preset("ale-exact", sticky_prob=0.0).digest() != p.digest()
    rec = p.kernel_record()
    assert (int(rec["frameskip"]), float(rec["sticky_prob"])) == (4, 0.25)


@pytest.mark.parametrize("field", ["lives", "brick_rows", "paddle_width", "rng", "serve_rule"])
def test_a_physics_field_has_no_place_in_a_rom_world(field):
    """The physics fields cannot enter a ROM world, so neither its play nor its key can depend on them."""
    assert field not in RomParams.model_fields
    with pytest.raises(BadInput) as err:
        load_preset("ale-exact", **{field: ShadowParams.model_fields[field].default})
    assert err.value.field == f"preset.{field}"


def test_the_version_1_physics_is_what_version_1_keys_hashed():
    """The digests `ale-exact` had as a `ShadowParams` (pinned before the ROM model got its own type), at the
    default frame skip and at lockstep's frame skip 1 without sticky actions."""
    assert [hash_obj(f) for f in former_physics(load_preset("ale-exact"))] == ["25ee0bba4d4d3d49"]
    lockstep = load_preset("ale-exact", frameskip=1, sticky_prob=0.0)
    assert [hash_obj(f) for f in former_physics(lockstep)] == ["697d8e70c8e68b84"]
    assert former_physics(load_preset("atari-cal")) == []
