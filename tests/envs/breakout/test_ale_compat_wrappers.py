"""The ecosystem's Atari wrappers run unchanged on `policylab/Breakout-v5` and see what they see on ALE:
gymnasium's AtariPreprocessing, FrameStackObservation and RecordEpisodeStatistics, SB3's AtariWrapper, and
a CleanRL-style make_env chain (CleanRL is scripts, so its chain is written here as its ppo_atari builds it).
The same chain is built on both ids; every step's output is compared, over episode ends and resets."""

from __future__ import annotations

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.atari_wrappers import (
    AtariWrapper,
    ClipRewardEnv,
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
)

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from policylab.envs.breakout.registration import GYM_ID

gym.register_envs(ale_py)


def _gymnasium_chain(env_id: str) -> gym.Env:
    env = gym.make(env_id, frameskip=1)
    env = gym.wrappers.AtariPreprocessing(env, frame_skip=4, noop_max=30, terminal_on_life_loss=True)
    env = gym.wrappers.FrameStackObservation(env, 4)
    return gym.wrappers.RecordEpisodeStatistics(env)


def _sb3_chain(env_id: str) -> gym.Env:
    return AtariWrapper(gym.make(env_id, frameskip=1, repeat_action_probability=0.0))


def _cleanrl_chain(env_id: str) -> gym.Env:
    """CleanRL ppo_atari's make_env, with the id swapped."""
    env = gym.make(env_id, frameskip=1, repeat_action_probability=0.0)
    env = gym.wrappers.RecordEpisodeStatistics(env)
    env = NoopResetEnv(env, noop_max=30)
    env = MaxAndSkipEnv(env, skip=4)
    env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireResetEnv(env)
    env = ClipRewardEnv(env)
    env = gym.wrappers.ResizeObservation(env, (84, 84))
    env = gym.wrappers.GrayscaleObservation(env)
    return gym.wrappers.FrameStackObservation(env, 4)


def _same(a, b) -> bool:
    """Equal values, but for RecordEpisodeStatistics' wall-clock time `t` (the only value that may differ)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(k == "t" or _same(a[k], b[k]) for k in a)
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("chain", [_gymnasium_chain, _sb3_chain, _cleanrl_chain])
def test_the_wrapped_envs_step_as_on_ale(chain):
    ours, theirs = chain(GYM_ID), chain("ALE/Breakout-v5")
    rng = np.random.default_rng(0)
    resets = 0
    x, y = ours.reset(seed=21), theirs.reset(seed=21)
    assert _same(x[0], y[0]) and _same(x[1], y[1])
    for t in range(600):
        action = int(rng.integers(ours.action_space.n))
        x, y = ours.step(action), theirs.step(action)
        for k in range(5):
            assert _same(x[k], y[k]), (t, k)
        if x[2] or x[3]:
            resets += 1
            x, y = ours.reset(), theirs.reset()
            assert _same(x[0], y[0]) and _same(x[1], y[1]), t
    assert resets >= 1
