"""The key versions of shadow Breakout worlds, in one place: what a world's key hashes beyond its
current form, and the physics its former forms hashed (docs/design.md, "Key versions").

A physics-model world (`ShadowParams`) has one key form: a field added to the type is left out of the
hash while it holds the value every world had before the field existed (`LATER_FIELDS`,
`unkeyed_fields`), so those worlds keep their digest and their records their keys. A ROM-model world
(`RomParams`) is keyed by its own fields at key version 2; its version-1 physics (every `ShadowParams`
field of ``ale-exact``) is frozen data beside the ROM model, `RomParams.former_physics`. `former_physics`
is what a runner asks, for a world of either model, so that `ensure` finds a record stored under a
former key.
"""

from __future__ import annotations

from typing import Any

LATER_FIELDS = {
    "rng": "splitmix",
    "model": "physics",
}  # `ShadowParams` fields added after stores were keyed, with the value every world had before them


def unkeyed_fields(params: Any) -> set[str]:
    """The `LATER_FIELDS` a physics-model world (`ShadowParams`) leaves out of its key: those at the value
    every world had before the field existed."""
    return {k for k, old in LATER_FIELDS.items() if getattr(params, k) == old}


def former_physics(params: Any) -> list[dict]:
    """The physics earlier key versions hashed for a world of either model (`ShadowParams`, `RomParams`),
    so their records are found: a ROM world's version-1 physics; none for a physics world, whose key has
    one form."""
    return params.former_physics() if params.model == "rom" else []
