"""The key versions of shadow Breakout worlds: what a key hashes beyond its current form, and its former forms' physics.

Policy and table: docs/design.md, "Key versions"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LATER_FIELDS = {
    "rng": "splitmix",
    "model": "physics",
}  # `ShadowParams` fields added after stores were keyed, with the value every world had before them

# The physics a version-1 key hashed for a ROM world: `ale-exact` resolved as a `ShadowParams`, without its
# name, at frameskip 4 and sticky_prob 0.25 (`former_physics` puts in the world's own two values). Frozen as
# data, so later changes to `ShadowParams` or its defaults cannot move the version-1 keys.
_ROM_V1_PHYSICS = json.loads((Path(__file__).parent / "key_v1_rom_physics.json").read_text())


def unkeyed_fields(params: Any) -> set[str]:
    """The `LATER_FIELDS` a physics-model world (`ShadowParams`) leaves out of its key: those at the value
    every world had before the field existed."""
    return {k for k, old in LATER_FIELDS.items() if getattr(params, k) == old}


def former_physics(params: Any) -> list[dict]:
    """The physics earlier key versions hashed for a world of either model (`ShadowParams`, `RomParams`),
    so their records are found: a ROM world's version-1 physics; none for a physics world, whose key has
    one form."""
    if params.model != "rom":
        return []
    return [{**_ROM_V1_PHYSICS, "frameskip": params.frameskip, "sticky_prob": params.sticky_prob}]
