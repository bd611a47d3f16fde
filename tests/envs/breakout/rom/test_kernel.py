"""The exact model (`rom.kernel`, preset `ale-exact`) against the real ALE: the whole 128-byte RAM on
every frame of the committed traces, the batch env under the default protocol (RAM, observation, reward, game
over per agent step), the screen pixel for pixel, the collision rows and the pot reading at their boundaries,
the wall refill at 432 points, and the same bytes for the same seeds whatever the batch."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.rom_ale_agreement import pot_readings
from policylab.envs.breakout.ale import AleBreakout, Protocol, frame_emulator, ram_features
from policylab.envs.breakout.contract import FIRE, LEFT, NOOP, RIGHT
from policylab.envs.breakout.ram import (
    RAM_BALL_CLASS,
    RAM_BALL_VX,
    RAM_BALL_VX_FRAC,
    RAM_BALL_VY,
    RAM_BALL_VY_FRAC,
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_FRAME_COUNTER,
    RAM_FRAME_COUNTER_HI,
    RAM_N,
    RAM_PADDLE_X,
    RAM_SCORE_HI,
    RAM_SCORE_LO,
    RAM_SHOW_SCORE,
    RAM_TOP_WALL_HIT,
    RAM_WALL_END,
    RAM_WALL_RIGHT_PF2,
)
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.errors import BadInput
from policylab.policies.breakout import V3_DEFAULTS, breakout_policy_v3
from policylab.rollout.seeds import named_range
from policylab.studies.breakout.fidelity import trace

SEEDS = named_range("breakout", "lockstep").first(3)


def _state(ram) -> np.ndarray:
    row = np.zeros(rom_kernel.NI, dtype=np.int64)
    row[:RAM_N] = ram
    row[rom_kernel.SHOWN] = rom_kernel.drawn_with(row)
    return row


def test_the_reset_ram_is_ales():
    assert np.array_equal(frame_emulator(SEEDS[0]).getRAM(), rom_kernel.RESET_RAM.astype(np.uint8))


@pytest.mark.parametrize("name", sorted(trace.SCENARIOS))
def test_every_committed_trace_is_replayed_byte_for_byte(name):
    """Each trace's recorded per-frame actions give ALE's whole RAM after every frame: serves, the wall-building
    animation, paddle holds, bounces, brick removals and speed-ups, the top wall and the play above the wall."""
    spec, arr = trace.load(trace.TRACE_DIR / f"{name}.npz")
    rams = arr["ram"].astype(np.int64)
    row, pot = _state(rams[0]), rom_kernel.PADDLE_DEFAULT
    for t, action in enumerate(arr["action"]):
        pot = rom_kernel.pot_after(pot, int(action))
        assert rom_kernel.frame(row, pot, action == FIRE) == 0
        assert np.array_equal(row[:RAM_N], rams[t + 1]), (
            name,
            t,
            np.flatnonzero(row[:RAM_N] != rams[t + 1]),
        )


def _play(seeds, steps: int, policy: str):
    """ALE and a batch of the exact model on `seeds`, the same actions (v3 with serve auto, or seeded random
    actions) under the default protocol; asserts equality every agent step, returns the shadow env."""
    proto = Protocol()
    ales = [AleBreakout(proto, s) for s in seeds]
    obs_a = np.stack([a.reset() for a in ales]).astype(np.float32)
    env = ShadowBreakout(len(seeds), "ale-exact", seeds=seeds)
    obs = env.reset()
    assert np.array_equal(obs, obs_a)
    rng = np.random.default_rng(seeds[0])
    done = np.zeros(len(seeds), dtype=bool)
    for t in range(steps):
        if policy == "v3":
            act = breakout_policy_v3(obs, V3_DEFAULTS).astype(np.int64)
            act[obs[:, 4] == 0] = FIRE
        else:
            act = rng.integers(0, 4, len(seeds))
        obs, rew, term, _, _ = env.step(act)
        for i, a in enumerate(ales):
            if done[i]:
                continue
            o, r, over = a.step(int(act[i]))
            assert np.array_equal(env.ram(i), a.ram()), (seeds[i], t)
            assert np.array_equal(obs[i], o.astype(np.float32)) and rew[i] == r and term[i] == over, (seeds[i], t)
            done[i] = over
    assert not env.unmodelled.any()
    return env


def test_the_batch_plays_ales_game_under_the_default_protocol():
    """frameskip 4, sticky 0.25 from ALE's own stream on the same seed, serve auto: the same RAM, features,
    reward and game over every step, with the v3 policy (long rallies, bricks) and with random actions (losses,
    game over)."""
    _play(SEEDS[:2], 500, "v3")
    env = _play(SEEDS[2:], 400, "random")
    assert env.lives[0] == 0  # the random game ended, on the same step as ALE's


def test_the_screen_is_ales():
    """`render` draws what ALE shows, every frame: score digits one frame late, walls, bricks, ball rows and
    the last row's cut-off, the paddle."""
    ale = frame_emulator(SEEDS[0])
    acts = ale.getMinimalActionSet()
    row, pot = _state(ale.getRAM()), rom_kernel.PADDLE_DEFAULT
    from policylab.envs.breakout.rom.render import render_ram

    rng = np.random.default_rng(SEEDS[0])
    action = NOOP
    for t in range(900):
        if t % 12 == 0:
            action = int(rng.choice([NOOP, RIGHT, LEFT]))
        a = FIRE if row[RAM_BALL_Y] == 0 else action
        pot = rom_kernel.pot_after(pot, a)
        rom_kernel.frame(row, pot, a == FIRE)
        ale.act(acts[a])
        assert np.array_equal(render_ram(row), ale.getScreenRGB()), t
        if ale.game_over():
            break


def test_the_wall_refills_as_ales():
    """432 points (one wall's worth) at a paddle hit refills the wall: planted in both games (score and an
    almost empty wall), the next paddle hit brings the full wall back in both, RAM equal every frame."""
    ale = frame_emulator(SEEDS[1])
    acts = ale.getMinimalActionSet()
    row, pot = _state(ale.getRAM()), rom_kernel.PADDLE_DEFAULT
    obs = ram_features(ale.getRAM(), None)
    refilled, a = None, NOOP
    for t in range(3000):
        if t == 300:
            # 432 points and one brick byte left (the bottom row's columns 15-17)
            left = RAM_WALL_RIGHT_PF2 + 5
            wall = [(k, 0x3F if k == left else 0) for k in range(RAM_WALL_END)]
            for k, v in [(RAM_SCORE_HI, 0x04), (RAM_SCORE_LO, 0x32)] + wall:
                ale.setRAM(k, v)
                row[k] = v
        if t % 4 == 0:
            a = FIRE if obs[4] == 0 else int(breakout_policy_v3(obs[None].astype(np.float32), V3_DEFAULTS)[0])
        pot = rom_kernel.pot_after(pot, a)
        rom_kernel.frame(row, pot, a == FIRE)
        ale.act(acts[a])
        ram = ale.getRAM()
        assert np.array_equal(row[:RAM_N], ram), (t, np.flatnonzero(row[:RAM_N] != ram))
        obs = ram_features(ram, obs)
        if (
            refilled is None
            and t > 300
            and np.array_equal(ram[:RAM_WALL_END], rom_kernel.RESET_RAM[:RAM_WALL_END].astype(np.uint8))
        ):
            refilled = t
        if refilled is not None and t > refilled + 300:
            break
    assert refilled is not None


def test_attract_mode_after_65536_frames_is_followed_and_flagged():
    """The frame counter's high byte wrapping drops the game to attract mode (colours cycle, no serve): the
    RAM stays ALE's, the frame returns UNMOD_RESET, and the screen differs only where a colour change shows
    one frame late."""
    ale = frame_emulator(SEEDS[2])
    acts = ale.getMinimalActionSet()
    row, pot = _state(ale.getRAM()), rom_kernel.PADDLE_DEFAULT
    rng = np.random.default_rng(SEEDS[2])
    from policylab.envs.breakout.rom.render import render_colours

    flags, late = 0, 0
    for t in range(700):
        if t == 100:
            for k, v in ((RAM_FRAME_COUNTER_HI, 0xFF), (RAM_FRAME_COUNTER, 0xC8)):
                ale.setRAM(k, v)
                row[k] = v
        a = FIRE if row[RAM_BALL_Y] == 0 else int(rng.integers(0, 4))
        pot = rom_kernel.pot_after(pot, a)
        flags |= rom_kernel.frame(row, pot, a == FIRE)
        ale.act(acts[a])
        assert np.array_equal(row[:RAM_N], ale.getRAM()), t
        late += not np.array_equal(render_colours(row), ale.getScreen())
    assert flags == rom_kernel.UNMOD_RESET and row[RAM_SHOW_SCORE] == 0 and late <= 2


def _probe(ale, base, x, b, paddle=None):
    """ALE's reaction, one frame later, to the ball held at (RAM_BALL_X, RAM_BALL_Y) = (x, b) when it is drawn."""
    ale.restoreState(base)
    still = (RAM_BALL_VY, RAM_BALL_VY_FRAC, RAM_BALL_VX, RAM_BALL_VX_FRAC, RAM_BALL_CLASS, RAM_TOP_WALL_HIT)
    for k, v in [(RAM_BALL_X, x), (RAM_BALL_Y, b)] + [(k, 0) for k in still]:
        ale.setRAM(k, v)
    if paddle is not None:
        ale.setRAM(RAM_PADDLE_X, paddle)
    ale.act(ale.getMinimalActionSet()[NOOP])
    drawn = ale.getRAM().astype(np.int64)
    ale.act(ale.getMinimalActionSet()[NOOP])
    after = ale.getRAM()
    playfield = after[RAM_TOP_WALL_HIT] == 0x80 or not np.array_equal(after[:RAM_WALL_END], drawn[:RAM_WALL_END])
    return rom_kernel.collisions(_state(drawn)), playfield, bool(after[RAM_BALL_CLASS] & 0x40)


@pytest.mark.parametrize("b", [8, 9, 24, 25, 45, 46, 84, 85, 176, 177, 183, 184])
def test_collision_rows_at_their_boundaries(b):
    """The top wall collides for RAM_BALL_Y in 9..24 (not 8: no earlier ENABL copy; 24 through the delayed copy),
    bricks from 46, the paddle for 177..183; the model's latches equal ALE's reactions."""
    ale = frame_emulator(SEEDS[0])
    for _ in range(40):  # past the wall-building animation
        ale.act(ale.getMinimalActionSet()[NOOP])
    base = ale.cloneState()
    for x in (60, 130, 199):
        mine, playfield, paddle = _probe(ale, base, x, b, paddle=x + 45)
        assert bool(mine & rom_kernel.CX_PLAYFIELD) == playfield and bool(mine & rom_kernel.CX_PADDLE) == paddle, (
            x,
            b,
            mine,
        )


def test_the_pot_reading_for_every_reachable_resistance():
    """RAM_PADDLE_READING after each frame equals `paddle_reading` of the frame's resistance, over all 101 resistances
    RIGHT/LEFT steps and clamps reach from ALE's default."""
    assert pot_readings(SEEDS[0]) == (101, 0)


def test_the_pot_reading_when_the_paddle_colour_is_zero():
    """With RAM_PADDLE_COLOUR at 0 (attract mode's colour cycle reaches it) the lower field samples one scanline early:
    RAM_PADDLE_READING equals `paddle_reading(pot, True)` for all 101 resistances, and differs from the usual reading
    for some of them (the case matters)."""
    assert pot_readings(SEEDS[0], paddle_colour_zero=True) == (101, 0)
    assert pot_readings(SEEDS[0], paddle_colour_zero=False)[1] == 0
    assert any(
        rom_kernel.paddle_reading(p, True) != rom_kernel.paddle_reading(p)
        for p in range(rom_kernel.PADDLE_MIN, rom_kernel.PADDLE_MAX, 23000)
    )


def test_same_seeds_same_bytes_whatever_the_batch():
    seeds = np.array(named_range("breakout", "lockstep").first(5))

    def run(idx):
        env = ShadowBreakout(len(idx), "ale-exact", seeds=seeds[idx])
        obs = env.reset()
        for _ in range(300):
            act = breakout_policy_v3(obs, V3_DEFAULTS).astype(np.int64)
            act[obs[:, 4] == 0] = FIRE
            obs, *_ = env.step(act)
        return env

    full, again, alone = run(np.arange(5)), run(np.arange(5)), run(np.array([3]))
    assert full.state_bytes() == again.state_bytes()
    assert np.array_equal(full.ram(3), alone.ram(0)) and full.score[3] == alone.score[0]
    assert full.walls.shape == (5, 108) and np.array_equal(full.walls[3], alone.walls[0])


def test_physics_only_methods_refuse_the_rom_model():
    env = ShadowBreakout(1, "ale-exact", seeds=[SEEDS[0]])
    env.reset()
    with pytest.raises(BadInput, match="preset"):
        env.place_ball(0, 50.0, 100.0, 1.0, 1.0)
    with pytest.raises(BadInput, match="preset"):
        ShadowBreakout(1, "atari-cal").ram(0)
