"""The compiled half of the SB3 adapter (`sb3`): N games through SB3's `make_atari_env` chain in one numba call.

The wrapper chain, stage by stage, and the numba cache: docs/breakout.md, "Module notes"."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from policylab.envs.breakout import ram, vector_kernel
from policylab.envs.breakout.rom import kernel as rom_kernel
from policylab.envs.breakout.rom import render
from policylab.envs.breakout.rom.ale_interface import applied_frame

FIRE, RIGHT = 1, 3  # ALE's action numbers of FireResetEnv's two steps (the minimal set's 1 and 2)


def _pair_gray() -> np.ndarray:
    """(128, 128) uint8: OpenCV's COLOR_RGB2GRAY of the per-channel max of two palette colours, its fixed-point
    sum (R 9798 + G 19235 + B 3735 + 2**14) >> 15 (equal to cv2 5.0 on all 2**24 colours: tests/envs/breakout/
    test_sb3.py checks the palette's pairs)."""
    p = render.PALETTE.astype(np.int64)
    pooled = np.maximum(p[:, None, :], p[None, :, :])
    return ((pooled @ np.array([9798, 19235, 3735]) + (1 << 14)) >> 15).astype(np.uint8)


PAIR_GRAY = _pair_gray()

# per-env counters (`Games.counters`, (n, NC) int64): ALE's episode and total frame numbers, EpisodicLifeEnv's
# `lives` and `was_real_done`, the Monitor's raw steps and reward since the raw env's reset
EP_FRAMES, FRAMES, LIVES, REAL_DONE, MON_LEN, MON_R, NC = range(7)


# The kernels' arguments, bundled by what they are, as `vector_kernel`'s (whose `Screen` draws here too, its
# colours `PAIR_GRAY`); the env builds each once and passes them as `vector_kernel.plain` tuples.
class Games(NamedTuple):
    """Each env's own state, every array indexed by env first."""

    state: np.ndarray  # (n, NI) int64: the exact model's state row (`rom.kernel`)
    pairs: np.ndarray  # (n, 2, NI) int64: MaxAndSkipEnv's buffer
    shown: np.ndarray  # (n, 2, NI) int64: the buffer the observation was drawn from
    counters: np.ndarray  # (n, NC) int64
    noops: np.ndarray  # (n,) int64: NoopResetEnv's count for the next real reset, drawn by the env
    used: np.ndarray  # (n,) int64: the counts used up in a call (the env draws the next)


class Config(NamedTuple):
    """The chain's settings (`make_atari_env`'s wrapper keywords)."""

    skip: int  # MaxAndSkipEnv's frames per step
    noop_max: int
    life_loss: bool  # EpisodicLifeEnv in the chain
    clip: bool  # ClipRewardEnv in the chain
    max_frames: int  # the raw env's truncation


class Results(NamedTuple):
    """What a step returns per env: its observation (updated in place) and the step's outcome."""

    obs: np.ndarray  # (n, H, W) uint8
    final_obs: np.ndarray  # an ended episode's last observation
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episode: np.ndarray  # (n, 2): the Monitor's (raw steps, raw reward) where the raw game ended, else (-1, 0)
    info: np.ndarray  # (n, 3): ALE's info (lives, episode frame number, frame number) before any reset


class Work(NamedTuple):
    """The kernels' working arrays (`new_work`), made once by the env: the kernels are compiled without reference
    counting (`_nrt=False`, as `vector_kernel`'s), so they allocate nothing."""

    cbuf: np.ndarray  # the two frames' colour lines
    gbuf: np.ndarray  # the pooled gray line and the one held (`vector_kernel.line_sums`)
    hbuf: np.ndarray  # the vertical sums and the held line's horizontal sums
    dirty: np.ndarray  # the source rows to redraw


def new_work(width: int) -> Work:
    """The working arrays of an output `width` pixels wide, made once by the env."""
    return Work(
        np.zeros((2, vector_kernel.SRC_W), dtype=np.int64),
        np.zeros(2 * vector_kernel.SRC_W, dtype=np.uint8),
        np.zeros(2 * width, dtype=np.float32),
        np.ones(vector_kernel.SRC_H, dtype=np.bool_),
    )


@numba.njit(cache=True, inline="always")
def _raw_reset(m, c):
    """The raw env's reset, Monitor's first: the game reset, the episode's frame count and the Monitor's sums
    restarted (a seed given to it is applied by the caller: it reseeds only the noop generator and the frame
    count, Breakout's game having no randomness without sticky actions)."""
    vector_kernel.reset_game(m)
    c[EP_FRAMES] = 0
    c[MON_LEN] = 0
    c[MON_R] = 0


@numba.njit(cache=True, inline="always")
def _raw_frame(m, c, action, max_frames):
    """One raw step (`BreakoutNoFrameskip-v4`, through Monitor): one frame of ALE action `action`; returns the
    reward, terminated (no lives left) and truncated (`max_frames` frames since the reset)."""
    m[rom_kernel.LAST_ACT] = action
    pot, reward = applied_frame(m, m[rom_kernel.POT], action, rom_kernel.PADDLE_DELTA)
    m[rom_kernel.POT] = pot
    c[EP_FRAMES] += 1
    c[FRAMES] += 1
    c[MON_LEN] += 1
    c[MON_R] += reward
    return reward, m[ram.RAM_LIVES] == 0, max_frames > 0 and c[EP_FRAMES] >= max_frames


@numba.njit(cache=True, inline="always")
def _skip_step(m, c, pair, action, cfg):
    """MaxAndSkipEnv's step (a single raw step at skip 1); returns the summed reward, terminated, truncated."""
    skip = cfg.skip
    total = 0
    term = trunc = False
    for f in range(skip):
        reward, term, trunc = _raw_frame(m, c, action, cfg.max_frames)
        if f >= skip - 2:  # the buffer's slots, written before the step's end is checked, as SB3's are
            for k in range(m.shape[0]):
                pair[f - skip + 2, k] = m[k]
        total += reward
        if term or trunc:
            break
    return total, term, trunc


@numba.njit(cache=True, inline="always")
def _life_step(m, c, pair, action, cfg):
    """EpisodicLifeEnv's step over `_skip_step` (that step alone without `life_loss`)."""
    total, term, trunc = _skip_step(m, c, pair, action, cfg)
    if cfg.life_loss:
        c[REAL_DONE] = term or trunc
        lives = m[ram.RAM_LIVES]
        if 0 < lives < c[LIVES]:
            term = True
        c[LIVES] = lives
    return total, term, trunc


@numba.njit(cache=True, inline="always")
def _noop_reset(i, m, c, games, cfg):
    """NoopResetEnv's reset (the raw reset alone without noops); the env's drawn count is used up
    (`games.used`)."""
    _raw_reset(m, c)
    if cfg.noop_max > 0:
        games.used[i] += 1
        for _ in range(games.noops[i]):
            _, term, trunc = _raw_frame(m, c, rom_kernel.NOOP, cfg.max_frames)
            if term or trunc:
                _raw_reset(m, c)


@numba.njit(cache=True, inline="always")
def _life_reset(i, m, c, pair, games, cfg):
    """EpisodicLifeEnv's reset: the real one after a real end, else a NOOP step (and the real one if that ended
    the game); the lives seen restart from the game's."""
    if not cfg.life_loss or c[REAL_DONE]:
        _noop_reset(i, m, c, games, cfg)
    else:
        _, term, trunc = _skip_step(m, c, pair, rom_kernel.NOOP, cfg)
        if term or trunc:
            _noop_reset(i, m, c, games, cfg)
    c[LIVES] = m[ram.RAM_LIVES]


@numba.njit(cache=True, _nrt=False)
def _fire_reset(i, games, cfg, screen, work, out):
    """FireResetEnv's reset of env i, and its observation (the RIGHT step's, drawn whole before a reset it may
    need) into out, whose buffer is kept in `games.shown`."""
    m, c, pair = games.state[i], games.counters[i], games.pairs[i]
    _life_reset(i, m, c, pair, games, cfg)
    _, term, trunc = _life_step(m, c, pair, FIRE, cfg)
    if term or trunc:
        _life_reset(i, m, c, pair, games, cfg)
    _, term, trunc = _life_step(m, c, pair, RIGHT, cfg)
    work.dirty[:] = True
    draw(pair, cfg.skip > 1, screen, work, out)
    _copy_pair(games.shown[i], pair)
    if term or trunc:
        _life_reset(i, m, c, pair, games, cfg)


@numba.njit(cache=True, _nrt=False)
def draw(pair, pooled, screen, work, out):
    """WarpFrame's (height, width) frame of the MaxAndSkipEnv buffer's two frames (the newer alone unless
    `pooled`) into out: the output rows that read a `work.dirty` source row (the others are left as they are).
    Source rows repeat (background, brick and glyph lines drawn twice), so a row whose gray line equals the one
    before keeps its horizontal sums (`vector_kernel.line_sums`)."""
    gray, yi, yw, ystart = screen.colours, screen.yi, screen.yw, screen.ystart
    cbuf, gbuf, hbuf, dirty = work.cbuf, work.gbuf, work.hbuf, work.dirty
    width = out.shape[1]
    older = pair[0] if pooled else pair[1]
    held = -1
    for dy in range(out.shape[0]):
        needed = False
        for j in range(ystart[dy], ystart[dy + 1]):
            needed = needed or dirty[yi[j, 0]]
        if not needed:
            continue
        for dx in range(width):
            hbuf[dx] = np.float32(0.0)
        for j in range(ystart[dy], ystart[dy + 1]):
            sy = yi[j, 0]
            if sy != held:
                render.draw_row(pair[1], screen.rom, sy, cbuf[0])
                render.draw_row(older, screen.rom, sy, cbuf[1])
                for x in range(vector_kernel.SRC_W):
                    gbuf[x] = gray[cbuf[0, x] >> 1, cbuf[1, x] >> 1]
                vector_kernel.line_sums(held, screen, work)
                held = sy
            for dx in range(width):
                hbuf[dx] += yw[j] * hbuf[width + dx]
        for dx in range(width):
            out[dy, dx] = np.uint8(min(255.0, np.rint(hbuf[dx])))  # OpenCV's saturate_cast: half to even


@numba.njit(cache=True, inline="always")
def _copy_pair(dst, src):
    """`dst[:] = src` for a (2, NI) buffer, without the copy an array assignment may allocate (`copy_row`)."""
    vector_kernel.copy_row(dst[0], src[0])
    vector_kernel.copy_row(dst[1], src[1])


@numba.njit(cache=True, inline="always")
def _mark(dirty, r0, r1):
    for r in range(max(r0, 0), min(r1, vector_kernel.SRC_H - 1) + 1):
        dirty[r] = True


@numba.njit(cache=True, _nrt=False)
def draw_step(shown, pair, pooled, screen, work, out):
    """Bring out, which shows the buffer `shown` held when it was drawn, to the buffer `pair`, redrawing only the
    source rows that can differ: what `vector_kernel.still_changes` finds between the frames (a brick row, the
    score rows, or everything when a colour changed) and the rows the ball or the paddle covers in any of the
    four frames. `shown` becomes `pair`."""
    dirty = work.dirty
    pa, a = (shown[0], pair[0]) if pooled else (shown[1], pair[1])
    changed = vector_kernel.still_changes(pa, shown[1], a, pair[1], screen.static)
    dirty[:] = changed == vector_kernel.ALL_CHANGED
    if changed != vector_kernel.ALL_CHANGED:
        for k in range(6):
            if (changed >> k) & 1:
                top = rom_kernel.BRICK_TOP + k * rom_kernel.BRICK_H
                _mark(dirty, top, top + rom_kernel.BRICK_H - 1)
        if changed & vector_kernel.SCORE_CHANGED:
            _mark(dirty, render.SCORE_ROWS[0], render.SCORE_ROWS[1])
        for m in (pa, shown[1], a, pair[1]):
            objects = render.moving_objects(m)
            _mark(dirty, objects[0], objects[1])
            _mark(dirty, objects[4], objects[5])
    draw(pair, pooled, screen, work, out)
    _copy_pair(shown, pair)


@numba.njit(cache=True, inline="always")
def _named(games, cfg, screen, work, results):
    """The kernels' arguments (`vector_kernel.plain`) as their named tuples."""
    return Games(*games), Config(*cfg), vector_kernel.Screen(*screen), Work(*work), Results(*results)


@numba.njit(cache=True, nogil=True, _nrt=False)
def reset_kernel(rows, games, cfg, screen, work, results):
    """The chain's reset of envs `rows` (FireResetEnv's, through EpisodicLifeEnv's) and their observations;
    `games.shown` keeps the buffer each observation was drawn from."""
    games, cfg, screen, work, results = _named(games, cfg, screen, work, results)
    for r in range(rows.shape[0]):
        i = rows[r]
        _fire_reset(i, games, cfg, screen, work, results.obs[i])


@numba.njit(cache=True, nogil=True, _nrt=False)
def step_kernel(actions, games, cfg, screen, work, results):
    """One DummyVecEnv step of every env: the chain's step of ALE action `actions[i]`, its observation updated in
    place from the last one (`draw_step`); an env whose step ends its episode has that observation in
    `results.final_obs` and is reset (`_fire_reset`) at once. `results.episode` and `results.info` as `Results`
    says."""
    games, cfg, screen, work, results = _named(games, cfg, screen, work, results)
    obs, episode, info = results.obs, results.episode, results.info
    for i in range(games.state.shape[0]):
        m, c, pair = games.state[i], games.counters[i], games.pairs[i]
        total, term, trunc = _life_step(m, c, pair, actions[i], cfg)
        raw_end = m[ram.RAM_LIVES] == 0 or (cfg.max_frames > 0 and c[EP_FRAMES] >= cfg.max_frames)
        episode[i, 0] = c[MON_LEN] if raw_end else -1
        episode[i, 1] = c[MON_R] if raw_end else 0
        info[i, 0], info[i, 1], info[i, 2] = m[ram.RAM_LIVES], c[EP_FRAMES], c[FRAMES]
        results.reward[i] = ((total > 0) - (total < 0)) if cfg.clip else total
        results.terminated[i], results.truncated[i] = term, trunc
        draw_step(games.shown[i], pair, cfg.skip > 1, screen, work, obs[i])
        if term or trunc:
            size = obs[i].size
            vector_kernel.move_bytes(results.final_obs, i * size, obs, i * size, size)
            _fire_reset(i, games, cfg, screen, work, obs[i])
