"""Registers `policylab/Breakout-v5`, `policylab/Breakout-v4` and `policylab/BreakoutNoFrameskip-v4` with Gymnasium.

Light enough for `import policylab`: docs/breakout.md, "Module notes"."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

GYM_ID = "policylab/Breakout-v5"
V4_ID = "policylab/Breakout-v4"
NO_FRAMESKIP_V4_ID = "policylab/BreakoutNoFrameskip-v4"
SINGLE_ENTRY = "policylab.envs.breakout.ale_compat:BreakoutV5Env"
VECTOR_ENTRY = "policylab.envs.breakout.vector:BreakoutVectorEnv"

# The spec kwargs of ale-py 0.12.1's ids (its registration.py), so that `gym.make` and `gym.make_vec` hand each
# env what ALE's ids hand theirs: v5 also through `make_vec` to the vector env (sticky 0.25, where
# `AtariVectorEnv` built directly has 0); the v4 ids have no vector entry point, as ALE's have none.
SPECS = {
    GYM_ID: dict(
        kwargs=dict(
            game="breakout",
            repeat_action_probability=0.25,
            full_action_space=False,
            frameskip=4,
            max_num_frames_per_episode=108_000,
        ),
        vector_entry_point=VECTOR_ENTRY,
    ),
    V4_ID: dict(
        kwargs=dict(
            game="breakout",
            repeat_action_probability=0.0,
            full_action_space=False,
            frameskip=(2, 5),
            max_num_frames_per_episode=108_000,
        )
    ),
    NO_FRAMESKIP_V4_ID: dict(
        kwargs=dict(
            game="breakout",
            repeat_action_probability=0.0,
            full_action_space=False,
            frameskip=1,
            max_num_frames_per_episode=108_000,
        )
    ),
}


def register() -> None:
    import gymnasium as gym

    for env_id, spec in SPECS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=SINGLE_ENTRY, **spec)


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
