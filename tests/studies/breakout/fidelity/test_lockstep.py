"""`policylab breakout lockstep` against the real ALE: a planted difference is reported on the frame and as
the quantity it was planted; the harness's ALE plays the game ALE plays under the default protocol; the
command writes the same bytes twice, refuses bad input, and its page renders its frame strips."""

import json

import numpy as np
import pytest

from policylab.cli import invoke
from policylab.envs.breakout.ale import AleBreakout, Protocol
from policylab.envs.breakout.params import load_preset
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    RAM_BALL_X,
    RAM_BALL_X_FRAC,
    RAM_BALL_Y,
    RAM_BALL_Y_FRAC,
)
from policylab.report.browser import chromium_path, render_check
from policylab.rollout.seeds import seed_range_base
from policylab.studies.breakout.fidelity import trace
from policylab.studies.breakout.fidelity.lockstep import (
    Lockstep,
    lockstep_params,
    plan_episodes,
    summarise,
)

SEED = seed_range_base("breakout", "lockstep")
needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (make setup installs it)")


def _lockstep(kind: str = "v3", preset: str = "atari-cal", max_steps: int = 100) -> Lockstep:
    plan = plan_episodes([kind], 1, SEED, None)[0]
    return Lockstep(plan, lockstep_params(load_preset(preset)), frameskip=4, sticky=0.25, max_steps=max_steps)


def _mid_flight(lk: Lockstep) -> bool:
    s = trace.signals(lk.ale.ram()[None])
    return bool(s["in_play"][0]) and 20 <= s["ball_x"][0] <= 130 and 100 <= s["ball_y"][0] <= 170


def test_a_ball_moved_one_pixel_is_the_first_divergence_on_that_frame():
    natural, run = _lockstep(), 0  # find a frame k well inside a serve's flight (away from walls, bricks and
    while run < 10:  # paddle) that the unperturbed games reach without any divergence
        natural.step()
        assert natural.first is None and not natural.done
        run = run + 1 if _mid_flight(natural) else 0
    k = natural.frame + 1

    planted = _lockstep()
    while planted.frame < k - 1:
        planted.step()
    assert planted.first is None
    ram = planted.ale.ram()  # ALE's exact fixed-point ball after frame k - 1, moved one pixel right
    x = int(ram[RAM_BALL_X]) + ram[RAM_BALL_X_FRAC] / 256 + BALL_X_OFFSET
    y = int(ram[RAM_BALL_Y]) + ram[RAM_BALL_Y_FRAC] / 256 + BALL_Y_OFFSET
    vx, vy = trace.ball_velocity(ram)
    planted.shadow.place_ball(0, x + 1, y, float(vx), float(vy))
    planted.step()
    first = planted.first
    assert first is not None and first["frame"] == k and first["quantity"] == "ball_x", first
    assert first["shadow"] == first["ale"] + 1 and set(first["differing"]) == {"ball_x"}
    while not planted.done:
        planted.step()
    row = planted.row()
    assert row["first_divergence"]["frame"] == k and not row["identical_to_end"]
    assert row["frames"] == planted.frame and row["screen_frames"] == planted.frame + 1  # screens: every frame


@pytest.mark.parametrize("kind", ["v3", "random-actions"])
def test_the_harness_ale_plays_the_default_protocol_game_on_the_same_seed(kind):
    """ALE at frame_skip 1 with the harness's sticky decisions = ALE at frameskip 4, sticky 0.25 on that seed:
    the RAM agrees at every agent step."""
    lk = _lockstep(kind, max_steps=150)
    reference = AleBreakout(Protocol(), lk.plan.seed)
    obs = reference.reset()
    decide = lk.plan.decider()  # a second copy of the episode's policy (random-actions: its own stream again)
    for _ in range(150):
        assert np.array_equal(lk.ale.ram(), reference.ram())
        for _ in range(4):
            if not lk.done:  # the harness stops on ALE's game-over frame
                lk.step()
        action = decide(obs)  # asked every agent step, as the harness does (random-actions draws each time)
        action = action if obs[4] > 0 else 1  # serve auto
        obs, _, done = reference.step(action)
        if done:
            break
    assert np.array_equal(lk.ale.ram(), reference.ram())


def _run(out, *extra) -> int:
    return invoke(
        [
            "breakout",
            "lockstep",
            "--episodes",
            "2",
            "--max-steps",
            "120",
            "--policy",
            "v3",
            "--policy",
            "random-actions",
            "--strips",
            "2",
            "--out",
            str(out),
            *map(str, extra),
        ]
    )


@needs_chromium
def test_command_writes_the_same_bytes_twice_and_its_page_shows_the_strips(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(a, "--preset", "atari") == 0  # the uncalibrated paddle differs at once: strips for both
    assert _run(b, "--preset", "atari") == 0
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert "lockstep.json" in names and "report.html" in names
    for name in names:
        if name != "wallclock.json":
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    data = json.loads((a / "lockstep.json").read_text())
    rows, strips = data["episodes"], data["strips"]
    assert [r["seed"] for r in rows] == [SEED, SEED + 1] and [r["policy"] for r in rows] == ["v3", "random-actions"]
    assert len(strips) == 2 and all((a / s["file"]).is_file() for s in strips)
    assert data["summary"]["episodes"] == 2 and data["summary"]["identical_to_end"] == 0
    assert data["summary"] == summarise(rows, np.zeros(210, dtype=np.int64)) | {
        "screen_difference_bands": data["summary"]["screen_difference_bands"]
    }
    seen = render_check(a / "report.html")
    assert seen["images"] == len(strips) and seen["loaded"] == seen["images"]
    html = (a / "report.html").read_text()
    assert "Divergence classes" in html and all(f'src="{s["file"]}"' in html for s in strips)
    wall = json.loads((a / "wallclock.json").read_text())
    assert wall["frames"] == sum(r["frames"] for r in rows) and wall["frames_per_second"] > 0


def test_pick_params_are_played_and_bad_ones_refused(tmp_path, capsys):
    good = tmp_path / "pick.json"
    params = {
        "far_cap": 6.0,
        "near_cap": 10.0,
        "base_deadzone": 1.0,
        "near_y": 150.0,
        "far_lead": 4.0,
        "near_lead": 2.0,
        "far_deadzone": 1.0,
        "near_deadzone": 0.5,
        "panic_y": 175.0,
    }
    good.write_text(json.dumps({"params": params}))
    out = tmp_path / "ok"
    assert (
        invoke(
            [
                "breakout",
                "lockstep",
                "--episodes",
                "1",
                "--max-steps",
                "2",
                "--policy",
                "pick",
                "--pick-params",
                str(good),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads((out / "lockstep.json").read_text())
    assert data["episodes"][0]["params"] == params and data["pick"]["source"] == "file pick.json"
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**params, "far_cap": 99.0}))
    assert (
        invoke(
            [
                "breakout",
                "lockstep",
                "--episodes",
                "1",
                "--policy",
                "pick",
                "--pick-params",
                str(bad),
                "--out",
                str(tmp_path / "refused"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pick_params.far_cap" in err[0]
    assert not (tmp_path / "refused").exists()
