"""`policylab/Breakout-v5` against the real `ALE/Breakout-v5`: every observation type, frameskips fixed and
drawn, sticky actions, the full action set and the frame cap, equal on every step; its spaces, seeds,
refusals, pickling and the ale-style calls wrappers make."""

from __future__ import annotations

import pickle
import subprocess
import sys

import ale_py
import gymnasium as gym
import numpy as np
import pytest

import policylab  # noqa: F401  (registers policylab/Breakout-v5)
from benchmarks.v5_agreement import first_difference
from policylab.envs.breakout.registration import GYM_ID
from policylab.errors import BadInput

gym.register_envs(ale_py)


@pytest.mark.parametrize("obs_type", ["rgb", "grayscale", "ram"])
@pytest.mark.parametrize("frameskip", [1, 4, 5, (2, 5)])
@pytest.mark.parametrize("sticky", [0.0, 0.25])
def test_every_step_equals_ales(obs_type, frameskip, sticky):
    """Random actions on fresh seeds, two episodes (the second reset without a seed, streams going on):
    observation, reward, terminated, truncated and info equal ALE's after every reset and step."""
    kwargs = {"obs_type": obs_type, "frameskip": frameskip, "repeat_action_probability": sticky}
    for seed in (11, 2**31 + 5):
        assert first_difference(kwargs, seed, max_steps=150, action_seed=seed % 1000, resets=2) is None


def test_full_action_space_and_the_frame_cap_equal_ales():
    """18 actions (FIRE, RIGHT, LEFT combined with UP/DOWN), and truncation mid-step at a frame cap that
    frameskip 5 does not divide, serving often so the game goes on."""
    assert first_difference({"obs_type": "ram", "full_action_space": True, "frameskip": 1}, 3, 600, 3) is None
    serve_and_move = np.array([1, 2, 2, 3, 3, 0, 2, 3])
    assert (
        first_difference(
            {"obs_type": "ram", "max_num_frames_per_episode": 503, "frameskip": 5},
            4,
            200,
            0,
            actions=serve_and_move,
            resets=2,
        )
        is None
    )


def test_continuous_actions_play_as_on_ale():
    """Radius, angle and fire drawn uniformly from the Box (fractional paddle strengths, sticky along with
    their action): RAM, rewards and info equal ALE's on every step; the fractional resistances reach pot
    readings the discrete steps never do."""
    ours = gym.make(GYM_ID, obs_type="ram", continuous=True)
    theirs = gym.make("ALE/Breakout-v5", obs_type="ram", continuous=True)
    assert ours.action_space == theirs.action_space
    rng = np.random.default_rng(5)
    for seed in (1, 2, 3):
        ours.reset(seed=seed)
        theirs.reset(seed=seed)
        for t in range(400):
            a = np.array([rng.uniform(0, 1), rng.uniform(-np.pi, np.pi), rng.uniform(0, 1)], dtype=np.float32)
            x, y = ours.step(a), theirs.step(a)
            assert np.array_equal(x[0], y[0]) and x[1:] == y[1:], (seed, t)
            if x[2] or x[3]:
                break


def test_spaces_meanings_and_info_keys_are_ales():
    for kwargs in ({}, {"obs_type": "grayscale"}, {"obs_type": "ram", "full_action_space": True}):
        ours, theirs = gym.make(GYM_ID, **kwargs), gym.make("ALE/Breakout-v5", **kwargs)
        assert ours.observation_space == theirs.observation_space
        assert ours.action_space == theirs.action_space
        assert ours.unwrapped.get_action_meanings() == theirs.unwrapped.get_action_meanings()
        (_, a), (_, b) = ours.reset(seed=1), theirs.reset(seed=1)
        assert a.keys() == b.keys() == {"lives", "episode_frame_number", "frame_number", "seeds"}


def test_the_ale_calls_wrappers_make_answer_as_ales():
    """lives, getRAM, the screens (into a given buffer too), and cloneState/restoreState: replaying from a
    snapshot gives the same steps again on both."""
    ours, theirs = (
        gym.make(GYM_ID, repeat_action_probability=0.0),
        gym.make("ALE/Breakout-v5", repeat_action_probability=0.0),
    )
    for e in (ours, theirs):
        e.reset(seed=5)
    actions = [1, 2, 2, 3, 0, 3, 1, 2] * 6
    snaps = []
    for t, a in enumerate(actions):
        if t == 10:
            snaps = [e.unwrapped.ale.cloneState() for e in (ours, theirs)]
        for e in (ours, theirs):
            e.step(a)
    for e, s in zip((ours, theirs), snaps):
        e.unwrapped.ale.restoreState(s)
    for a in actions[10:]:
        x, y = ours.step(a), theirs.step(a)
        assert np.array_equal(x[0], y[0]) and x[1:4] == y[1:4]
        o, t = ours.unwrapped.ale, theirs.unwrapped.ale
        assert o.lives() == t.lives()
        assert np.array_equal(o.getRAM(), t.getRAM())
        assert np.array_equal(o.getScreenRGB(), t.getScreenRGB())
        buf_o, buf_t = np.zeros((210, 160), np.uint8), np.zeros((210, 160), np.uint8)
        o.getScreenGrayscale(buf_o)
        t.getScreenGrayscale(buf_t)
        assert np.array_equal(buf_o, buf_t)


def test_an_integer_seed_is_ales_seed():
    """reset(seed=s) reports the words ale-py derives from SeedSequence(s) and plays that game; the same seed
    twice gives the same episode."""
    ours, theirs = gym.make(GYM_ID), gym.make("ALE/Breakout-v5")
    assert ours.reset(seed=123)[1]["seeds"] == theirs.reset(seed=123)[1]["seeds"]
    runs = []
    for _ in range(2):
        ours.reset(seed=9)
        runs.append([ours.step(k % 4)[0].tobytes() for k in range(60)])
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"mode": 4}, "mode"),
        ({"difficulty": 1}, "difficulty"),
        ({"sound_obs": True}, "sound_obs"),
        ({"obs_type": "rgb24"}, "obs_type"),
        ({"frameskip": (5, 2)}, "frameskip"),
        ({"frameskip": 0}, "frameskip"),
        ({"frameskip": 2.5}, "frameskip"),
        ({"repeat_action_probability": 1.5}, "repeat_action_probability"),
    ],
)
def test_what_the_model_cannot_play_is_one_clear_error(kwargs, field):
    with pytest.raises(BadInput) as err:
        gym.make(GYM_ID, **kwargs)
    assert err.value.field == field


def test_human_rendering_is_gymnasiums_window_over_rgb_frames():
    """The env opens no window itself (ale-py's is SDL2's): built directly, "human" is one clear error; through
    gym.make, Gymnasium wraps the rgb_array env in HumanRendering, whose pygame window needs pygame and a
    display (neither is here: its first reset says so)."""
    from policylab.envs.breakout.ale_compat import BreakoutV5Env

    with pytest.raises(BadInput) as err:
        BreakoutV5Env(render_mode="human")
    assert err.value.field == "render_mode"
    with pytest.warns(UserWarning, match="HumanRendering"):
        env = gym.make(GYM_ID, render_mode="human")
    assert isinstance(env, gym.wrappers.HumanRendering) and env.unwrapped.render_mode == "rgb_array"
    try:
        import pygame  # noqa: F401
    except ImportError:
        with pytest.raises(gym.error.DependencyNotInstalled):
            env.reset(seed=0)


def test_the_default_mode_and_difficulty_are_accepted():
    env = gym.make(GYM_ID, mode=0, difficulty=0, render_mode="rgb_array")
    env.reset(seed=0)
    assert env.render().shape == (210, 160, 3)


def test_the_env_pickles_with_its_arguments():
    env = gym.make(GYM_ID, obs_type="ram", frameskip=(2, 5), repeat_action_probability=0.1)
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    assert clone.observation_space == env.observation_space
    a, b = env.unwrapped, clone
    a.reset(seed=3)
    b.reset(seed=3)
    for k in range(40):
        x, y = a.step(k % 4), b.step(k % 4)
        assert np.array_equal(x[0], y[0]) and x[1:] == y[1:]


def test_import_policylab_registers_the_env_without_importing_gymnasium():
    script = (
        "import sys, policylab\n"
        "assert 'gymnasium' not in sys.modules\n"
        "import gymnasium\n"
        "assert 'policylab/Breakout-v5' in gymnasium.registry\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_an_idle_episode_equals_ales_to_the_frame_cap():
    """No serve for 108,000 frames: the game switches to attract mode at frame 65,536 and cycles its colours;
    while the paddle's colour is 0 (256 frames in every 32,768) the kernel's lower field runs a line early, which
    moves the pot reading and the paddle (RAM 70, 72) and the bottom of the screen. Every step equals ALE's
    screen to the cap, where both truncate."""
    assert first_difference({"obs_type": "rgb"}, 0, 27_000, 0, actions=np.array([0])) is None
    env = gym.make(GYM_ID, obs_type="ram")
    env.reset(seed=0)
    for t in range(27_000):
        _, _, terminated, truncated, info = env.step(0)
        assert not terminated and truncated == (t == 26_999)
    assert info["episode_frame_number"] == 108_000


def test_an_async_vector_env_of_it_steps_as_ales():
    """Subprocess workers (the env travels by pickle or is made there): two envs stepped through Gymnasium's
    AsyncVectorEnv equal ALE's envs in a SyncVectorEnv, autoreset included."""
    kwargs = {"obs_type": "ram", "repeat_action_probability": 0.25}
    ours = gym.make_vec(GYM_ID, num_envs=2, vectorization_mode="async", **kwargs)
    theirs = gym.make_vec("ALE/Breakout-v5", num_envs=2, vectorization_mode="sync", **kwargs)
    try:
        x, y = ours.reset(seed=[3, 4]), theirs.reset(seed=[3, 4])
        assert np.array_equal(x[0], y[0])
        rng = np.random.default_rng(1)
        for t in range(300):
            a = rng.integers(0, 4, 2)
            x, y = ours.step(a), theirs.step(a)
            for k in range(4):
                assert np.array_equal(x[k], y[k]), (t, k)
            assert np.array_equal(x[4]["lives"], y[4]["lives"]), t
    finally:
        ours.close()
        theirs.close()
