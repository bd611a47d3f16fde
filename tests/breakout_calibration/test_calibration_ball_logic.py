"""ALE's ball logic as decoded from the committed RAM traces (recorded by `policylab breakout trace`):
fixed-point motion, the speed table by paddle-hit count and section, the section map, the centre nudge,
the brick bitmap, the loss line, and the shadow's `ale` ball rule replaying them."""

import numpy as np
import pytest

from policylab.envs.breakout_shadow_params import load_preset
from policylab.studies.breakout import calibrate as C
from policylab.studies.breakout import trace as tr

@pytest.fixture(scope="module")
def suite():
    return tr.load_suite()

@pytest.fixture(scope="module")
def ball(suite):
    return C.identify_ball(suite)

def test_ball_moves_by_its_fixed_point_velocity_every_frame(suite):
    """x_fixed(t) - x_fixed(t-1) == vx(t) and likewise y, on every in-play frame without a contact."""
    exact = total = 0
    for _, (_, arr) in sorted(suite.items()):
        r = arr["ram"].astype(np.int64)
        x = r[:, tr.RAM_BALL_X] + r[:, tr.RAM_BALL_X_FRAC] / 256.0
        y = r[:, tr.RAM_BALL_Y] + r[:, tr.RAM_BALL_Y_FRAC] / 256.0
        vx, vy = tr.ball_velocity(r)
        live = (r[1:, tr.RAM_BALL_Y] != 0) & (r[:-1, tr.RAM_BALL_Y] != 0)
        steady = live & (vx[1:] == vx[:-1]) & (vy[1:] == vy[:-1])
        ok = (np.diff(x) == vx[1:]) & (np.diff(y) == vy[1:])
        exact += int((ok & steady).sum())
        total += int(steady.sum())
    assert total > 20_000
    assert exact / total > 0.999

def test_speed_table_by_hit_count_and_angle(ball):
    t = ball["hit_speed_table"]
    assert len(t) == 12
    assert t[0] == [1.5, 1.0, 1.0, 1.5]  # hits 1-3: shallow (1.5, 1), steep (1, 1.5)
    assert t[3] == [1.5, 2.0, 0.5, 2.0]  # hits 4-7
    assert t[7] == [2.0, 1.0, 2.0, 1.0]  # hits 8-11: one speed for both angles
    assert t[11] == [2.0, 2.0, 2.0, 2.0]  # 12 and more
    assert ball["top_speed"] == [2.0, 3.375]
    for key, seen in ball["evidence"]["speeds_by_class_angle"].items():
        assert len(seen) == 1, key  # one speed per (hit count, angle): the table is exact

def test_paddle_sections_and_centre_nudge(ball):
    sec = dict(zip(range(ball["bounce_offset_min"], 99), ball["bounce_sections"]))
    assert [sec[o] for o in (-1, 0, 1)] == [-2, -2, -2]  # left edge: shallow left
    assert {sec[o] for o in range(2, 7)} == {-1}  # steep left
    assert {sec[o] for o in range(7, 11)} == {1}  # steep right
    assert {sec[o] for o in range(11, 16)} == {2}  # right edge: shallow right
    assert ball["bounce_nudge_offset"] == 6 and ball["bounce_nudge_px"] == 4.0
    votes = ball["evidence"]["section_votes"]
    assert all(len(v) == 1 for o, v in votes.items() if o not in ("7",))  # every other offset is unanimous

def test_brick_bitmap_decoding_matches_every_removal(suite):
    removals = 0
    for _, (_, arr) in sorted(suite.items()):
        ram = arr["ram"]
        assert tr.brick_flags(ram[1]).all()
        for t in range(2, ram.shape[0]):
            if (ram[t, :30] == ram[t - 1, :30]).all():
                continue
            diff = np.argwhere(tr.brick_flags(ram[t - 1]) != tr.brick_flags(ram[t]))
            assert len(diff) == 1  # one brick per frame
            row, col = diff[0]
            bx = int(ram[t - 1, tr.RAM_BALL_X]) + tr.BALL_X_OFFSET
            by = int(ram[t - 1, tr.RAM_BALL_Y]) + tr.BALL_Y_OFFSET
            assert abs(col - (bx - 8) // 8) <= 1 and abs(row - (by - 1 - 57) // 6) <= 1
            removals += 1
    assert removals > 100

def test_loss_line(ball):
    lost = {int(k): v for k, v in ball["evidence"]["last_y_before_loss"].items()}
    assert ball["lost_y"] == 217.0 and min(lost) == 217 and max(lost) <= 221

def test_ale_ball_rule_replays_far_longer_than_the_legacy_rule(suite):
    cal = load_preset("atari-cal")
    assert cal.ball_rule == "ale"
    new = C.replay_agreement(cal, suite)
    old = C.replay_agreement(cal.model_copy(update={"ball_rule": "legacy"}), suite)
    assert new["paddle_exact_fraction"] == 1.0
    assert new["ball_frames_to_divergence_median"] >= 150
    assert new["ball_frames_to_divergence_median"] > 1.5 * old["ball_frames_to_divergence_median"]

def test_closed_loop_life_length_matches_ale(suite):
    ale = C.ale_trace_stats(suite)
    sh = C.shadow_stats(load_preset("atari-cal"), suite, seeds=32)
    for f in ("steps_per_life", "ball_abs_vx_mean", "ball_abs_vy_mean"):
        assert abs(sh[f] / ale[f] - 1) < 0.1, f

def test_other_presets_keep_the_legacy_ball():
    assert load_preset("atari").ball_rule == "legacy" and load_preset("go-v1").ball_rule == "legacy"
    assert load_preset("atari").hit_speed_table == []


def test_the_top_three_brick_rows_set_the_top_speed(suite):
    """Every brick removal of rows 1-2 (from the top; row 0 is never reached in the traces) by a ball below top
    speed sets ram[107] to class 16 and none of rows 3-5 does: fast_rows = 3, and the shipped preset uses it."""
    fr = C.identify_fast_rows(suite)
    assert fr["fast_rows"] == 3 and fr["consistent"]
    assert sum(fr["triggered_by_row"].values()) >= 5 and set(fr["not_triggered_by_row"]) == {"3", "4", "5"}
    assert load_preset("atari-cal").fast_rows == 3


def test_no_brick_turns_the_ball_sideways(suite):
    """All vx sign flips above the paddle happen with the drawn ball past a side wall (so the shadow's bricks
    only reverse vy)."""
    side = C.identify_brick_side_bounce(suite)
    assert side["vx_flips_above_paddle"] > 100 and side["away_from_walls"] == 0
