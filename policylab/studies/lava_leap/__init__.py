"""Lava Leap: REINFORCE vs PPO vs GRPO on a toy floor, scored exactly (docs/lava_leap.md).

Using any of the package's names (or importing `gym_env`) registers the Gymnasium env ``policylab/LavaLeap-v0``."""

import importlib

# name -> submodule; resolved on first use (PEP 562), so importing the package (as the CLI does for
# its request model in `requests`) loads neither numba nor gymnasium.
_EXPORTS = {
    "Run": "agent",
    "leap_table": "agent",
    "play": "agent",
    "policy": "agent",
    "sensors": "agent",
    "all_deterministic_policies": "exact",
    "evaluate": "exact",
    "exact_outcomes": "exact",
    "EXIT": "floor",
    "FLOOR": "floor",
    "LEAP": "floor",
    "STEP": "floor",
    "new_floor": "floor",
    "ENV_ID": "gym_env",
    "register": "gym_env",
    "batch": "learners",
    "grpo_update": "learners",
    "ppo_update": "learners",
    "reinforce_update": "learners",
    "train": "learners",
}  # `simulate` is both a module and its function: import it from `lava_leap.simulate`
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(f"{__name__}.gym_env")  # registers the env
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
