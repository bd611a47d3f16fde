"""How big a Breakout episode record is, per agent step, and how many shadow seeds one unit of work
packs: what the runner stores and batches by, and what the request models size a run by before
anything heavy is imported (this module reads only the contract's constants)."""

from __future__ import annotations

from policylab.envs.breakout.contract import N_FEATURES

SHADOW_BATCH = 256  # seeds per shadow unit: a unit takes ~0.1 s in the fused loop, so units pipeline with the
# store's writer and spread over workers; larger batches gain nothing, since no Python runs per agent step
RAM_BYTES = 128  # the Atari 2600's RAM, stored with every ALE step


def step_bytes(env: str) -> int:
    """Payload bytes an agent step adds to an episode record: obs float32, action and policy action
    int8, reward float32, and on ALE the RAM (what `Request.needs()` sizes runs by)."""
    return N_FEATURES * 4 + 1 + 1 + 4 + (RAM_BYTES if env == "ale" else 0)
