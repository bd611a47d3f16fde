"""`policylab/Breakout-v5` in Gymnasium's registry, on `import policylab`, without importing Gymnasium.

Why a hook: `policylab --help` must stay fast, and Gymnasium costs a noticeable import; yet
`gymnasium.make_vec("policylab/Breakout-v5", ...)` must work after a plain `import policylab`, whichever of
the two is imported first. So `import policylab` registers at once when Gymnasium is already loaded, and
otherwise the first import of Gymnasium does it (a finder on `sys.meta_path` that runs `register` right
after Gymnasium's own module has executed).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

GYM_ID = "policylab/Breakout-v5"


def register() -> None:
    import gymnasium as gym

    if GYM_ID not in gym.registry:
        gym.register(id=GYM_ID, entry_point="policylab.envs.breakout.ale_compat:AtariBreakoutEnv",
                     vector_entry_point="policylab.envs.breakout.vector:BreakoutVectorEnv")


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds Gymnasium as the normal path finder does, and wraps its loader to register after it ran."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                register()

            spec.loader.exec_module = exec_module
        return spec


def register_on_import() -> None:
    """Register now if Gymnasium is loaded, else when it is first imported."""
    if "gymnasium" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
