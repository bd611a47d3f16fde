"""The compiled half of the SB3 adapter (`sb3`): N Breakout games through SB3's `make_atari_env` wrapper chain,
stepped in one numba call that releases the GIL.

Why a kernel of its own and not `vector_kernel`'s: SB3's `AtariWrapper` preprocesses differently from ale-py's
`AtariVectorEnv`, and an SB3 user's numbers must be what SB3 gives on ALE. Each step below is one of SB3 2.9's
wrappers over `BreakoutNoFrameskip-v4` (one emulated frame per raw step), in their order from the inside:
- `Monitor`: counts the raw steps and sums the raw rewards since the raw env's last reset (`info["episode"]`);
- `NoopResetEnv` (`noop_max` > 0): after the raw reset, the count drawn by the caller (`noops`: the env's numpy
  generator, `integers(1, noop_max + 1)`) of raw NOOP frames, the raw env reset again where one ends the game;
- `MaxAndSkipEnv` (`skip` > 1): `skip` raw frames of one action, stopping at the game's end; its two-slot buffer
  keeps the frames at `skip - 2` and `skip - 1` and is never cleared, so a step that ends early pools what the
  slots still hold; the buffer holds state rows here (`pairs`), whose screens are drawn when pooled;
- `EpisodicLifeEnv` (`life_loss`): a lost life ends the agent's episode; its reset plays a NOOP step unless the
  game really ended (`was_real_done`, set by every step that passes through it);
- `FireResetEnv`: a reset is followed by a FIRE step and a RIGHT step (the minimal set's action 2);
- `WarpFrame`: OpenCV's RGB-to-gray of the pooled RGB screen (the per-channel max of the two frames: `PAIR_GRAY`),
  then the INTER_AREA resize (`vector_kernel`'s tables and float32 sums);
- `ClipRewardEnv` (`clip`): the reward's sign.

numba's cache of these kernels is keyed on this file alone, as `vector_kernel`'s is: after a change to
`rom.render`, `rom.kernel` or `vector_kernel`, clear `__pycache__/sb3_kernel.*.nb*`.
"""

from __future__ import annotations

import numba
import numpy as np

from policylab.envs.breakout import vector_kernel
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

# per-env counters in `C` (n, NC) int64: ALE's episode and total frame numbers, EpisodicLifeEnv's `lives` and
# `was_real_done`, the Monitor's raw steps and reward since the raw env's reset
EP_FRAMES, FRAMES, LIVES, REAL_DONE, MON_LEN, MON_R, NC = range(7)
# the flags a reset needs (`cfg` int64 array)
SKIP, NOOP_MAX, LIFE_LOSS, CLIP, MAX_FRAMES, NCFG = range(6)


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
    return reward, m[rom_kernel.RAM_LIVES] == 0, max_frames > 0 and c[EP_FRAMES] >= max_frames


@numba.njit(cache=True, inline="always")
def _skip_step(m, c, pair, action, cfg):
    """MaxAndSkipEnv's step (a single raw step at skip 1); returns the summed reward, terminated, truncated."""
    skip = cfg[SKIP]
    total = 0
    term = trunc = False
    for f in range(skip):
        reward, term, trunc = _raw_frame(m, c, action, cfg[MAX_FRAMES])
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
    if cfg[LIFE_LOSS]:
        c[REAL_DONE] = term or trunc
        lives = m[rom_kernel.RAM_LIVES]
        if 0 < lives < c[LIVES]:
            term = True
        c[LIVES] = lives
    return total, term, trunc


@numba.njit(cache=True, inline="always")
def _noop_reset(i, m, c, noops, used, cfg):
    """NoopResetEnv's reset (the raw reset alone without noops); the env's drawn count is used up (`used`)."""
    _raw_reset(m, c)
    if cfg[NOOP_MAX] > 0:
        used[i] += 1
        for _ in range(noops[i]):
            _, term, trunc = _raw_frame(m, c, rom_kernel.NOOP, cfg[MAX_FRAMES])
            if term or trunc:
                _raw_reset(m, c)


@numba.njit(cache=True, inline="always")
def _life_reset(i, m, c, pair, noops, used, cfg):
    """EpisodicLifeEnv's reset: the real one after a real end, else a NOOP step (and the real one if that ended
    the game); the lives seen restart from the game's."""
    if not cfg[LIFE_LOSS] or c[REAL_DONE]:
        _noop_reset(i, m, c, noops, used, cfg)
    else:
        _, term, trunc = _skip_step(m, c, pair, rom_kernel.NOOP, cfg)
        if term or trunc:
            _noop_reset(i, m, c, noops, used, cfg)
    c[LIVES] = m[rom_kernel.RAM_LIVES]


@numba.njit(cache=True)
def _fire_reset(i, m, c, pair, shown, noops, used, cfg, pooled, tables, cbuf, gbuf, hbuf, dirty, out):
    """FireResetEnv's reset, and its observation (the RIGHT step's, drawn whole before a reset it may need) into
    out, whose buffer is kept in `shown`."""
    _life_reset(i, m, c, pair, noops, used, cfg)
    _, term, trunc = _life_step(m, c, pair, FIRE, cfg)
    if term or trunc:
        _life_reset(i, m, c, pair, noops, used, cfg)
    _, term, trunc = _life_step(m, c, pair, RIGHT, cfg)
    dirty[:] = True
    draw(pair, pooled, tables, cbuf, gbuf, hbuf, dirty, out)
    shown[:] = pair
    if term or trunc:
        _life_reset(i, m, c, pair, noops, used, cfg)


@numba.njit(cache=True)
def draw(pair, pooled, tables, cbuf, gbuf, hbuf, dirty, out):
    """WarpFrame's (height, width) frame of the MaxAndSkipEnv buffer's two frames (the newer alone unless
    `pooled`) into out: the output rows that read a `dirty` source row (the others are left as they are).
    Source rows repeat (background, brick and glyph lines drawn twice), so a row whose gray line equals the one
    before keeps its horizontal sums (`vector_kernel.line_sums`)."""
    rom, gray, xi, xw, yi, yw, ystart = tables[:7]
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
                render.draw_row(pair[1], rom, sy, cbuf[0])
                render.draw_row(older, rom, sy, cbuf[1])
                for x in range(vector_kernel.SRC_W):
                    gbuf[x] = gray[cbuf[0, x] >> 1, cbuf[1, x] >> 1]
                vector_kernel.line_sums(gbuf, held, xi, xw, hbuf, width)
                held = sy
            for dx in range(width):
                hbuf[dx] += yw[j] * hbuf[width + dx]
        for dx in range(width):
            out[dy, dx] = np.uint8(min(255.0, np.rint(hbuf[dx])))  # OpenCV's saturate_cast: half to even


@numba.njit(cache=True, inline="always")
def _mark(dirty, r0, r1):
    for r in range(max(r0, 0), min(r1, vector_kernel.SRC_H - 1) + 1):
        dirty[r] = True


@numba.njit(cache=True)
def draw_step(shown, pair, pooled, tables, cbuf, gbuf, hbuf, dirty, out):
    """Bring out, which shows the buffer `shown` held when it was drawn, to the buffer `pair`, redrawing only the
    source rows that can differ: what `vector_kernel.still_changes` finds between the frames (a brick row, the
    score rows, or everything when a colour changed) and the rows the ball or the paddle covers in any of the
    four frames. `shown` becomes `pair`."""
    static = tables[7]
    pa, a = (shown[0], pair[0]) if pooled else (shown[1], pair[1])
    changed = vector_kernel.still_changes(pa, shown[1], a, pair[1], static)
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
    draw(pair, pooled, tables, cbuf, gbuf, hbuf, dirty, out)
    shown[:] = pair


@numba.njit(cache=True, nogil=True)
def reset_kernel(rows, I, pairs, shown, C, noops, used, cfg, tables, obs):
    """The chain's reset of envs `rows` (FireResetEnv's, through EpisodicLifeEnv's) and their observations;
    `shown` keeps the buffer each observation was drawn from."""
    cbuf, gbuf, hbuf, dirty = _buffers(obs.shape[2])
    for r in range(rows.shape[0]):
        i = rows[r]
        _fire_reset(
            i, I[i], C[i], pairs[i], shown[i], noops, used, cfg, cfg[SKIP] > 1, tables, cbuf, gbuf, hbuf, dirty, obs[i]
        )


@numba.njit(cache=True, nogil=True)
def step_kernel(
    actions, I, pairs, shown, C, noops, used, cfg, tables, obs, final_obs, reward, terminated, truncated, episode, info
):
    """One DummyVecEnv step of every env: the chain's step of ALE action `actions[i]`, its observation updated in
    place from the last one (`draw_step`); an env whose step ends its episode has that observation in `final_obs`
    and is reset (`_fire_reset`) at once. `episode[i]` is the Monitor's (raw steps, raw reward) where the raw
    game ended in the step, else (-1, 0); `info[i]` the step's ALE info (lives, episode frame number, frame
    number) before any reset."""
    cbuf, gbuf, hbuf, dirty = _buffers(obs.shape[2])
    pooled = cfg[SKIP] > 1
    for i in range(I.shape[0]):
        m, c = I[i], C[i]
        total, term, trunc = _life_step(m, c, pairs[i], actions[i], cfg)
        raw_end = m[rom_kernel.RAM_LIVES] == 0 or (cfg[MAX_FRAMES] > 0 and c[EP_FRAMES] >= cfg[MAX_FRAMES])
        episode[i, 0] = c[MON_LEN] if raw_end else -1
        episode[i, 1] = c[MON_R] if raw_end else 0
        info[i, 0], info[i, 1], info[i, 2] = m[rom_kernel.RAM_LIVES], c[EP_FRAMES], c[FRAMES]
        reward[i] = ((total > 0) - (total < 0)) if cfg[CLIP] else total
        terminated[i], truncated[i] = term, trunc
        draw_step(shown[i], pairs[i], pooled, tables, cbuf, gbuf, hbuf, dirty, obs[i])
        if term or trunc:
            final_obs[i] = obs[i]
            _fire_reset(i, m, c, pairs[i], shown[i], noops, used, cfg, pooled, tables, cbuf, gbuf, hbuf, dirty, obs[i])


@numba.njit(cache=True, inline="always")
def _buffers(width):
    """Scratch lines: two colour lines, the gray line and the one held (`line_sums`), the vertical and the
    held horizontal sums; the source rows to redraw."""
    return (
        np.zeros((2, vector_kernel.SRC_W), dtype=np.int64),
        np.zeros(2 * vector_kernel.SRC_W, dtype=np.uint8),
        np.zeros(2 * width, dtype=np.float32),
        np.ones(vector_kernel.SRC_H, dtype=np.bool_),
    )
