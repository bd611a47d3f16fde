"""Shadow Breakout: presets, go-v1 invariants, Atari rules, determinism, batch independence, gym."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from policylab.envs.breakout.contract import FIRE, LEFT, NOOP, RIGHT, F
from policylab.envs.breakout.params import load_preset, preset_names
from policylab.envs.breakout.shadow import GYM_ID, ShadowBreakout
from policylab.errors import BadInput
from policylab.policies.breakout import V3_DEFAULTS, breakout_policy_v3


def play(env: ShadowBreakout, steps: int, policy=None):
    """Run `policy` (default v3) for `steps`; return stacked obs (T+1, N, 9) and rewards (T, N)."""
    obs = env.reset()
    all_obs, rewards = [obs], []
    for _ in range(steps):
        acts = breakout_policy_v3(obs, V3_DEFAULTS) if policy is None else policy(obs)
        obs, rew, _term, _trunc, _ = env.step(acts)
        all_obs.append(obs)
        rewards.append(rew)
    return np.array(all_obs), np.array(rewards)


def test_presets_load_by_name_and_path(tmp_path):
    assert {"atari", "go-v1"} <= set(preset_names())
    atari = load_preset("atari")
    assert (atari.brick_rows, atari.brick_cols, atari.lives, atari.serve_rule) == (6, 18, 5, "fire")
    assert atari.row_points == [7, 7, 4, 4, 1, 1]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({**atari.model_dump(), "name": "mine", "lives": 3}))
    mine = load_preset(str(path))
    assert mine.lives == 3 and mine.name == "mine"
    assert load_preset("atari", sticky_prob=0.0).sticky_prob == 0.0
    assert mine.digest() != atari.digest()


@pytest.mark.parametrize(
    "preset, override, field",
    [
        ("nope", {}, "preset"),
        ("atari", {"lives": 0}, "preset.lives"),
        ("atari", {"bogus": 1}, "preset.bogus"),
        ("atari", {"row_points": [1, 2]}, "preset"),
    ],
)
def test_bad_presets_name_the_field(preset, override, field):
    with pytest.raises(BadInput) as err:
        load_preset(preset, **override)
    assert err.value.field == field


def test_go_v1_reproduces_the_original_invariants():
    """The original Go simulator's: +1 per brick, first reward at step 40, lives run out near 500 steps."""
    n = 20
    env = ShadowBreakout(n, "go-v1", seeds=np.arange(n), max_steps=1800)
    obs, rew = play(env, 1800)
    assert set(np.unique(rew)) <= {0.0, 1.0}
    first = (rew > 0).argmax(axis=0) + 1
    assert (first == 40).all()
    ends = np.array([np.flatnonzero(obs[1:, i, F["lives"]] == 0)[0] + 1 for i in range(n)])
    # The original (v3 in the Go simulator): done after 465-524 steps (mean 489.0 over
    # 6 seeds), always before the 1800-step cap; 6 points ~ 467 steps; scores 6-9 on seeds 0-19, mean 7.2.
    # go-v1 matches the cap, a mean length inside the original's range (501 here), the 6-point length
    # (within 10 steps, 2%) and a mean score within one point (one brick) of 7.2 (6.6 here). It does not
    # match the spread: 5-11 points and 404-766 steps here, each point above 6 adding ~60 steps where
    # the original's added ~17 (7 pts 477-492, 8 pts 499-510, 9 pts 516-524). That is a documented gap
    # (docs/breakout.md, go-v1), so it is not asserted, and no bound is widened to cover it.
    assert (ends < 1800).all() and 465 <= ends.mean() <= 524
    six = ends[env.score == 6]
    assert six.size >= 3 and np.abs(six - 467).max() <= 10
    assert abs(env.score.mean() - 7.2) <= 1.0
    np.testing.assert_array_equal(env.score, rew.sum(axis=0))
    in_play = obs[:, :, F["ball_in_play"]] > 0
    xs = obs[:, :, F["ball_x"]][in_play]
    assert xs.min() == 0.0 and xs.max() == 157.0
    dpx = np.abs(np.diff(obs[:, :, F["paddle_x"]], axis=0))
    assert dpx.max() == 10.0 and np.all(dpx == np.round(dpx))
    for f in ("ball_vx", "ball_vy", "ball_x", "ball_y"):
        vals = obs[:, :, F[f]]
        np.testing.assert_array_equal(vals * 4, np.round(vals * 4))


def test_atari_serves_only_on_fire_and_scores_atari_points():
    env = ShadowBreakout(8, "atari", seeds=np.arange(8))
    obs, rew = play(env, 100, policy=lambda o: np.full(len(o), NOOP))
    assert (obs[:, :, F["ball_in_play"]] == 0).all() and (rew == 0).all()
    obs, rew = play(env, 1500)
    assert (rew > 0).any() and (obs[0, :, F["lives"]] == 5).all()
    np.testing.assert_array_equal(env.score, rew.sum(axis=0))
    points = np.array([7, 7, 4, 4, 1, 1])[:, None]
    for i in range(8):  # every point comes from a removed brick, worth its row's value
        assert env.score[i] == ((1 - env.bricks(i)) * points).sum()


def test_serve_pick_by_frame_follows_the_frame_within_the_agent_step():
    """serve_pick "frame": FIRE on an agent step's first frame is phase 0 for every seed (sticky 0); with
    sticky actions some serves slip to later frames (phases 1-3), each seed's own way; "random" ignores the frame."""
    choices = [(78.0, -1.0), (80.0, 1.0), (142.0, -1.0), (16.0, 1.0)]
    n = 256

    def first_serve_x(pick, sticky):
        p = load_preset("atari-cal", sticky_prob=sticky).model_copy(
            update={"serve_pick": pick, "serve_choices": choices}
        )
        env = ShadowBreakout(n, p, seeds=np.arange(n))
        env.reset()
        env.step(np.full(n, NOOP))  # the sticky rule repeats NOOP, not FIRE
        obs, *_ = env.step(np.full(n, FIRE))
        return obs[:, F["ball_x"]], obs[:, F["ball_in_play"]]

    x, live = first_serve_x("frame", 0.0)
    assert live.all() and set(x) == {78.0 - 3.0}  # served on the step's first frame, then 3 frames left at 1 px
    x, live = first_serve_x("frame", 0.25)
    phases = {78.0 - 3.0: 0, 80.0 + 2.0: 1, 142.0 - 1.0: 2, 16.0: 3}  # served on frame k, moved 3 - k frames
    seen = [phases[v] for v, ok in zip(x, live) if ok]
    counts = np.bincount(seen, minlength=4)
    assert counts[0] / len(seen) == pytest.approx(0.75, abs=0.08) and counts[1] > counts[2] > 0
    x, live = first_serve_x("random", 0.0)
    assert len(set(x[live > 0])) > 1


def test_atari_paddle_stops_at_the_walls_and_moves_about_22px_per_step():
    p = load_preset("atari", sticky_prob=0.0)
    env = ShadowBreakout(1, p, seeds=[0])
    env.reset()
    xs = []
    for a in [RIGHT] * 12 + [LEFT] * 14:
        obs, *_ = env.step(np.array([a]))
        xs.append(obs[0, F["paddle_x"]])
    xs = np.array(xs)
    assert xs.max() == p.paddle_max_x and xs.min() == p.paddle_min_x
    # at full speed a step moves the paddle frameskip (4) x paddle_max_speed (5.8 px/frame, fitted to ALE's
    # random-hold frames, docs/breakout.md) = 23.2 px, drawn on whole pixels (paddle_integer): 23 or 24
    top = p.frameskip * p.paddle_max_speed
    assert np.floor(top) <= np.max(np.abs(np.diff(xs))) <= np.ceil(top)


def test_lives_run_out_and_episode_freezes():
    env = ShadowBreakout(4, load_preset("atari"), seeds=np.arange(4))
    obs = env.reset()
    done = np.zeros(4, dtype=bool)
    for _ in range(3000):  # serve and never move: every ball is lost
        obs, rew, term, trunc, _ = env.step(np.full(4, FIRE))
        done |= term
        if done.all():
            break
    assert done.all() and (env.lives == 0).all()
    before = env.state_bytes()
    obs2, rew2, term2, *_ = env.step(np.full(4, FIRE))
    assert env.state_bytes() == before and (rew2 == 0).all() and term2.all()


def test_truncation_at_max_steps():
    env = ShadowBreakout(3, "atari", seeds=[1, 2, 3], max_steps=5)
    env.reset()
    for t in range(7):
        obs, rew, term, trunc, _ = env.step(np.full(3, NOOP))
        assert trunc.all() == (t >= 4)
    assert (env.steps == 5).all()


def test_same_seeds_same_bytes():
    runs = []
    for _ in range(2):
        env = ShadowBreakout(64, "atari", seeds=np.arange(100, 164))
        obs, rew = play(env, 400)
        runs.append((obs.tobytes(), rew.tobytes(), env.state_bytes()))
    assert runs[0] == runs[1]
    env = ShadowBreakout(64, "atari", seeds=np.arange(200, 264))
    obs, _ = play(env, 400)
    assert obs.tobytes() != runs[0][0]


def test_env_in_a_big_batch_equals_the_same_seed_alone():
    n = 4096
    seeds = np.arange(7, 7 + n)
    big = ShadowBreakout(n, "atari", seeds=seeds)
    obs_big, rew_big = play(big, 300)
    for i in (0, 1234, n - 1):
        alone = ShadowBreakout(1, "atari", seeds=[seeds[i]])
        obs_one, rew_one = play(alone, 300)
        np.testing.assert_array_equal(obs_big[:, i], obs_one[:, 0])
        np.testing.assert_array_equal(rew_big[:, i], rew_one[:, 0])


def test_seed_validation():
    with pytest.raises(BadInput):
        ShadowBreakout(2, "atari", seeds=[1])
    with pytest.raises(BadInput):
        ShadowBreakout(1, "atari", seeds=[-1])
    with pytest.raises(BadInput):
        ShadowBreakout(0, "atari")


def test_render_looks_like_ale():
    env = ShadowBreakout(1, "atari", seeds=[0])
    env.reset()
    env.step(np.array([FIRE]))
    frame = env.render(0)
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    # the colours are ALE's own: the same pixels of real ALE's screen after the same FIRE
    from policylab.envs.breakout.ale import AleBreakout, Protocol

    ale = AleBreakout(Protocol(sticky=0.0), 0)
    ale.reset()
    ale.step(FIRE)
    ref = ale.frame()
    for y, x in ((60, 50), (90, 50), (25, 80)):  # red top brick row, blue bottom row, top wall
        assert tuple(frame[y, x]) == tuple(ref[y, x]), (y, x)
    assert tuple(frame[60, 50]) == (200, 72, 72) and tuple(frame[90, 50]) == (66, 72, 200)
    # the paddle: 16 px wide (2 * ram[108], docs/breakout.md) on its 4 rows 189-192, in the top row's red
    assert (frame[189:193] == (200, 72, 72)).all(axis=-1).sum() == 16 * 4


def test_gym_env_passes_the_checker_and_is_seeded():
    env = gym.make(GYM_ID, preset="go-v1")
    check_env(env.unwrapped)
    o1, _ = env.reset(seed=3)
    traj1 = [env.step(2 if t % 3 else 1)[0] for t in range(50)]
    o2, _ = env.reset(seed=3)
    traj2 = [env.step(2 if t % 3 else 1)[0] for t in range(50)]
    np.testing.assert_array_equal(np.array(traj1), np.array(traj2))
    assert env.observation_space.contains(o1)
    assert env.render().shape == (210, 160, 3)


def test_with_no_preset_the_envs_play_the_commands_default():
    from policylab.envs.breakout.presets import DEFAULT_PRESET
    from policylab.studies.breakout.requests import EvalRequest

    assert DEFAULT_PRESET == "ale-exact" == EvalRequest.model_fields["preset"].default
    assert ShadowBreakout(2).params.name == DEFAULT_PRESET
    env = gym.make(GYM_ID)
    assert env.unwrapped._batch.params.name == DEFAULT_PRESET
    env.reset(seed=5)
    assert env.render().shape == (210, 160, 3)


@pytest.mark.parametrize("preset", preset_names())
def test_the_feature_envs_bounds_hold_for_every_state_played(preset):
    """Random play with frequent serves, restarted at every end: every observation lies inside the declared
    Box (ball beyond the screen's edge, serve jumps in velocity, the shrunken paddle included)."""
    env = gym.make(GYM_ID, preset=preset, max_steps=None)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for t in range(4000):
        obs, _, term, _, _ = env.step(int(rng.choice(4, p=[0.2, 0.3, 0.25, 0.25])))
        assert env.observation_space.contains(obs), (t, obs)
        if term:
            env.reset(seed=t)


def test_a_network_spec_gets_the_runners_observation_from_the_gym_env():
    """net_obs: the Gymnasium env gives the vector NetObserver builds from the batch (scaled history, wall), the
    path the episode runner and the learner feed a network file, not the raw features."""
    from policylab.envs.breakout.net_obs import NetObserver, NetObsSpec

    spec = NetObsSpec(history=3, wall=True)
    env = gym.make(GYM_ID, net_obs={"history": 3, "wall": True})
    batch = ShadowBreakout(1, seeds=[4])
    observer = NetObserver(spec, 1)
    got, _ = env.reset(seed=4)
    want = observer.reset(batch.reset(), batch.walls)[0]
    assert got.shape == (spec.dim,) and np.array_equal(got, want)
    for t in range(300):
        a = 1 if t % 40 == 0 else t % 4
        got = env.step(a)[0]
        want = observer.observe(batch.step(np.array([a]))[0], batch.walls)[0]
        assert np.array_equal(got, want), t
        assert env.observation_space.contains(got), t
