"""The key versions of shadow Breakout worlds: what a key hashes beyond its current form, and its former forms' physics.

Policy and table: docs/design.md, "Key versions"."""

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
