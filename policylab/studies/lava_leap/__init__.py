"""Lava Leap: REINFORCE vs PPO vs GRPO on a toy floor, scored exactly.

A bot walks a 40-tile floor with lava channels, seeing three tiles ahead; it can STEP (+1) or LEAP
(+2 or +3, a coin flip). Every policy is a leap table over 8 sensor patterns, so its expected
score on a floor is computed exactly by dynamic programming, and the best of all 256 deterministic
policies is the ceiling. Modules: `floor` (rules and the generator), `agent` (sensors, policy,
play), `exact` (DP), `simulate` (Monte Carlo), `learners` (REINFORCE, PPO, GRPO), `experiments`
and `walkthrough` (the post's experiments), `charts`, `report`, `checks`, `cli`, `gym_env`.

The choices the spec leaves open - floor generator, REINFORCE baseline, PPO critic, order of
random draws, one shared training generator - are documented in `floor`, `agent` and `learners`
and in README.md.

Importing this package registers the Gymnasium env ``policylab/LavaLeap-v0``.
"""

from policylab.studies.lava_leap.agent import Run, leap_table, play, policy, sensors
from policylab.studies.lava_leap.exact import all_deterministic_policies, evaluate, exact_outcomes
from policylab.studies.lava_leap.floor import EXIT, FLOOR, LEAP, STEP, new_floor
from policylab.studies.lava_leap.gym_env import ENV_ID, register
from policylab.studies.lava_leap.learners import batch, grpo_update, ppo_update, reinforce_update, train
from policylab.studies.lava_leap.simulate import simulate

register()

__all__ = [
    "ENV_ID", "EXIT", "FLOOR", "LEAP", "STEP", "Run", "all_deterministic_policies", "batch", "evaluate",
    "exact_outcomes", "grpo_update", "leap_table", "new_floor", "play", "policy", "ppo_update",
    "reinforce_update", "sensors", "simulate", "train",
]
