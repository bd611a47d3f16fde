"""policylab: measure control policies honestly."""

__version__ = "0.1.0"

from policylab.envs.breakout.registration import register_on_import as _register_gym_envs

_register_gym_envs()  # gymnasium.make("policylab/Breakout-v5") works after `import policylab`, --help stays light
