"""The SB3 adapter (`envs/breakout/sb3.py`) against SB3's own `make_atari_env` on ALE, stepped side by side on
the same seeds and random actions: observations, rewards, dones and every info (the terminal observation, the
Monitor's episode) equal on every step, through lost lives, game overs and truncations; and SB3's PPO with a
CnnPolicy trains on it."""

from __future__ import annotations

import cv2
import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.atari_wrappers import EpisodicLifeEnv, FireResetEnv, MaxAndSkipEnv
from stable_baselines3.common.env_util import make_atari_env as sb3_make_atari_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecFrameStack

from policylab.envs.breakout import sb3_kernel
from policylab.envs.breakout.ale_errors import GymError
from policylab.envs.breakout.rom.render import PALETTE
from policylab.envs.breakout.sb3 import make_atari_env
from policylab.errors import BadInput
from policylab.rollout.seeds import named_range

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)
SEEDS = named_range("breakout", "sb3").first(4)


def _lockstep(n_envs: int, steps: int, seed: int, wrapper_kwargs=None, env_kwargs=None) -> dict[str, int]:
    """Step SB3's chain on ALE and the adapter with the same actions (random, FIRE on a tenth of the steps so
    that games go on after lost lives without the wrapper); assert everything equal on every step. Returns how
    many dones, game ends (Monitor episodes) and truncations were met."""
    kw = {"wrapper_kwargs": wrapper_kwargs, "env_kwargs": env_kwargs}
    theirs = sb3_make_atari_env("BreakoutNoFrameskip-v4", n_envs=n_envs, seed=seed, **kw)
    ours = make_atari_env("BreakoutNoFrameskip-v4", n_envs=n_envs, seed=seed, **kw)
    np.testing.assert_array_equal(ours.reset(), theirs.reset())
    rng = np.random.default_rng(seed)
    seen = {"dones": 0, "episodes": 0, "truncations": 0}
    for t in range(steps):
        actions = rng.integers(0, 4, n_envs) if rng.random() < 0.9 else np.ones(n_envs, dtype=np.int64)
        (oa, ra, da, ia), (ob, rb, db, ib) = theirs.step(actions), ours.step(actions)
        for name, x, y in (("obs", oa, ob), ("reward", ra, rb), ("done", da, db)):
            assert y.dtype == x.dtype and y.shape == x.shape, (name, y.dtype, x.dtype)
            np.testing.assert_array_equal(y, x, err_msg=f"step {t}: {name}")
        for i in range(n_envs):
            x, y = dict(ia[i]), dict(ib[i])
            assert y.keys() == x.keys(), (t, i, x.keys(), y.keys())
            if "terminal_observation" in x:
                np.testing.assert_array_equal(y.pop("terminal_observation"), x.pop("terminal_observation"))
            if "episode" in x:
                ex, ey = x.pop("episode"), y.pop("episode")
                assert (ey["r"], ey["l"]) == (ex["r"], ex["l"]), (t, i)
                seen["episodes"] += 1
            assert y == x, (t, i)
            seen["truncations"] += x["TimeLimit.truncated"]
        seen["dones"] += int(da.sum())
    theirs.close()
    return seen


def test_the_default_chain_steps_as_sb3s_on_ale():
    seen = _lockstep(4, 700, SEEDS[0])
    assert seen["dones"] > 50 and seen["episodes"] >= 8, seen  # lost lives and whole games both met


@pytest.mark.parametrize(
    "wrapper_kwargs,env_kwargs",
    [
        ({"noop_max": 0, "terminal_on_life_loss": False, "clip_reward": False}, None),
        ({"frame_skip": 1, "screen_size": 64}, None),
        ({"frame_skip": 3, "noop_max": 7}, {"max_num_frames_per_episode": 400}),
    ],
)
def test_every_wrapper_keyword_steps_as_sb3s_on_ale(wrapper_kwargs, env_kwargs):
    seen = _lockstep(3, 300, SEEDS[1], wrapper_kwargs, env_kwargs)
    assert seen["dones"] > 0
    if env_kwargs:
        assert seen["truncations"] > 0, seen


def test_the_pooled_gray_is_opencvs_for_every_pair_of_colours():
    pooled = np.maximum(PALETTE[:, None, :], PALETTE[None, :, :])
    np.testing.assert_array_equal(sb3_kernel.PAIR_GRAY, cv2.cvtColor(pooled, cv2.COLOR_RGB2GRAY))


def test_ppo_with_a_cnn_policy_trains_on_it():
    env = VecFrameStack(make_atari_env("BreakoutNoFrameskip-v4", n_envs=4, seed=SEEDS[2]), n_stack=4)
    model = PPO("CnnPolicy", env, n_steps=256, batch_size=256, n_epochs=1, seed=0, device="cpu")
    model.learn(2048)
    assert model.num_timesteps == 2048
    assert len(model.ep_info_buffer) > 0  # the Monitor's episodes reached SB3's logger
    obs = env.reset()
    assert obs.shape == (4, 84, 84, 4) and model.predict(obs)[0].shape == (4,)


def test_it_answers_sb3s_questions_as_make_atari_env_does():
    env = make_atari_env(n_envs=2, seed=SEEDS[3], wrapper_kwargs={"frame_skip": 1})
    assert env.env_is_wrapped(Monitor) == [True, True] and env.env_is_wrapped(FireResetEnv) == [True, True]
    assert env.env_is_wrapped(MaxAndSkipEnv) == [False, False]  # frame_skip 1: SB3 leaves it out
    assert env.env_is_wrapped(EpisodicLifeEnv, indices=[1]) == [True]
    assert env.env_method("get_action_meanings") == [["NOOP", "FIRE", "RIGHT", "LEFT"]] * 2
    assert env.get_attr("render_mode") == ["rgb_array"] * 2
    env.reset()
    ale = gym.make("BreakoutNoFrameskip-v4", render_mode="rgb_array")
    ale.reset(seed=0)
    assert [img.shape for img in env.get_images()] == [ale.render().shape] * 2
    with pytest.raises(AttributeError, match="ale"):
        env.get_attr("ale")


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"env_id": "ALE/Breakout-v5"}, "env_id"),
        ({"wrapper_kwargs": {"action_repeat_probability": 0.25}}, "action_repeat_probability"),
        ({"wrapper_kwargs": {"noop": 3}}, "wrapper_kwargs"),
        ({"env_kwargs": {"full_action_space": True}}, "env_kwargs"),
        ({"env_kwargs": {"max_num_frames_per_episode": 30}}, "max_num_frames_per_episode"),
        ({"monitor_dir": "logs"}, "monitor_dir"),
        ({"n_envs": 0}, "n_envs"),
        ({"wrapper_kwargs": {"screen_size": 400}}, "screen_size"),
    ],
)
def test_what_it_cannot_play_is_refused_in_one_line(kwargs, field):
    with pytest.raises(BadInput, match=field) as err:
        make_atari_env(**kwargs)
    assert "\n" not in str(err.value)
    if field == "env_id":
        assert isinstance(err.value, GymError)  # gymnasium.error.Error, as an unknown id is in Gymnasium
