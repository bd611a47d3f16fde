"""The ROM model's parameters (`RomParams`): only what its kernel reads, the frame skip and the sticky-action chance.

Keyed at key version 2; `key_versions.former_physics` gives a world's version-1 physics (docs/design.md, "Key versions")."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from policylab.config import StrictModel
from policylab.hashing import hash_obj

KEY_VERSION = 2
KERNEL_DTYPE = np.dtype([("frameskip", np.int64), ("sticky_prob", np.float64)], align=True)


class RomParams(StrictModel):
    """One ROM world's parameters (without its seed)."""

    name: str = Field("custom", description="preset name: a label, not part of the world (`physics`, `digest`)")
    model: Literal["rom"] = Field(
        "rom",
        description="rom: the cartridge's own frame logic over its RAM (envs/breakout/rom/kernel.py), "
        "ALE's game frame for frame",
    )
    frameskip: int = Field(4, ge=1, le=16, description="frames emulated per agent step")
    sticky_prob: float = Field(0.25, ge=0.0, lt=1.0, description="per-frame chance the previous action repeats (ALE)")

    # Not parameters: what the cartridge fixes, named as `ShadowParams` names them for code that serves both.
    rng: ClassVar[str] = "ale"
    brick_rows: ClassVar[int] = 6
    brick_cols: ClassVar[int] = 18

    def physics(self) -> dict:
        """What the world's key hashes: the fields without the name, and the key version."""
        return {"key_version": KEY_VERSION, **self.model_dump(exclude={"name"})}

    def digest(self) -> str:
        """Content hash of `physics()`, part of every ROM rollout's key."""
        return hash_obj(self.physics())

    def kernel_record(self) -> np.void:
        """The kernel's first argument, one KERNEL_DTYPE record (read as `p.frameskip`, `p.sticky_prob`)."""
        rec = np.zeros((), dtype=KERNEL_DTYPE)
        rec["frameskip"], rec["sticky_prob"] = self.frameskip, self.sticky_prob
        return rec[()]
