"""The rest of ale-py's single-env API on `policylab/Breakout-v5` and the v4 ids, each against the real ALE on
seeds no other test uses: truncation on the frame the game ends, the screen after `restoreState`, the ids' spec
kwargs (through `make_vec` too), `clone_state`/`restore_state`, `get_keys_to_action`, the `ale` calls
(`getInt`/`setInt`/`loadROM`, `setRAM`, modes, `saveScreenPNG`, `act(Action.FIRE)`), `ALEState`'s
`serialize`/`equals`, and ale-py's exception types."""

from __future__ import annotations

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

import policylab  # noqa: F401  (registers the ids)
from benchmarks.v5_agreement import first_difference
from policylab.envs.breakout.ram import RAM_LIVES
from policylab.envs.breakout.registration import GYM_ID, NO_FRAMESKIP_V4_ID, V4_ID
from policylab.envs.breakout.rom.ale_interface import RomALEState
from policylab.errors import BadInput

gym.register_envs(ale_py)
FIRE_THEN_NOOP = np.array([1] + [0] * 40)  # serves, never moves: a life lost every serve, the game over soon


def _both(env_id_ours: str = GYM_ID, env_id_ale: str = "ALE/Breakout-v5", **kwargs):
    return gym.make(env_id_ours, **kwargs), gym.make(env_id_ale, **kwargs)


def _game_over_frame(seed: int, frameskip: int, sticky: float) -> int:
    """The episode frame on which ALE's game ends under FIRE_THEN_NOOP (no frame cap)."""
    env = gym.make(
        "ALE/Breakout-v5",
        frameskip=frameskip,
        repeat_action_probability=sticky,
        max_num_frames_per_episode=0,
        obs_type="ram",
    )
    env.reset(seed=seed)
    for t in range(100_000):
        _, _, terminated, _, info = env.step(int(FIRE_THEN_NOOP[t % len(FIRE_THEN_NOOP)]))
        if terminated:
            return info["episode_frame_number"]
    raise AssertionError("no game over")


@pytest.mark.parametrize("seed, frameskip, sticky", [(40_013, 1, 0.0), (40_014, 4, 0.25), (40_015, 5, 0.25)])
def test_a_game_ending_on_the_frame_cap_is_terminated_and_truncated_as_on_ale(seed, frameskip, sticky):
    """ALE's `game_truncated()` is the frame count alone: a game over on the very frame that reaches
    `max_num_frames_per_episode` is both terminated and truncated (the env said truncated=False before)."""
    cap = _game_over_frame(seed, frameskip, sticky)
    kwargs = {
        "obs_type": "ram",
        "frameskip": frameskip,
        "repeat_action_probability": sticky,
        "max_num_frames_per_episode": cap,
    }
    assert first_difference(kwargs, seed, 100_000, 0, actions=FIRE_THEN_NOOP) is None
    ours = gym.make(GYM_ID, **kwargs)
    ours.reset(seed=seed)
    t = 0
    while True:
        _, _, terminated, truncated, info = ours.step(int(FIRE_THEN_NOOP[t % len(FIRE_THEN_NOOP)]))
        t += 1
        if terminated or truncated:
            break
    assert terminated and truncated and info["episode_frame_number"] == cap


def test_the_screen_after_restore_state_is_the_last_emulated_frame_as_on_ale():
    """ALE's `restoreState` brings the RAM back but not the screen: `getScreen*` show the last emulated frame
    until the next `act`; then both go on from the restored state."""
    ours, theirs = _both(repeat_action_probability=0.25)
    for e in (ours, theirs):
        e.reset(seed=40_021)
    actions = [1, 2, 2, 3, 0, 3, 1, 2] * 8
    for t, a in enumerate(actions):
        if t == 12:
            snaps = [e.unwrapped.clone_state(include_rng=True) for e in (ours, theirs)]
            screen_at_clone = ours.unwrapped.ale.getScreenRGB()
        for e in (ours, theirs):
            e.step(a)
    last = ours.unwrapped.ale.getScreenRGB()
    assert not np.array_equal(last, screen_at_clone)  # the two differ, so the check below can fail
    for e, s in zip((ours, theirs), snaps):
        e.unwrapped.restore_state(s)
    o, t = ours.unwrapped.ale, theirs.unwrapped.ale
    assert np.array_equal(o.getRAM(), t.getRAM())
    for name in ("getScreenRGB", "getScreenGrayscale", "getScreen"):
        assert np.array_equal(getattr(o, name)(), getattr(t, name)()), name
    assert np.array_equal(o.getScreenRGB(), last)
    o.setRAM(RAM_LIVES, 1), t.setRAM(RAM_LIVES, 1)  # setRAM too leaves the screen; one life left from here
    assert np.array_equal(o.getScreenRGB(), t.getScreenRGB())
    for a in actions * 20:
        x, y = ours.step(a), theirs.step(a)
        assert np.array_equal(x[0], y[0]) and x[1:] == y[1:]
        if x[2]:
            break
    assert x[2] and x[4]["lives"] == 0  # the RAM write was played: the game ended on its one life


def test_the_ids_spec_kwargs_are_ales():
    for ours, theirs in (
        (GYM_ID, "ALE/Breakout-v5"),
        (V4_ID, "Breakout-v4"),
        (NO_FRAMESKIP_V4_ID, "BreakoutNoFrameskip-v4"),
    ):
        assert gym.spec(ours).kwargs == gym.spec(theirs).kwargs, ours
        assert (gym.spec(ours).vector_entry_point is None) == (gym.spec(theirs).vector_entry_point is None), ours


@pytest.mark.parametrize("ours, theirs", [(V4_ID, "Breakout-v4"), (NO_FRAMESKIP_V4_ID, "BreakoutNoFrameskip-v4")])
def test_the_v4_ids_play_as_ales(ours, theirs):
    """v4's own defaults: no sticky actions; frameskip drawn from [2, 5) by the env's generator, or 1."""
    for seed in (40_031, 40_032):
        assert first_difference({"obs_type": "grayscale"}, seed, 300, seed, resets=2, ids=(ours, theirs)) is None


def test_make_vec_of_the_v5_id_gets_v5s_sticky_actions_as_ales():
    """`make_vec` hands the id's spec kwargs to the vector env: repeat_action_probability 0.25, as ALE's id
    hands `AtariVectorEnv` (which built directly has 0)."""
    ours = gym.make_vec(GYM_ID, num_envs=3)
    theirs = gym.make_vec("ALE/Breakout-v5", num_envs=3)
    assert ours.settings.sticky == 0.25
    try:
        (oa, _), (ob, _) = ours.reset(seed=40_041), theirs.reset(seed=40_041)
        assert np.array_equal(oa, ob)
        rng = np.random.default_rng(40_041)
        for t in range(200):
            a = rng.integers(0, 4, 3)
            x, y = ours.step(a), theirs.step(a)
            for k in range(4):
                assert np.array_equal(x[k], y[k]), (t, k)
    finally:
        theirs.close()


def test_keys_to_action_and_map_action_idx_are_ales():
    for kwargs in ({}, {"full_action_space": True}):
        ours, theirs = _both(**kwargs)
        assert ours.unwrapped.get_keys_to_action() == theirs.unwrapped.get_keys_to_action()
    for h in (-1, 0, 1):
        for v in (-1, 0, 1):
            for fire in (False, True):
                assert ours.unwrapped.map_action_idx(h, v, fire) == theirs.unwrapped.map_action_idx(h, v, fire)
    with pytest.raises(AttributeError):
        gym.make(GYM_ID, continuous=True).unwrapped.get_keys_to_action()


def test_the_ale_calls_beyond_the_wrappers_answer_as_ales(tmp_path):
    """getInt/setInt then loadROM (a new seed and frame cap take effect), act with `ale_py.Action` and a
    paddle strength, the action sets, modes and difficulties, saveScreenPNG's pixels."""
    ours, theirs = _both(obs_type="ram")
    o, t = ours.unwrapped.ale, theirs.unwrapped.ale
    for a in (o, t):
        a.setInt("random_seed", 40_051)
        a.setInt("max_num_frames_per_episode", 300)
        a.setFloat("repeat_action_probability", 0.5)
        a.loadROM(ale_py.roms.get_rom_path("breakout"))
    for key in ("random_seed", "max_num_frames_per_episode", "frame_skip", "no_such_key"):
        assert o.getInt(key) == t.getInt(key), key
    assert o.getFloat("repeat_action_probability") == t.getFloat("repeat_action_probability")
    assert o.getMinimalActionSet() == t.getMinimalActionSet() and o.getLegalActionSet() == t.getLegalActionSet()
    assert o.getAvailableModes() == t.getAvailableModes()
    assert o.getAvailableDifficulties() == t.getAvailableDifficulties()
    o.setMode(0), t.setMode(0)
    rng = np.random.default_rng(40_051)
    for k in range(400):
        action = ale_py.Action(int(rng.choice([0, 1, 3, 4, 11, 12])))
        strength = float(rng.uniform(0.2, 1.0))
        assert o.act(action, strength) == t.act(action, strength), k
        assert np.array_equal(o.getRAM(), t.getRAM()), k
        assert (o.game_over(), o.game_truncated(), o.getEpisodeFrameNumber()) == (
            t.game_over(),
            t.game_truncated(),
            t.getEpisodeFrameNumber(),
        ), k
    assert t.game_truncated()  # the cap set through setInt was reached on both
    o.saveScreenPNG(str(tmp_path / "ours.png"))
    t.saveScreenPNG(str(tmp_path / "ale.png"))
    assert np.array_equal(np.asarray(Image.open(tmp_path / "ours.png")), np.asarray(Image.open(tmp_path / "ale.png")))


def test_a_state_serializes_and_compares_as_ales():
    """`serialize()` bytes build the state again (`ALEState(bytes)` / `RomALEState(bytes)`), `equals` and ==
    tell states apart as ALE's do, and a rebuilt state with its stream replays the same steps."""
    ours, theirs = _both(repeat_action_probability=0.25)
    for e in (ours, theirs):
        e.reset(seed=40_061)
        for a in [1, 3, 3, 2, 0] * 4:
            e.step(a)
    o, t = ours.unwrapped.ale, theirs.unwrapped.ale
    so, st = o.cloneState(include_rng=True), t.cloneState(include_rng=True)
    ro, rt = RomALEState(so.serialize()), ale_py.ALEState(st.serialize())
    assert so.equals(ro) == st.equals(rt) is True and (so == ro) == (st == rt) is True
    assert so.equals(o.cloneState()) == st.equals(t.cloneState()) is False  # without the stream: another state
    steps = [[e.step(a) for a in [2, 3, 1, 0] * 10] for e in (ours, theirs)]
    o.restoreState(ro)
    t.restoreState(rt)
    again = [[e.step(a) for a in [2, 3, 1, 0] * 10] for e in (ours, theirs)]
    for x, y in zip(again[0], steps[0]):
        assert np.array_equal(x[0], y[0]) and x[1:] == y[1:]
    for x, y in zip(again[0], again[1]):
        assert np.array_equal(x[0], y[0]) and x[1:] == y[1:]
    assert (ro.getFrameNumber(), ro.getEpisodeFrameNumber()) == (so.getFrameNumber(), so.getEpisodeFrameNumber())
    with pytest.raises(RuntimeError):
        RomALEState(b"not a state")


@pytest.mark.parametrize(
    "kwargs, field, ale_type",
    [
        ({"obs_type": "rgb24"}, "obs_type", gym.error.Error),
        ({"frameskip": 0}, "frameskip", gym.error.Error),
        ({"frameskip": (5, 2)}, "frameskip", gym.error.Error),
        ({"frameskip": 2.5}, "frameskip", gym.error.Error),
        ({"render_mode": "x"}, "render_mode", gym.error.Error),
        ({"mode": 3}, "mode", RuntimeError),
        ({"difficulty": 2}, "difficulty", RuntimeError),
    ],
)
def test_refusals_are_the_exception_types_ale_py_raises(kwargs, field, ale_type):
    """Each is one line naming the field (BadInput) and of the type ale-py raises for it."""
    with pytest.raises(ale_type):
        gym.make("ALE/Breakout-v5", **kwargs)
    with pytest.raises(ale_type) as err:
        gym.make(GYM_ID, **kwargs)
    assert isinstance(err.value, BadInput) and err.value.field == field


def test_what_ale_plays_and_the_model_does_not_is_refused_as_a_runtime_error():
    """Mode 4 and difficulty 1 exist on ALE; the ROM model plays mode 0, difficulty 0 only."""
    ale = gym.make(GYM_ID).unwrapped.ale
    for call, value in ((ale.setMode, 4), (ale.setDifficulty, 1), (ale.setInt, None)):
        with pytest.raises(RuntimeError):
            call(value) if value is not None else call("system_random_seed", 3)
    with pytest.raises(RuntimeError):
        ale.setRAM(128, 0)
    with pytest.raises(RuntimeError):
        ale.loadROM(ale_py.roms.get_rom_path("pong"))
