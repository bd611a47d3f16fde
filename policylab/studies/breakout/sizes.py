"""How big a Breakout episode record is, per agent step, and how many shadow seeds one unit of work
packs: what the runner stores and batches by, and what the request models size a run by before
anything heavy is imported (this module reads only the contract's and the RAM's constants)."""

from __future__ import annotations

from policylab.envs.breakout.contract import N_FEATURES
from policylab.envs.breakout.ram import RAM_N

SHADOW_BATCH = 256  # seeds per shadow unit: a unit takes ~0.1 s in the fused loop, so units pipeline with the
# store's writer and spread over workers; larger batches gain nothing, since no Python runs per agent step


# What an agent step adds to an episode as the store writes it (deflated): measured 6.0 bytes (shadow,
# breakout_policy_v3, 512 episodes of up to 1,800 steps), 6.8 (64 of up to 600) and 16.6 (ALE, 8 of up
# to 1,800): the features change little from step to step and the RAM less.
STORED_STEP_BYTES = {"shadow": 7, "ale": 20}
RECORD_BYTES = 2048  # an episode's row in index.sqlite with its index entries (measured ~1.7 kB)


def step_bytes(env: str) -> int:
    """Payload bytes an agent step adds to an episode record in memory: obs float32, action and policy
    action int8, reward float32, and on ALE the RAM (what `Request.needs()` sizes memory by)."""
    return N_FEATURES * 4 + 1 + 1 + 4 + (RAM_N if env == "ale" else 0)  # the RAM, stored with every ALE step


def stored_episode_bytes(env: str, max_steps: int) -> int:
    """Disk an episode takes in the store when it plays to `max_steps` (one that ends sooner takes
    less): its deflated payload and its row. What `Request.needs()` sizes disk by: the arrays in
    memory (`step_bytes`) are 6 to 10 times what the store writes of them."""
    return (max_steps + 1) * STORED_STEP_BYTES[env] + RECORD_BYTES
