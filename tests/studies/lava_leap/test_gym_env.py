"""The Gymnasium env passes the checker and scores like the study."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import policylab.studies.lava_leap as ll


def test_env_checker_passes():
    env = gym.make(ll.ENV_ID)
    check_env(env.unwrapped)
    env.close()


def test_episode_return_is_final_tile_over_39():
    env = gym.make(ll.ENV_ID)
    floor = ll.new_floor(np.random.default_rng(8))
    for seed in range(20):
        obs, info = env.reset(seed=seed, options={"floor": floor})
        assert obs.tolist() == [0.0, 0.0, 0.0, 1.0]
        total, done, tile = 0.0, False, 0
        rng = np.random.default_rng(seed)
        while not done:
            obs, reward, done, truncated, info = env.step(int(obs[0] == 1.0 or rng.random() < 0.2))
            total += reward
            tile = info["tile"]
            done = done or truncated
        assert total == tile / ll.EXIT
        assert floor[tile] or tile == ll.EXIT
    env.close()
