"""The error types of the ALE-compatible envs: each refusal is a `BadInput` (one line naming the field; the
command line exits 2 on it) that is also the exception class ale-py raises in the same place, so code written
for ale-py (`except gymnasium.error.Error`, `except RuntimeError`) catches ours unchanged."""

from __future__ import annotations

import gymnasium

from policylab.errors import BadInput


class GymError(BadInput, gymnasium.error.Error):
    """Where ale-py raises `gymnasium.error.Error`: its envs' constructor arguments (`obs_type`, `frameskip`,
    `render_mode`), and what the ROM model cannot play."""


class AleRuntimeError(BadInput, RuntimeError):
    """Where ALE's `ALEInterface` raises `RuntimeError`: an invalid game mode or difficulty, a RAM index out of
    bounds, a setting it does not know."""
