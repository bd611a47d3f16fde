"""`policylab/LavaLeap-v0`: the floor as a Gymnasium environment, for use outside the study.

Observation [lava +1, +2, +3, 1.0]; 0 = STEP, 1 = LEAP; reward final tile / 39 at the end (the study's score)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from policylab.studies.lava_leap.agent import sensors
from policylab.studies.lava_leap.floor import EXIT, FLOOR, LEAP, floor_info, is_valid_floor, new_floor

ENV_ID = "policylab/LavaLeap-v0"


class LavaLeapEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.lava = np.zeros(FLOOR, dtype=bool)
        self.pos = 0

    def _obs(self) -> np.ndarray:
        return sensors(self.lava, self.pos).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        floor = (options or {}).get("floor")
        if floor is not None:
            if not is_valid_floor(floor):
                raise ValueError(
                    "options['floor'] is not a valid floor (40 tiles, widths 1-2, gaps >= 2, tiles 0..4 and 39 safe)"
                )
            self.lava = np.asarray(floor, dtype=bool).copy()
        else:
            self.lava = new_floor(self.np_random)
        self.pos = 0
        return self._obs(), {"layout": floor_info(self.lava)["layout"]}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (STEP) or 1 (LEAP), got {action!r}")
        move = 1 if int(action) != LEAP else (2 if self.np_random.random() < 0.5 else 3)
        self.pos = min(self.pos + move, EXIT)
        terminated = bool(self.lava[self.pos] or self.pos == EXIT)
        reward = self.pos / EXIT if terminated else 0.0
        return self._obs(), float(reward), terminated, False, {"tile": self.pos}

    def render(self):
        if self.render_mode == "ansi":
            row = "".join("#" if x else "." for x in self.lava)
            return row[: self.pos] + "@" + row[self.pos + 1 :]
        return None


def register() -> None:
    """Register ENV_ID with Gymnasium (once per process)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="policylab.studies.lava_leap.gym_env:LavaLeapEnv", max_episode_steps=EXIT)


register()
