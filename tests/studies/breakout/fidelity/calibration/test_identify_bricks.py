"""ALE's brick collision as decoded from the committed RAM traces: the line of the ball that selects the
removed brick, the colliding lines of a brick band, and the rearm rule (after a brick, bricks wait for a
paddle or ceiling bounce), plus the shadow kernel applying them."""

import numpy as np
import pytest

from policylab.envs.breakout.contract import NOOP
from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.studies.breakout.fidelity import trace
from policylab.studies.breakout.fidelity.calibration import identify


@pytest.fixture(scope="module")
def suite():
    return trace.load_suite()


def test_a_rising_ball_removes_the_brick_under_line_y_minus_2(suite):
    """Column x and the single line y - 2 of last frame's drawn ball select the removed brick (all but 2 of the
    rising removals); the bottom line of each 6-line band mostly lets the ball pass (solid 5 lines)."""
    bp = identify.identify_brick_probe(suite)
    # docs/breakout.md (brick selection): 286 of 288 rising removals in the committed traces; the claim is
    # "all but 2", the 250 a floor so that it rests on many removals
    assert bp["removals"] >= 250 and bp["selected_by_probe"] >= bp["removals"] - 2
    assert bp["removals_from_above"] > 0  # the ceiling traces also hit bricks from above (not selected this way)
    assert bp["brick_solid_h"] == 5 and bp["hits_by_band_line"][5] * 5 < bp["misses_by_band_line"][5]
    p = load_preset("atari-cal")
    # the shipped preset applies what was just identified: probe line y - 2, one line tall and one px wide,
    # 5 solid lines of the 6-line band (brick_solid_h asserted above)
    assert (p.brick_contact_dy, p.brick_contact_h, p.brick_solid_h, p.brick_contact_w) == (2.0, 1.0, 5.0, 1.0)


def test_bricks_rearm_only_on_a_paddle_or_a_ceiling_bounce(suite):
    """Between two removals of one ball there is always a paddle or a ceiling bounce, and the live bricks the
    ball crosses without a removal are crossed while disarmed (after a brick, before such a bounce)."""
    rearm = identify.identify_brick_rearm(suite)
    assert rearm["holds"] and set(rearm["removal_after"]) == {"paddle", "ceiling"}
    # docs/breakout.md (brick rearm): 294 paddle and 38 ceiling bounces between consecutive removals, never
    # neither (`holds`); the floors keep both kinds of evidence present. 260 of 261 crossings of a live brick
    # without a removal were while disarmed: "> 20x" states the claim (overwhelmingly disarmed), not the count
    assert rearm["removal_after"]["ceiling"] >= 20 and rearm["removal_after"]["paddle"] >= 200
    missed = rearm["missed_live_brick_frames"]
    assert missed["disarmed"] > 20 * missed.get("armed", 0)
    assert load_preset("atari-cal").brick_rearm_on_bounce


def _climb(env, x, y, vy, frames_max=200):
    """Send env 0's ball up from (x, y) with vy; return (bricks removed, lowest y reached) when the first
    brick goes or the ball turns down."""
    before = int(env.bricks(0).sum())
    env.place_ball(0, x, y, 0.0, vy)
    low = y
    for _ in range(frames_max // 4):
        env.step(np.array([NOOP]))
        bx, by, _px, _ = env.positions(0)
        low = min(low, by)
        if int(env.bricks(0).sum()) < before:
            return before - int(env.bricks(0).sum()), low
    return 0, low


@pytest.mark.parametrize("rearm", [True, False])
def test_the_shadow_ball_passes_live_bricks_until_it_rearms(rearm):
    """After a brick, the ALE rule lets the ball cross live bricks (no frame cooldown runs out) until it bounces
    off the ceiling; with the frame cooldown instead, it breaks the next brick on the way up."""
    p = load_preset("atari-cal").model_copy(
        update={"brick_rearm_on_bounce": rearm, "brick_cooldown": 16, "sticky_prob": 0.0, "frameskip": 4}
    )
    env = ShadowBreakout(1, p, seeds=np.array([0]))
    env.reset()
    gone, _ = _climb(env, 60.0, 120.0, -1.0)
    assert gone == 1  # a brick of the bottom row
    gone, low = _climb(env, 60.0, 110.0, -2.0)  # up again at once: no paddle or ceiling bounce in between
    if rearm:
        assert low < p.field_top and gone == 1  # crossed the wall, turned at the ceiling, broke one from above
        assert env.bricks(0)[:, (60 - 8) // 8].sum() == 4  # the bottom-row hole and one brick from the top
        assert env.bricks(0)[0, (60 - 8) // 8] == 0
    else:
        assert gone == 1 and low > p.brick_top  # broke the next brick up once the cooldown ran out


def test_picked_ceiling_games_stay_out_of_the_play_statistics(suite):
    """The two traces whose seeds were picked because the ball got above the wall are evidence only."""
    picked = {
        name for name, (spec, _) in suite.items() if not trace.sampled_policy_trace(spec) and spec.kind == "policy"
    }
    assert picked == set(trace.PICKED_GAMES)
    for name in picked:
        s = trace.signals(suite[name][1]["ram"])
        assert ((s["ball_y"] > 0) & (s["ball_y"] < 57)).sum() > 100
