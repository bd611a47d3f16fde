"""Lava Leap: REINFORCE vs PPO vs GRPO on a toy floor, scored exactly.

A bot walks a 40-tile floor with lava channels, seeing three tiles ahead; it can STEP (+1) or LEAP
(+2 or +3, a coin flip). Every policy is a leap table over 8 sensor patterns, so its expected
score on a floor is computed exactly by dynamic programming, and the best of all 256 deterministic
policies is the ceiling. Modules: `floor` (rules and the generator), `agent` (sensors, policy,
play), `exact` (DP), `simulate` (Monte Carlo), `learners` (REINFORCE, PPO, GRPO), `config` (the
hyperparameters and the fixed inputs), `requests` (the `lava-leap run` request), `runs` (training
runs as store records), `experiments` and `walkthrough` (the post's experiments), `uncertainty`
(t intervals over training seeds, clipped to the range; paired verdicts; the learning-rate
selection and validation), `claims` (the narrative's claims checked over every seed, and the
titles they pick), `checks`,
`records` (how numbers are written into the JSON), `charts` and `report` (the page; `run`,
the command's entry point, is in `report`), `gym_env`.

The choices the spec leaves open - floor generator, REINFORCE baseline, PPO critic, order of
random draws, one shared training generator - are documented in `floor`, `agent` and `learners`
and in README.md.

Using any of the package's names (or importing `gym_env`) registers the Gymnasium env
``policylab/LavaLeap-v0``.
"""

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
