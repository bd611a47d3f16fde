"""The compiled half of the vector env: N Breakout games stepped, preprocessed and frame-stacked in one
numba call, producing exactly the bytes ale-py's `AtariVectorEnv` produces.

Why a kernel of its own: the issue's budget is a few microseconds per env-step for four emulated frames,
a max-pool, grayscale, an 84 x 84 resize and the frame stack. Drawing two 210 x 160 frames and resizing
them costs several times that, so the newest frame is updated in place (`draw_changed`): most of Breakout's
screen does not change between agent steps, so only the output pixels that read the ball (in any of the
four frames of this and the previous pair) are recomputed, one by one; the paddle's output rows when it
moved, a brick row's when its bricks changed, the score's when the digits did; everything when a colour did
(and at a reset).

What ale-py does, measured against its output (tests/envs/breakout/test_vector.py):
- grayscale is ALE's luminance palette, `round(0.2989 r + 0.587 g + 0.114 b)` of the NTSC colour;
- max-pool takes the per-pixel maximum of the last two emulated frames' grayscale screens;
- the resize is OpenCV's INTER_AREA (bundled in ale-py): per output pixel a float32 sum over source rows
  of (row weight x float32 sum over source columns of pixel x column weight), accumulated in source order,
  rounded half to even. The weights are OpenCV's `computeResizeAreaTab`; this module repeats the same
  float32 operations in the same order, so the bytes are identical (a zero pixel adds exactly nothing,
  which is what lets the kernel skip the black field);
- reset: ALE's `reset_game`, FIRE, then noops (their number from the env's MT19937 noop stream, drawn as
  libstdc++'s `uniform_int_distribution(0, noop_max - 1)`; the FIRE frame counts as one); the stack is
  zeros but for the last frame, not pooled.
"""

from __future__ import annotations

import numba
import numpy as np

from policylab.envs.breakout import ale_random as R
from policylab.envs.breakout.rom import kernel as EK

SRC_H, SRC_W = 210, 160


def area_table(ssize: int, dsize: int) -> list[tuple[int, int, np.float32]]:
    """OpenCV's `computeResizeAreaTab` for one axis: (destination, source, float32 weight) tuples, destinations
    ascending and sources ascending within each, from OpenCV's double-precision cell edges."""
    scale = 1.0 / (dsize / ssize)  # OpenCV: scale = 1 / inv_scale, inv_scale = dsize / ssize
    out = []
    for dx in range(dsize):
        fsx1 = dx * scale
        fsx2 = fsx1 + scale
        cell = min(scale, ssize - fsx1)
        sx1, sx2 = int(np.ceil(fsx1)), int(np.floor(fsx2))
        sx2 = min(sx2, ssize - 1)
        sx1 = min(sx1, sx2)
        if sx1 - fsx1 > 1e-3:
            out.append((dx, sx1 - 1, np.float32((sx1 - fsx1) / cell)))
        for sx in range(sx1, sx2):
            out.append((dx, sx, np.float32(1.0 / cell)))
        if fsx2 - sx2 > 1e-3:
            out.append((dx, sx2, np.float32(min(min(fsx2 - sx2, 1.0), cell) / cell)))
    return out


def resize_tables(height: int, width: int):
    """The x and y tables as arrays: (source index, destination index) int64 and weights float32; plus, per
    destination row, the range of its y-table entries."""
    xt, yt = area_table(SRC_W, width), area_table(SRC_H, height)
    xi = np.array([(s, d) for d, s, _ in xt], dtype=np.int64)
    xw = np.array([w for _, _, w in xt], dtype=np.float32)
    yi = np.array([(s, d) for d, s, _ in yt], dtype=np.int64)
    yw = np.array([w for _, _, w in yt], dtype=np.float32)
    ystart = np.searchsorted(yi[:, 1], np.arange(height + 1)).astype(np.int64)
    return xi, xw, yi, yw, ystart


# Drawing-relevant RAM beyond the ball and paddle position: the wall (0-35), the paddle pattern (55), the
# colours (59-69), the digit pointers (80-89), the score mask (110) and the pointers the frame was drawn with.
STATIC_BYTES = np.array(list(range(36)) + [55] + list(range(59, 70)) + list(range(80, 90)) + [110, EK.SHOWN],
                        dtype=np.int64)


@numba.njit(cache=True, inline="always")
def _pf_half(out, base, pf0, pf1, pf2, colour):
    """One half of a playfield line into out[base:base + 80]: PF0 bits 4-7, PF1 bits 7-0, PF2 bits 0-7, 4 px each."""
    for b in range(20):
        if b < 4:
            on = (pf0 >> (4 + b)) & 1
        elif b < 12:
            on = (pf1 >> (11 - b)) & 1
        else:
            on = (pf2 >> (b - 12)) & 1
        if on:
            for d in range(4):
                out[base + 4 * b + d] = colour


@numba.njit(cache=True)
def row_colours(m, rom, r, out):
    """The TIA colour bytes of screen row r of the frame drawn for state row m (RAM, then the kernel's extras),
    into out (160,): `rom.render.render_colours`, one row at a time."""
    shown = m[EK.SHOWN]
    pf = m[60]
    for c in range(SRC_W):
        out[c] = m[61]
    if r == 0:
        for c in range(8):
            out[c] = 0
    if 5 <= r <= 14:
        off = 4 - (r - 5) // 2
        p80 = shown & 255
        p82 = (shown >> 8) & 255
        p84 = (shown >> 16) & 255
        p86 = (shown >> 24) & 255
        p88 = (shown >> 32) & 255
        g80 = rom[(((m[81] << 8) | p80) + off) & 0x7FF]
        g82 = rom[(((m[83] << 8) | p82) + off) & 0x7FF]
        g84 = rom[(((m[85] << 8) | p84) + off) & 0x7FF]
        g86 = rom[(((m[87] << 8) | p86) + off) & 0x7FF]
        g88 = rom[(((m[89] << 8) | p88) + off) & 0x7FF]
        _pf_half(out, 0, 0, g80 & 0x0F & m[110], (g82 & 0x0F) | (g84 & 0xF0), pf)
        _pf_half(out, 80, 0, g86 & 0xF0 & m[110], g88 & 0x0F, pf)
    if EK.TOP_WALL[0] <= r <= EK.TOP_WALL[1]:
        for c in range(SRC_W):
            out[c] = pf
    ball_colour = m[62]
    if r < EK.BRICK_TOP:
        ball_colour = pf
    elif r < EK.BRICK_TOP + 6 * EK.BRICK_H:
        x = 5 - (r - EK.BRICK_TOP) // EK.BRICK_H
        ball_colour = m[64 + x]
        _pf_half(out, 0, m[30 + x], m[24 + x], m[18 + x], ball_colour)
        _pf_half(out, 80, m[12 + x], m[6 + x], m[x], ball_colour)
    b = m[101]
    if EK.BALL_ROWS[b, 0] <= r <= EK.BALL_ROWS[b, 1]:
        last = EK.LAST_ROW_COLUMNS[1 - (b & 1)]
        for dx in range(2):
            c = (m[99] - 49 + dx) % SRC_W
            if r < EK.LAST_ROW or c < last:
                out[c] = ball_colour
    if 17 <= r <= EK.LAST_ROW:
        left = pf if r < 189 else m[63]
        for c in range(EK.SIDE_W):
            out[c] = left
        if r < EK.LAST_ROW:
            right = pf if r < 189 else m[62]
            for c in range(SRC_W - EK.SIDE_W, SRC_W):
                out[c] = right
    if EK.PADDLE_ROWS[0] <= r <= EK.PADDLE_ROWS[1]:
        p0 = m[72] - 47
        for k in range(8):
            if (m[55] >> (7 - k)) & 1:
                for d in range(4):
                    out[(p0 + 4 * k + d) % SRC_W] = m[62]


@numba.njit(cache=True)
def _out_row(a, b, c, maxpool, dy, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, out):
    """Output row dy of the resized grayscale frame of state b, max-pooled with a (`maxpool` >= 1) and c
    (`maxpool` 2), into out."""
    width = out.shape[0]
    for dx in range(width):
        hbuf[dx] = np.float32(0.0)  # the vertical sum
    for j in range(ystart[dy], ystart[dy + 1]):
        sy = yi[j, 0]
        beta = yw[j]
        row_colours(b, rom, sy, cbuf)
        for x in range(SRC_W):
            gbuf[x] = gray[cbuf[x]]
        for other in range(maxpool):
            row_colours(a if other == 0 else c, rom, sy, cbuf)
            for x in range(SRC_W):
                g = gray[cbuf[x]]
                if g > gbuf[x]:
                    gbuf[x] = g
        for dx in range(width):
            hbuf[width + dx] = np.float32(0.0)
        for k in range(xi.shape[0]):
            v = gbuf[xi[k, 0]]
            if v != 0:  # adding 0.0 to a non-negative float32 changes nothing: the black field is skipped
                hbuf[width + xi[k, 1]] += np.float32(v) * xw[k]
        for dx in range(width):
            hbuf[dx] += beta * hbuf[width + dx]
    for dx in range(width):
        out[dx] = np.uint8(min(255.0, np.rint(hbuf[dx])))  # OpenCV's saturate_cast: round half to even


@numba.njit(cache=True)
def draw_full(a, b, c, maxpool, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, out):
    """The whole resized observation of the frames (a, b, c: see `_out_row`) into out (height, width)."""
    for dy in range(out.shape[0]):
        _out_row(a, b, c, maxpool, dy, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, out[dy])


def pixel_tables(xi: np.ndarray, yi: np.ndarray, height: int, width: int):
    """For the per-pixel update: each output column's range of x-table entries, and each source row's
    (column's) first and last output row (column)."""
    xstart = np.searchsorted(xi[:, 1], np.arange(width + 1)).astype(np.int64)
    dyr = np.zeros((SRC_H, 2), dtype=np.int64)
    dxr = np.zeros((SRC_W, 2), dtype=np.int64)
    for rng, table, n in ((dyr, yi, SRC_H), (dxr, xi, SRC_W)):
        for s in range(n):
            d = table[table[:, 0] == s, 1]
            rng[s] = d.min(), d.max()
    return xstart, dyr, dxr


@numba.njit(cache=True, inline="always")
def pixel_colour(m, rom, r, c):
    """The colour byte of screen pixel (r, c) of the frame drawn for m: `row_colours` for one pixel, the objects
    checked from the last drawn (on top) down."""
    if EK.PADDLE_ROWS[0] <= r <= EK.PADDLE_ROWS[1]:
        k = c - (m[72] - 47)  # RAM 72 keeps the paddle within 8..144 px: one wrap at most (no modulo: it is slow)
        if k < 0:
            k += SRC_W
        if k < 32 and (m[55] >> (7 - k // 4)) & 1:
            return m[62]
    if 17 <= r <= EK.LAST_ROW:
        if c < EK.SIDE_W:
            return m[60] if r < 189 else m[63]
        if c >= SRC_W - EK.SIDE_W and r < EK.LAST_ROW:
            return m[60] if r < 189 else m[62]
    b = m[101]
    in_bricks = EK.BRICK_TOP <= r < EK.BRICK_TOP + 6 * EK.BRICK_H
    if EK.BALL_ROWS[b, 0] <= r <= EK.BALL_ROWS[b, 1]:
        x0 = m[99] - 49  # -49..206: one wrap at most
        if x0 < 0:
            x0 += SRC_W
        elif x0 >= SRC_W:
            x0 -= SRC_W
        if (c == x0 or c == x0 + 1 or c == x0 + 1 - SRC_W) and (r < EK.LAST_ROW or c < EK.LAST_ROW_COLUMNS[1 - (b & 1)]):
            if r < EK.BRICK_TOP:
                return m[60]
            if in_bricks:
                return m[64 + 5 - (r - EK.BRICK_TOP) // EK.BRICK_H]
            return m[62]
    if in_bricks:
        row = (r - EK.BRICK_TOP) // EK.BRICK_H
        if EK._pf_bit(m, row, c):
            return m[64 + 5 - row]
    if EK.TOP_WALL[0] <= r <= EK.TOP_WALL[1]:
        return m[60]
    if 5 <= r <= 14:  # rare here (nothing that moves reaches the score): the row's drawing, one pixel of it
        line = np.zeros(SRC_W, dtype=np.int64)
        row_colours(m, rom, r, line)
        return line[c]
    if r == 0 and c < 8:
        return 0
    return m[61]


@numba.njit(cache=True)
def _pixel_out(a, b, maxpool, dy, dx, rom, gray, xi, xw, yi, yw, ystart, xstart):
    """Output pixel (dy, dx) from scratch, with `_out_row`'s float32 operations in its order."""
    total = np.float32(0.0)
    for j in range(ystart[dy], ystart[dy + 1]):
        sy = yi[j, 0]
        h = np.float32(0.0)
        for k in range(xstart[dx], xstart[dx + 1]):
            sx = xi[k, 0]
            v = gray[pixel_colour(b, rom, sy, sx)]
            if maxpool:
                g = gray[pixel_colour(a, rom, sy, sx)]
                if g > v:
                    v = g
            if v != 0:
                h += np.float32(v) * xw[k]
        total += yw[j] * h
    return np.uint8(min(255.0, np.rint(total)))


@numba.njit(cache=True, inline="always")
def _mark(r0, r1, c0, c1, dyr, dxr, marked, todo, n):
    """Add the output pixels that read source rows r0..r1 and columns c0..c1 to the list `todo` (n so far),
    each once (`marked`); returns the new count."""
    for dy in range(dyr[r0, 0], dyr[r1, 1] + 1):
        for dx in range(dxr[c0, 0], dxr[c1, 1] + 1):
            if not marked[dy, dx]:
                marked[dy, dx] = True
                todo[n, 0] = dy
                todo[n, 1] = dx
                n += 1
    return n


@numba.njit(cache=True, inline="always")
def _mark_ball(m, dyr, dxr, marked, todo, n):
    """`_mark` the output pixels under state m's ball (its two columns; apart when it wraps at 160)."""
    r0 = EK.BALL_ROWS[m[101], 0]
    if r0 < 0:
        return n
    r1 = EK.BALL_ROWS[m[101], 1]
    c = m[99] - 49
    if c < 0:
        c += SRC_W
    elif c >= SRC_W:
        c -= SRC_W
    if c + 1 < SRC_W:
        return _mark(r0, r1, c, c + 1, dyr, dxr, marked, todo, n)
    n = _mark(r0, r1, c, c, dyr, dxr, marked, todo, n)
    return _mark(r0, r1, 0, 0, dyr, dxr, marked, todo, n)


@numba.njit(cache=True)
def _redo_rows(a, b, maxpool, r0, r1, rom, gray, xi, xw, yi, yw, ystart, dyr, cbuf, gbuf, hbuf, out):
    """Recompute the output rows that read source rows r0..r1, whole."""
    for dy in range(dyr[r0, 0], dyr[r1, 1] + 1):
        _out_row(a, b, b, maxpool, dy, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, out[dy])


@numba.njit(cache=True)
def draw_changed(pa, pb, a, b, maxpool, rom, gray, xi, xw, yi, yw, ystart, static, xstart, dyr, dxr, cbuf, gbuf,
                 hbuf, marked, todo, out):
    """Update out (holding the observation of the pair (pa, pb)) to the pair (a, b), recomputing only what can
    differ: the pixels under the ball in any of the four frames; the paddle's rows when it moved; a brick row
    whose bricks changed; the score rows when the score or lives did; everything when a colour did."""
    bricks = 0
    score = False
    for k in range(static.shape[0]):
        s = static[k]
        if a[s] != pa[s] or b[s] != pb[s]:
            if s < 36:  # RAM 0-35: byte s holds part of brick row 5 - s % 6 (`rom.kernel.brick_flags`)
                bricks |= 1 << (5 - s % 6)
            elif 80 <= s < 90 or s == 110 or s == EK.SHOWN:
                score = True
            else:
                draw_full(a, b, b, maxpool, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, out)
                return
    for row in range(6):
        if bricks & (1 << row):
            r0 = EK.BRICK_TOP + EK.BRICK_H * row
            _redo_rows(a, b, maxpool, r0, r0 + EK.BRICK_H - 1, rom, gray, xi, xw, yi, yw, ystart, dyr, cbuf, gbuf,
                       hbuf, out)
    if score:
        _redo_rows(a, b, maxpool, 5, 14, rom, gray, xi, xw, yi, yw, ystart, dyr, cbuf, gbuf, hbuf, out)
    if b[72] != pb[72] or a[72] != pa[72]:
        _redo_rows(a, b, maxpool, EK.PADDLE_ROWS[0], EK.PADDLE_ROWS[1], rom, gray, xi, xw, yi, yw, ystart, dyr,
                   cbuf, gbuf, hbuf, out)
    n = 0  # the pixels under the ball in any of the four frames, each once (consecutive frames overlap)
    for m in (pb, b, pa, a):
        n = _mark_ball(m, dyr, dxr, marked, todo, n)
    for k in range(n):
        dy, dx = todo[k, 0], todo[k, 1]
        out[dy, dx] = _pixel_out(a, b, maxpool, dy, dx, rom, gray, xi, xw, yi, yw, ystart, xstart)
        marked[dy, dx] = False


@numba.njit(cache=True, inline="always")
def noop_count(mt, i, noop_max):
    """Noops before FIRE at a reset: libstdc++'s `uniform_int_distribution(0, noop_max - 1)` over the env's
    MT19937 (Lemire's multiply-shift with rejection), as ale-py draws it."""
    if noop_max <= 0:
        return 0
    span = np.uint64(noop_max)
    threshold = (np.uint64(2**32) - span) % span
    while True:
        prod = R.mt_next(mt, i) * span
        if (prod & np.uint64(0xFFFFFFFF)) >= threshold:
            break
    return np.int64(prod >> np.uint64(32))


@numba.njit(cache=True, inline="always")
def _emulate(m, action):
    """One emulated frame of `action` (minimal set index) on state row m: the paddle resistance moves first,
    then the cartridge's frame; returns the change of ALE's score."""
    pot = m[EK.POT]
    if action == EK.RIGHT or action == EK.LEFT:
        pot = EK.pot_after(pot, action)
        m[EK.POT] = pot
    before = EK.ale_score(m)
    m[EK.FLAGS] |= EK.frame(m, pot, action == EK.FIRE)
    m[EK.LAST_ACT] = action
    return EK.ale_score(m) - before


# per-env counters in `C` (n, NC) int64
EP_FRAMES, FRAMES, DONE, NC = 0, 1, 2, 3


@numba.njit(cache=True)
def _reset_one(i, I, pairs, C, mt, noop_max, fire_reset, maxpool, rom, gray, xi, xw, yi, yw, ystart,
               cbuf, gbuf, hbuf, obs):
    """ale-py's reset of env i (reset_game, FIRE, noops) and its first observation: a zero stack but the last
    frame (not pooled)."""
    m = I[i]
    for k in range(EK.RAM_N):
        m[k] = EK.RESET_RAM[k]
    m[EK.POT] = EK.PADDLE_DEFAULT
    m[EK.LAST_ACT] = EK.NOOP
    m[EK.TERM] = 0
    m[EK.FLAGS] = 0
    m[EK.SHOWN] = EK.drawn_with(m)
    n = noop_count(mt, i, noop_max)
    if fire_reset:  # ale-py presses FIRE first, and that frame counts as one of the noops
        _emulate(m, EK.FIRE)
        C[i, EP_FRAMES] += 1
        n = max(n - 1, 0)
    for _ in range(n):
        _emulate(m, EK.NOOP)
        C[i, EP_FRAMES] += 1
    C[i, FRAMES] += C[i, EP_FRAMES]
    pairs[i, 0, :] = m  # the first observation is the last frame alone
    pairs[i, 1, :] = m
    obs[i, :-1] = 0
    draw_full(m, m, m, maxpool, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf, hbuf, obs[i, -1])


@numba.njit(cache=True, nogil=True)
def reset_kernel(rows, seeds, I, pairs, C, mt, noop_max, fire_reset, maxpool, rom, gray, xi, xw, yi, yw, ystart,
                 obs, lives, frame_number, episode_frame_number):
    """Reset envs `rows` (a seed >= 0 reseeds the env's noop stream and restarts its frame count)."""
    width = obs.shape[3]
    cbuf = np.zeros(SRC_W, dtype=np.int64)
    gbuf = np.zeros(SRC_W, dtype=np.uint8)
    hbuf = np.zeros(2 * width, dtype=np.float32)
    unused = np.zeros(mt.shape[0], dtype=np.uint64)  # `mt_seed`'s buffer of drawn-ahead decisions: none here
    for k in range(rows.shape[0]):
        i = rows[k]
        if seeds[k] >= 0:
            R.mt_seed(mt, unused, i, seeds[k])
            C[i, FRAMES] = 0
        C[i, EP_FRAMES] = 0
        C[i, DONE] = 0
        _reset_one(i, I, pairs, C, mt, noop_max, fire_reset, maxpool, rom, gray, xi, xw, yi, yw, ystart,
                   cbuf, gbuf, hbuf, obs)
    for i in range(I.shape[0]):
        lives[i] = I[i, 57]
        frame_number[i] = C[i, FRAMES]
        episode_frame_number[i] = C[i, EP_FRAMES]


@numba.njit(cache=True, nogil=True)
def step_kernel(actions, I, pairs, C, mt, frameskip, max_frames, noop_max, fire_reset, maxpool, clip, rom, gray,
                xi, xw, yi, yw, ystart, static, xstart, dyr, dxr, obs, reward, terminated, truncated, lives, frame_number,
                episode_frame_number):
    """One agent step of every env (gymnasium's NextStep autoreset: an env that ended on the last step is
    reset now and its action ignored): `frameskip` frames, the reward summed (clipped to its sign when
    `clip`), the new max-pooled, resized frame updated in place in `obs`, which holds the last step's stack
    shifted by one (the caller shifts it: numpy's memcpy moves the bytes several times faster than a loop
    compiled here). As ale-py, the max-pool reads two slots, filled by the step's last two
    planned frames, and pools into the second: the frame that ends an episode (game over, truncation) fills
    neither, so a step that ends one early repeats the last frame, and one that ends on its last frame pools
    the frame before it with the last step's two."""
    width = obs.shape[3]
    cbuf = np.zeros(SRC_W, dtype=np.int64)
    gbuf = np.zeros(SRC_W, dtype=np.uint8)
    hbuf = np.zeros(2 * width, dtype=np.float32)
    last_pair = np.zeros((2, I.shape[1]), dtype=np.int64)
    m_slot = np.zeros(I.shape[1], dtype=np.int64)
    marked = np.zeros((obs.shape[2], width), dtype=np.bool_)
    todo = np.zeros((obs.shape[2] * width, 2), dtype=np.int64)
    for i in range(I.shape[0]):
        reward[i] = 0
        terminated[i] = False
        truncated[i] = False
        if C[i, DONE]:
            C[i, EP_FRAMES] = 0
            C[i, DONE] = 0
            _reset_one(i, I, pairs, C, mt, noop_max, fire_reset, maxpool, rom, gray, xi, xw, yi, yw, ystart,
                       cbuf, gbuf, hbuf, obs)
        else:
            m = I[i]
            last_pair[:] = pairs[i]
            total = 0
            for f in range(frameskip):
                total += _emulate(m, actions[i])
                C[i, EP_FRAMES] += 1
                C[i, FRAMES] += 1
                if m[57] == 0:
                    terminated[i] = True
                    break
                if max_frames > 0 and C[i, EP_FRAMES] > max_frames:
                    truncated[i] = True
                    break
                slot = f - frameskip + 2  # ale-py's max-pool slots: the step's last two planned frames
                if slot >= 0:
                    pairs[i, slot, :] = m
                    if slot == 0:
                        m_slot[:] = m
            ended_last = (terminated[i] or truncated[i]) and f == frameskip - 1
            if terminated[i] or truncated[i]:  # ale-py keeps the pooled slot and pools into it: see docstring
                pairs[i] = last_pair
            if clip:
                total = (total > 0) - (total < 0)
            reward[i] = total
            if ended_last and maxpool:
                draw_full(last_pair[0], last_pair[1], m_slot, 2, rom, gray, xi, xw, yi, yw, ystart, cbuf, gbuf,
                          hbuf, obs[i, -1])
            else:
                draw_changed(last_pair[0], last_pair[1], pairs[i, 0], pairs[i, 1], maxpool, rom, gray, xi, xw, yi,
                             yw, ystart, static, xstart, dyr, dxr, cbuf, gbuf, hbuf, marked, todo, obs[i, -1])
            C[i, DONE] = terminated[i] or truncated[i]
        lives[i] = I[i, 57]
        frame_number[i] = C[i, FRAMES]
        episode_frame_number[i] = C[i, EP_FRAMES]
