"""Breakout policies: control law on hand-made observations, serve rule, registry, params files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from policylab.envs.breakout.contract import FIRE, LEFT, N_FEATURES, NOOP, RIGHT, F
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.errors import BadInput
from policylab.policies.breakout import (
    PLANNER_DEFAULTS,
    POLICIES,
    V3_DEFAULTS,
    V3_SPACE,
    breakout_policy_planner_v1,
    breakout_policy_v3,
    get_policy,
    load_params,
    validate_params,
)


def obs_row(ball_x=80.0, ball_y=120.0, vx=0.0, vy=3.0, in_play=1.0, paddle_x=72.0, width=16.0):
    o = np.zeros((1, N_FEATURES), dtype=np.float32)
    o[
        0,
        [
            F["ball_x"],
            F["ball_y"],
            F["ball_vx"],
            F["ball_vy"],
            F["ball_in_play"],
            F["paddle_x"],
            F["paddle_width"],
            F["lives"],
        ],
    ] = [ball_x, ball_y, vx, vy, in_play, paddle_x, width, 5]
    return o


def v3(o, **kw):
    return int(breakout_policy_v3(o, {**V3_DEFAULTS, **kw})[0])


def test_serve_rule_fire_or_wait():
    o = obs_row(in_play=0.0)
    assert v3(o) == FIRE
    assert int(breakout_policy_v3(o, V3_DEFAULTS, serve=False)[0]) == NOOP
    assert int(breakout_policy_planner_v1(o, PLANNER_DEFAULTS, serve=False)[0]) == NOOP


def test_v3_moves_toward_the_ball_outside_the_deadzone():
    # paddle centre 80; ball centre 81 + lead * vx
    assert v3(obs_row(ball_x=120.0)) == RIGHT
    assert v3(obs_row(ball_x=30.0)) == LEFT
    assert v3(obs_row(ball_x=82.0)) == NOOP  # |err| 3 <= max(far_deadzone, far_cap/2)
    assert v3(obs_row(ball_x=82.0), far_cap=4.0, far_deadzone=0.0) == RIGHT
    # the lead looks ahead: ball at the paddle centre but flying right fast
    assert v3(obs_row(ball_x=79.0, vx=6.0), far_lead=3.0) == RIGHT
    assert v3(obs_row(ball_x=79.0, vx=6.0), far_lead=0.0) == NOOP


def test_v3_regimes_near_and_panic():
    # near: near_cap/2 = 16 -> an error of 10 is tolerated; far with cap 4 it is not
    o = obs_row(ball_x=89.0, ball_y=170.0, vx=0.0, vy=3.0)
    assert v3(o, near_y=165.0, near_cap=32.0, near_deadzone=0.0) == NOOP
    assert v3(o, near_y=175.0, far_cap=4.0, far_deadzone=0.0) == RIGHT
    # panic ignores caps and leads: chase the ball itself with the small deadzone
    o = obs_row(ball_x=89.0, ball_y=185.0, vx=-10.0)
    assert v3(o, panic_y=180.0, near_cap=32.0, near_lead=6.0, near_deadzone=0.0) == RIGHT


def test_planner_targets_the_reflected_landing_point():
    # falling ball at x 140 moving right 4 px/step, 60 steps from the paddle line: bounces off the
    # right wall (150) and lands far left of its current x
    o = obs_row(ball_x=139.0, ball_y=65.0, vx=4.0, vy=2.0, paddle_x=120.0)
    assert int(breakout_policy_planner_v1(o, PLANNER_DEFAULTS)[0]) == LEFT
    assert v3(o) == RIGHT  # the plain tracker follows the ball to the right
    # rising ball: planner falls back to v3 exactly
    batch = np.repeat(obs_row(ball_x=50.0, vy=-3.0), 3, axis=0)
    np.testing.assert_array_equal(
        breakout_policy_planner_v1(batch, PLANNER_DEFAULTS), breakout_policy_v3(batch, V3_DEFAULTS)
    )


def test_registry_and_defaults_in_range():
    assert {"breakout_policy_v3", "breakout_policy_planner_v1", "breakout_policy_training_v1"} <= set(POLICIES)
    for spec in POLICIES.values():
        assert validate_params(spec.name, spec.defaults) == spec.defaults
    assert V3_SPACE["far_cap"] == (4.0, 24.0) and V3_SPACE["panic_y"] == (160.0, 195.0)
    with pytest.raises(BadInput) as err:
        get_policy("nope")
    assert err.value.field == "policy"


def test_params_file_validation(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"params": {f"policy_{k}": v for k, v in V3_DEFAULTS.items()}}))
    assert load_params("breakout_policy_v3", good) == V3_DEFAULTS
    assert load_params("breakout_policy_v3", None) == V3_DEFAULTS
    cases = [
        ({**V3_DEFAULTS, "speed": 1.0}, "params.speed"),
        ({k: v for k, v in V3_DEFAULTS.items() if k != "near_y"}, "params.near_y"),
        ({**V3_DEFAULTS, "far_cap": 30.0}, "params.far_cap"),
        ({**V3_DEFAULTS, "panic_y": "low"}, "params.panic_y"),
        ([1, 2], "params"),
    ]
    for data, field in cases:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data))
        with pytest.raises(BadInput) as err:
            load_params("breakout_policy_v3", bad)
        assert err.value.field == field, data
    with pytest.raises(BadInput) as err:
        load_params("breakout_policy_v3", tmp_path / "missing.json")
    assert err.value.field == "params"


def test_policies_play_the_shadow_game_better_than_idle():
    env = ShadowBreakout(32, "atari", seeds=np.arange(32), max_steps=600)
    scores = {}
    for name in ("breakout_policy_v3", "breakout_policy_planner_v1"):
        spec = get_policy(name)
        obs = env.reset()
        for _ in range(600):
            obs, *_ = env.step(spec(obs))
        scores[name] = env.score.mean()
    obs = env.reset()
    for _ in range(600):
        obs, *_ = env.step(np.where(obs[:, F["ball_in_play"]] > 0, NOOP, FIRE))
    assert min(scores.values()) > 3 * max(env.score.mean(), 1.0)
