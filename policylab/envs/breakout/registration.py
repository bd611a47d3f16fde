"""Where `policylab/Breakout-v5` is registered with Gymnasium, light enough for `import policylab`.

Why a hook: `import policylab` must make `gymnasium.make("policylab/Breakout-v5")` work, yet the command
line (`policylab --help`) must not pay for importing Gymnasium. So `register_on_import()` registers at once
when Gymnasium is already loaded, and otherwise waits for its import (a finder on `sys.meta_path` that
registers right after Gymnasium's own module has run, then removes itself).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

GYM_ID = "policylab/Breakout-v5"
# No spec kwargs: the single env's constructor defaults are v5's (sticky 0.25, frameskip 4, 108,000 frames),
# and `make_vec` hands spec kwargs to the vector env too, whose defaults are those of ale-py's
# `AtariVectorEnv` (no sticky actions, which it does not model).


def register() -> None:
    import gymnasium as gym

    if GYM_ID not in gym.registry:
        gym.register(id=GYM_ID, entry_point="policylab.envs.breakout.ale_compat:BreakoutV5Env",
                     vector_entry_point="policylab.envs.breakout.vector:BreakoutVectorEnv")


class _AfterGymnasium(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `gymnasium` through the other finders, runs it, then registers."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        register()


def register_on_import() -> None:
    if "gymnasium" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
