"""Breakout as the cartridge runs it: the 2600 ROM's per-frame game logic over the game's own 128 RAM bytes.

What a frame does: docs/breakout.md, "The exact model"; ROM ranges and state layout: its "Module notes"."""

from __future__ import annotations

import numba
import numpy as np

from policylab.envs.breakout import ale_random
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    PADDLE_X_OFFSET,
    RAM_ATTRACT_TIMER,
    RAM_BALL_ANGLE,
    RAM_BALL_CLASS,
    RAM_BALL_VX,
    RAM_BALL_VX_FRAC,
    RAM_BALL_VY,
    RAM_BALL_VY_FRAC,
    RAM_BALL_X,
    RAM_BALL_X_FRAC,
    RAM_BALL_Y,
    RAM_BALL_Y_FRAC,
    RAM_BUILD,
    RAM_BUILD_BITS_BYTE,
    RAM_BUILD_BITS_LEFT,
    RAM_BUILD_COUNT,
    RAM_BUILD_SCRIPT,
    RAM_COLOUR_SHADE,
    RAM_COLOURS,
    RAM_DIGIT_HUNDREDS,
    RAM_DIGIT_LIVES,
    RAM_DIGIT_ONES,
    RAM_DIGIT_PLAYER,
    RAM_DIGIT_TENS,
    RAM_FRAME_COUNTER,
    RAM_FRAME_COUNTER_HI,
    RAM_GAME_FEATURES,
    RAM_GAME_ON,
    RAM_GAME_SELECT,
    RAM_LIVES,
    RAM_N,
    RAM_PADDLE2_MASK,
    RAM_PADDLE_COLOUR,
    RAM_PADDLE_GFX,
    RAM_PADDLE_HALF_W,
    RAM_PADDLE_INPUT,
    RAM_PADDLE_READING,
    RAM_PADDLE_X,
    RAM_PLAYER,
    RAM_PLAYERS,
    RAM_SCORE_HI,
    RAM_SCORE_LO,
    RAM_SELECT_SWITCH,
    RAM_SHOW_SCORE,
    RAM_SOUND,
    RAM_SOUND_PITCH,
    RAM_STACK_F9,
    RAM_STACK_FA,
    RAM_STACK_FC,
    RAM_STACK_FD,
    RAM_TOP_WALL_HIT,
    RAM_WALL_BITS,
    RAM_WALL_BITS_TAIL,
    RAM_WALL_END,
    RAM_WALL_LEFT_PF0,
    RAM_WALL_LEFT_PF1,
    RAM_WALL_LEFT_PF2,
    RAM_WALL_RIGHT_PF0,
    RAM_WALL_RIGHT_PF1,
    RAM_WALL_RIGHT_PF2,
)

# --- ALE 0.12.1 paddle (ale_state.hpp): resistance limits, default and per-frame step
PADDLE_MIN, PADDLE_MAX, PADDLE_DELTA = 27450, 790196, 23000
PADDLE_DEFAULT = (PADDLE_MAX - PADDLE_MIN) // 2 + PADDLE_MIN
# minimal action set indices
NOOP, FIRE, RIGHT, LEFT = 0, 1, 2, 3

# UNMODELLED bits: situations the translation does not follow (the env's RAM may then drift from ALE's)
UNMOD_VARIATION = 1  # a game variation other than game 1 (RAM_GAME_FEATURES, RAM_PLAYERS nonzero)
UNMOD_RESET = 2  # the frame counter's high byte wrapped (65,536 frames without reset)

# --- ROM tables (addresses in comments)
SERVE_X = np.array([0xA0, 0x40, 0xC0, 0x60], dtype=np.int64)  # $F788
ROW_POINTS = np.array([7, 7, 4, 4, 1, 1], dtype=np.int64)  # $F78C (BCD)
ROW_SOUND = np.array([0x0A, 0x0C, 0x10, 0x12, 0x16, 0x1C], dtype=np.int64)  # $F792
COL_BYTE = np.array(
    [0x1E, 0x18, 0x18, 0x18, 0x18, 0x12, 0x12, 0x12, 0x12, 0x0C, 0x0C, 0x06, 0x06, 0x06, 0x06, 0x00, 0x00, 0x00],
    dtype=np.int64,
)  # $F798
COLOURS = np.array([0x06, 0x00, 0x46, 0xB6, 0x86, 0xC6, 0x16, 0x26, 0x36, 0x46], dtype=np.int64)  # $F7AA
COL_MASK = np.array(
    [0x3F, 0x3F, 0xCF, 0xF3, 0xFC, 0xFC, 0xF3, 0xCF, 0x3F, 0xCF, 0x3F, 0x3F, 0xCF, 0xF3, 0xFC, 0xFC, 0xF3, 0xCF],
    dtype=np.int64,
)  # $F7BE
BUILD = np.array([0x23, 0x44, 0x82, 0x04, 0x44, 0x51], dtype=np.int64)  # $F7D0
PADDLE_GFX = np.array([0xF0, 0xE0, 0xC0], dtype=np.int64)  # $F7D6
PADDLE_HALF = np.array([0x08, 0x06, 0x04], dtype=np.int64)  # $F7D9
SPEED = np.array(
    [
        0x81,
        0x01,
        0x01,
        0x81,
        0x81,
        0x02,
        0x80,
        0x02,
        0x02,
        0x01,
        0x02,
        0x01,
        0x02,
        0x02,
        0x02,
        0x02,
        0x02,
        0x63,
        0x02,
        0x63,
    ],
    dtype=np.int64,
)  # $F7DC: (frac | int) per x, y
PADDLE_LIMITS = (0x37, 0xBF)  # $F782: player 1's paddle range (RAM_PADDLE_X)

# Pot reading: the kernel samples INPT0 every two scanlines (Y register += 2) in four stretches of code
# (top wall, gap, bricks, lower field); RAM_PADDLE_READING keeps the last Y whose sample had not charged yet. The CPU
# cycle of each stretch's first sample after the dump was released, with the sample spacing of 152 cycles
# (two scanlines): fitted to ALE's RAM_PADDLE_READING over every resistance its paddle can reach with full-strength
# moves (101 values; tests and `bench_breakout_exact.py` check all 101) and over the fractional resistances
# continuous actions reach (2,825 of 2,826 readings from 39 paddle strengths; tests/envs/breakout/
# test_ale_compat.py plays random continuous actions against ALE).
POT_Y0 = np.array([12, 26, 50, 86], dtype=np.int64)
POT_Y1 = np.array([24, 48, 84, 186], dtype=np.int64)
POT_C0 = np.array([1768, 2908, 4782, 7544], dtype=np.int64)

# RAM after ALE's reset_game (power-on, 60 NOOP frames, console reset): the same for every seed
RESET_RAM = np.frombuffer(
    bytes.fromhex(
        "3f3f3f3f3f3fffffffffffffffffffffffffffffffffffffffffffffffffc0c0"
        "c0c0c0c0fffffffffffffffffffffffffff00000ff0000f000050000060046b6"
        "86c6162636465806920008000000000000f100f200f219f105f20000ff00e400"
        "0000000000000000000000000800ffffffffffffff0000050000bad675f6dbf2"
    ),
    dtype=np.uint8,
).astype(np.int64)

# collision latch bits (TIA CXP0FB bit 6, CXBLPF bit 7, CXM0FB/CXM1FB bit 6)
CX_PADDLE, CX_PLAYFIELD, CX_WALL = 1, 2, 4
# screen geometry of the drawn frame (ALE's 210 x 160 screen), in rows and columns
TOP_WALL = (17, 31)  # playfield set across the whole width
BRICK_TOP, BRICK_H = 57, 6  # six rows of bricks, row k on screen rows 57 + 6k .. 62 + 6k
PADDLE_ROWS = (189, 192)  # player 0: GRP0 set on the second line of Y = 180 through the first of Y = 184
SIDE_W = 8  # the side walls are 8-px missiles: the left one rows 17-195, the right one 17-194
LAST_ROW = 195
LAST_ROW_COLUMNS = (46, 56)  # on the last row the ball shows left of these columns (without, with VDELBL)


def kernel_lines() -> list[tuple[int, int, int]]:
    """The display kernel's lines that can show the ball, as (screen row, Y of the ENABL value the TIA
    shows without vertical delay, Y of the value it shows with VDELBL), -1 for a register holding 0.

    The kernel steps Y by 2 every two lines and writes ENABL (through PHP with the stack pointer on the
    TIA) at the start of an iteration's first line, enabled when (Y - RAM_BALL_Y) & $FC == 0; writing GRP1 at
    the start of the second line copies ENABL into the delayed register. RAM_BALL_Y's low bit clears VDELBL,
    so the ball covers four lines at single-line resolution. Between sections the last value lingers:
    one line after the top wall (row 32) and one after the bricks (row 93, the lower field is therefore one
    row further down per Y); the top wall's first iteration has no earlier copy (the previous frame's
    end cleared both); on the last row the end-of-kernel clears of ENABL and of the delayed copy land
    mid-line (`LAST_ROW_COLUMNS`)."""
    out = [(17, -1, -1)]
    for y in range(12, 25, 2):
        out += [(18 + y - 12, y, y - 2 if y > 12 else -1), (19 + y - 12, y, y)]
    out.append((32, 24, 24))
    for y in range(26, 49, 2):
        out += [(33 + y - 26, y, y - 2), (34 + y - 26, y, y)]
    for y in range(50, 85, 2):
        out += [(57 + y - 50, y, y - 2), (58 + y - 50, y, y)]
    out.append((93, 84, 84))
    for y in range(86, 187, 2):
        out += [(94 + y - 86, y, y - 2), (95 + y - 86, y, y)]
    return out


def _ball_rows() -> np.ndarray:
    """(256, 2) int64: first and last screen row of the ball for each RAM_BALL_Y (-1, -2 when not drawn); the
    rows are contiguous for every value."""
    table = np.full((256, 2), (-1, -2), dtype=np.int64)
    for b in range(256):
        rows = [
            row
            for row, y_now, y_del in kernel_lines()
            if (y := (y_del if b % 2 == 0 else y_now)) >= 0 and ((y - b) & 0xFC) == 0
        ]
        if rows:
            assert rows == list(range(rows[0], rows[-1] + 1))
            table[b] = rows[0], rows[-1]
    return table


BALL_ROWS = _ball_rows()


@numba.njit(cache=True, inline="always")
def _pf_bit(m, brick_row, px):
    """Whether playfield pixel column px (0-159) is set on brick row brick_row (0 = top), as the kernel
    writes PF0/PF1/PF2 for the left half then the right half from the wall's bytes (`ram.RAM_WALL_*`)."""
    k = px >> 2
    base = 0
    if k >= 20:
        k -= 20
        base = RAM_WALL_LEFT_PF0 - RAM_WALL_RIGHT_PF0  # the right half's registers sit as far below the left's
    x = 5 - brick_row
    if k < 4:
        return (m[RAM_WALL_LEFT_PF0 - base + x] >> (4 + k)) & 1
    if k < 12:
        return (m[RAM_WALL_LEFT_PF1 - base + x] >> (11 - k)) & 1
    return (m[RAM_WALL_LEFT_PF2 - base + x] >> (k - 12)) & 1


@numba.njit(cache=True)
def collisions(m):
    """The TIA's collision latches after the kernel draws the frame held in RAM `m` (read by the next
    frame's vertical blank): the ball (2 px wide at column RAM_BALL_X + BALL_X_OFFSET, rows `BALL_ROWS`)
    against the top wall and bricks (playfield), the side-wall missiles and the paddle (player 0, four times
    wide, RAM_PADDLE_GFX's pattern from column RAM_PADDLE_X + PADDLE_X_OFFSET)."""
    b = m[RAM_BALL_Y]
    r0 = BALL_ROWS[b, 0]
    r1 = BALL_ROWS[b, 1]
    if r0 < 0:
        return 0
    out = 0
    x0 = m[RAM_BALL_X] + BALL_X_OFFSET
    for dx in range(2):
        px = x0 + dx
        if (px < SIDE_W and r0 <= LAST_ROW) or (px >= 160 - SIDE_W and r0 <= LAST_ROW - 1):
            out |= CX_WALL
    if r0 <= TOP_WALL[1] and r1 >= TOP_WALL[0]:
        out |= CX_PLAYFIELD
    for row in range(max(0, (r0 - BRICK_TOP) // BRICK_H), min(6, (r1 - BRICK_TOP) // BRICK_H + 1)):
        for dx in range(2):  # the brick rows the ball's rows overlap
            px = x0 + dx
            if 0 <= px < 160 and _pf_bit(m, row, px):
                out |= CX_PLAYFIELD
    if r0 <= PADDLE_ROWS[1] and r1 >= PADDLE_ROWS[0]:
        p0 = m[RAM_PADDLE_X] + PADDLE_X_OFFSET
        g = m[RAM_PADDLE_GFX]
        for dx in range(2):
            px = x0 + dx
            k = (px - p0) >> 2
            if px >= p0 and k < 8 and (g >> (7 - k)) & 1:
                out |= CX_PADDLE
    return out


# When RAM_PADDLE_COLOUR is 0, the lower field's samples come one scanline (76 cycles) earlier: the
# bricks routine falls into the lower field's loop through `LDA $BE; STA COLUPF; BEQ $F0B3` ($F0A4), which on
# a zero colour jumps over the loop's first WSYNC. Only attract mode's colour cycling makes it 0 (shade $46 or
# $4E: 256 frames in every 32,768 once the game has sat 65,536 frames unserved). Measured against ALE's
# RAM_PADDLE_READING with RAM_PADDLE_COLOUR set to 0: every reachable resistance agrees for a shift of 74-78 cycles.
POT_LOWER_EARLY = 76


@numba.njit(cache=True)
def paddle_reading(pot, lower_early=False):
    """RAM_PADDLE_READING after the kernel: the last sampled Y (two scanlines per step) at which INPT0 still read low.
    Stella's pot: high once more than int(1.6 * R * 0.01e-6 * 1.19e6) CPU cycles passed since VBLANK
    released the dump transistor; ALE passes its paddle value as R. `lower_early`: the lower field's samples
    start `POT_LOWER_EARLY` cycles sooner (RAM_PADDLE_COLOUR is 0)."""
    needed = np.int64(1.6 * pot * 0.01e-6 * 1.19e6)
    y = 0
    for s in range(4):
        c0 = POT_C0[s] - (POT_LOWER_EARLY if lower_early and s == 3 else 0)
        if needed < c0:
            break
        k = (needed - c0) // 152
        last = POT_Y0[s] + 2 * k
        y = last if last < POT_Y1[s] else POT_Y1[s]
    return y


# Stack bytes. The 6502's stack sits in RAM 121-127 and the model never reads it back (it does not run the
# RTS/RTI that would), so only each frame's last write to a byte matters, and most are the same every frame:
# 126/127 = $F2DB (the overscan's last JSR, at $F2D9), 123 = $D6 (the position handler's JSR, under the
# ball's BRK at $F5F8), 124/125 = $F675 while RAM_SHOW_SCORE bit 7 is set (the score's nested JSR at $F29A), else
# the ball BRK's pushed flags and $F1. Only velocity changes through $F6A8 reach deeper: 121/122.
JSR_SCORE = 0xF675  # return address pushed by the score's nested JSR (RAM_STACK_FD high, RAM_STACK_FC low)


@numba.njit(cache=True, inline="always")
def _times5(a):
    """$F676: the low nibble times 5 (a digit's glyph offset)."""
    return (a & 15) * 5


@numba.njit(cache=True, inline="always")
def _swap(a):
    """$F67F: four ASL/ADC #0 pairs, a nibble swap."""
    return ((a << 4) | (a >> 4)) & 255


@numba.njit(cache=True, inline="always")
def _neg16(m, lo, hi):
    """$F692: negate the 16-bit velocity (RAM lo fraction, RAM hi integer)."""
    a = m[lo]
    m[lo] = (256 - a) & 255
    m[hi] = (((~m[hi]) & 255) + (1 if a == 0 else 0)) & 255


@numba.njit(cache=True, inline="always")
def _bcd_add(m, a):
    """$F1F2: add BCD a to the score (RAM_SCORE_LO, RAM_SCORE_HI)."""
    lo = m[RAM_SCORE_LO]
    s_lo = (lo & 15) + (a & 15)
    if s_lo > 9:
        s_lo += 6
    s_hi = (lo >> 4) + (a >> 4) + (1 if s_lo > 15 else 0)
    if s_hi > 9:
        s_hi += 6
    m[RAM_SCORE_LO] = ((s_hi << 4) | (s_lo & 15)) & 255
    if s_hi > 15:
        hi = m[RAM_SCORE_HI]
        t_lo = (hi & 15) + 1
        if t_lo > 9:
            t_lo += 6
        t_hi = (hi >> 4) + (1 if t_lo > 15 else 0)
        if t_hi > 9:
            t_hi += 6
        m[RAM_SCORE_HI] = ((t_hi << 4) | (t_lo & 15)) & 255


@numba.njit(cache=True)
def _set_speed(m):
    """$F6A8: the ball's new speed from the table by hit count (RAM_BALL_CLASS bits 2-5) and angle
    (RAM_BALL_ANGLE); y turns (JSR $F690 unless it was rising), x keeps its sign (JSR $F68C if it was negative).
    Returns RAM_BALL_CLASS & $3F."""
    y = (m[RAM_BALL_CLASS] & 0x3C) + m[RAM_BALL_ANGLE]
    old_vx = m[RAM_BALL_VX]
    old_vy = m[RAM_BALL_VY]
    t = SPEED[y]
    m[RAM_BALL_VX] = t & 3
    m[RAM_BALL_VX_FRAC] = t & 0xFC
    t = SPEED[y + 1]
    m[RAM_BALL_VY] = t & 3
    m[RAM_BALL_VY_FRAC] = t & 0xFC
    if not (old_vy & 0x80):
        _neg16(m, RAM_BALL_VY_FRAC, RAM_BALL_VY)
        m[RAM_STACK_FA] = 0xF6  # the nested JSR $F6A2 from stack $FA: return $F696
        m[RAM_STACK_F9] = 0x96
    if old_vx & 0x80:
        _neg16(m, RAM_BALL_VX_FRAC, RAM_BALL_VX)
        m[RAM_STACK_FA] = 0x96  # from stack $FB: $F696's low byte lands one lower
    return m[RAM_BALL_CLASS] & 0x3F


@numba.njit(cache=True, inline="always")
def _bits(m, c):
    """JSR $F76E's body: ROL the next byte of RAM_WALL_BITS (RAM_BUILD_BITS_BYTE indexes it, RAM_BUILD_BITS_LEFT
    counts its 8 bits) with carry c; returns the bit rotated out."""
    k = m[RAM_BUILD_BITS_BYTE]
    v = m[RAM_WALL_BITS + k]
    m[RAM_WALL_BITS + k] = ((v << 1) | c) & 255
    m[RAM_BUILD_BITS_LEFT] = (m[RAM_BUILD_BITS_LEFT] - 1) & 255
    if m[RAM_BUILD_BITS_LEFT] == 0:
        m[RAM_BUILD_BITS_BYTE] = (k + 1) & 255
        m[RAM_BUILD_BITS_LEFT] = 8
    return v >> 7


@numba.njit(cache=True)
def _build_step(m, c):
    """JSR $F132 (from $F422): one step of the wall-building animation. RAM_BUILD's low 6 bits count the brick
    bytes still to draw; each step redraws one byte from itself, shuffled by a script ($F7D0, advanced every
    6 bytes through RAM_BUILD_COUNT/RAM_BUILD_SCRIPT) and by bits rotated out of RAM_WALL_BITS. When the count is
    0 and bit 6 is set, the full wall is stored at once. c: the carry the vertical blank arrived with."""
    a = m[RAM_BUILD] & 0x3F
    if a == 0:
        x = m[RAM_BUILD]
        m[RAM_BUILD] = 0
        if x & 0x40:
            for i in range(RAM_WALL_LEFT_PF0, RAM_WALL_END):
                m[i] = 0xC0
            for i in range(RAM_WALL_RIGHT_PF1, RAM_WALL_LEFT_PF0):
                m[i] = 0xFF
            for i in range(RAM_WALL_RIGHT_PF2, RAM_WALL_RIGHT_PF1):
                m[i] = 0x3F
        return
    x = a - 1
    t = BUILD[m[RAM_BUILD_SCRIPT]]
    y = t & 0x0F
    a = m[x]
    r60 = t  # ROL $BC: the script byte's bits pick the steps below
    nc = r60 >> 7
    r60 = ((r60 << 1) | c) & 255
    c = nc
    if c:
        a = _swap(a)
        c = 0
    nc = r60 >> 7
    r60 = ((r60 << 1) | c) & 255
    c = nc
    if c:
        while True:
            nc = a >> 7
            a = ((a << 1) | c) & 255
            c = _bits(m, nc)
            a = (a & 0xFE) | c
            nc = a >> 7
            a = ((a << 1) | c) & 255
            c = nc
            y -= 1
            if y == 0:
                break
    else:
        while True:
            nc = a & 1
            a = (a >> 1) | (c << 7)
            c = _bits(m, nc)
            a = (a & 0x7F) | (c << 7)
            nc = a & 1
            a = (a >> 1) | (c << 7)
            c = nc
            y -= 1
            if y == 0:
                break
    nc = r60 >> 7
    r60 = ((r60 << 1) | c) & 255
    c = nc
    if c:
        c = (a >> 1) & 1
        a >>= 2
    c = r60 >> 7
    if c:
        for _ in range(3):
            nc = a & 1
            a = (a >> 1) | (c << 7)
            c = nc
        a &= 0xC0
    m[x] = a
    m[RAM_BUILD_COUNT] = (m[RAM_BUILD_COUNT] - 1) & 255
    if m[RAM_BUILD_COUNT] == 0:
        m[RAM_BUILD_COUNT] = 6
        m[RAM_BUILD_SCRIPT] = (m[RAM_BUILD_SCRIPT] - 1) & 255
    m[RAM_BUILD] = (m[RAM_BUILD] & 0xC0) | x
    if x == 0:
        for _ in range(4):
            nc = m[RAM_WALL_BITS_TAIL] >> 7
            m[RAM_WALL_BITS_TAIL] = ((m[RAM_WALL_BITS_TAIL] << 1) | c) & 255
            c = nc


@numba.njit(cache=True, inline="always")
def drawn_with(m):
    """What the kernel draws a frame with that the frame's own overscan then changes: the five digit pointers'
    low bytes (RAM_DIGIT_*) packed 8 bits each, so a score or life change shows one frame late; then the
    colours' shade (RAM_COLOUR_SHADE, bits 40-47) and whether a game is on (RAM_GAME_ON bit 7, bit 48: attract
    mode masks the colours with $F7), so attract mode's colour cycling shows one frame late too (`drawn_colour`)."""
    return (
        m[RAM_DIGIT_HUNDREDS]
        | (m[RAM_DIGIT_TENS] << 8)
        | (m[RAM_DIGIT_ONES] << 16)
        | (m[RAM_DIGIT_LIVES] << 24)
        | (m[RAM_DIGIT_PLAYER] << 32)
        | (m[RAM_COLOUR_SHADE] << 40)
        | ((m[RAM_GAME_ON] >> 7) << 48)
    )


@numba.njit(cache=True, inline="always")
def drawn_ram_colour(shown, x):
    """RAM_COLOURS + x as the frame was drawn, from `drawn_with`'s shade and mask: the overscan stores ($F7AA[x]
    XOR shade) AND mask (the default game; RAM_PLAYER's variation is flagged, not drawn)."""
    return (COLOURS[x] ^ ((shown >> 40) & 255)) & (0xFF if (shown >> 48) & 1 else 0xF7)


@numba.njit(cache=True, inline="always")
def drawn_colour(shown, x):
    """The TIA colour the frame was drawn with for RAM_COLOURS + x (the TIA ignores a colour register's bit 0)."""
    return drawn_ram_colour(shown, x) & 0xFE


@numba.njit(cache=True, inline="always")
def _clear_ball(m):
    """$F1E1: no ball in play (velocities, y, the top-wall flag and the hit count cleared)."""
    m[RAM_BALL_VX] = 0
    m[RAM_BALL_VY] = 0
    m[RAM_BALL_VX_FRAC] = 0
    m[RAM_BALL_VY_FRAC] = 0
    m[RAM_BALL_Y] = 0
    m[RAM_TOP_WALL_HIT] = 0
    m[RAM_BALL_CLASS] = 0


@numba.njit(cache=True, inline="always")
def _divide(a, d):
    """$F0F1: quotient and remainder by repeated subtraction while A - d is non-negative as a signed byte."""
    q = 0
    while not ((a - d) & 0x80):
        q += 1
        a = (a - d) & 255
    return q, a


# `frame`'s steps, one per routine of the cartridge. They allocate nothing, so they compile without numba's
# reference counting (`_nrt=False`) and LLVM inlines the frequent ones into `frame`; numba's own inlining
# (`inline="always"`) would leave reference counts on the RAM row there, which cost about a third of the
# frame's speed. A routine only another routine calls is inlined by numba (no reference counts there), which
# compiles sooner than a function of its own.
_routine = numba.njit(cache=True, _nrt=False)


@_routine
def _count_frame(m):
    """$F34D: the frame counter ticks; its 16-bit wrap drops the game into attract mode ($F3B4). Returns
    (UNMODELLED bits, whether the frame's game logic ends here)."""
    flags = 0
    done = False
    m[RAM_FRAME_COUNTER] = (m[RAM_FRAME_COUNTER] + 1) & 255
    if m[RAM_FRAME_COUNTER] == 0:
        m[RAM_FRAME_COUNTER_HI] = (m[RAM_FRAME_COUNTER_HI] + 1) & 255
        if m[RAM_FRAME_COUNTER_HI] == 0:
            flags = UNMOD_RESET
            m[RAM_SHOW_SCORE] = 0
            m[RAM_GAME_ON] = 0
            m[RAM_FRAME_COUNTER_HI] = 0
            _clear_ball(m)
            done = True
        else:
            m[RAM_ATTRACT_TIMER] = (m[RAM_ATTRACT_TIMER] + 1) & 255
            if (m[RAM_GAME_ON] ^ m[RAM_SHOW_SCORE]) != 0 and m[RAM_PLAYERS] != 0:
                flags = UNMOD_VARIATION
    return flags, done


@numba.njit(cache=True, inline="always")
def _serve(m):
    """$F401: a new ball at y $70 falling 1 px/frame, its x and direction from the frame counter's low 2 bits
    ($F788). Returns the carry the ASL of the table's x leaves (the direction)."""
    a = SERVE_X[m[RAM_FRAME_COUNTER] & 3]
    c = a >> 7
    m[RAM_BALL_X] = (a << 1) & 255
    m[RAM_BALL_VY] = 1
    m[RAM_BALL_VX] = 0xFF if c else 1
    m[RAM_BALL_Y] = 0x70
    m[RAM_SOUND] = 0x48
    return c


@numba.njit(cache=True, inline="always")
def _lose_ball(m):
    """$F3DF: the ball is lost and a life with it; with none left the game is over ($F3B8). Returns whether
    it is."""
    _clear_ball(m)
    m[RAM_LIVES] = (m[RAM_LIVES] - 1) & 255
    over = m[RAM_LIVES] == 0
    if over:
        m[RAM_GAME_ON] = 0
        m[RAM_FRAME_COUNTER] = 0
        m[RAM_FRAME_COUNTER_HI] = 0
    return over


@_routine
def _play(m, fire):
    """$F38F: the select switch is up; in a game, the serve when the button is down and no ball is in play,
    or the lost ball. Returns (UNMODELLED bits, the carry it leaves, whether the game just ended)."""
    flags = 0
    c = 1  # the LSR of SWCHB's select bit (not pressed)
    over = False
    m[RAM_SELECT_SWITCH] = 0xFF
    if m[RAM_SHOW_SCORE] & m[RAM_GAME_ON] & 0x80:
        m[RAM_ATTRACT_TIMER] = 0
        if m[RAM_GAME_FEATURES] != 0 or m[RAM_PLAYERS] != 0 or m[RAM_PLAYER] != 0:
            flags = UNMOD_VARIATION
        y = m[RAM_BALL_Y]
        if y == 0:
            if fire:
                c = _serve(m)
        elif y >= 0xD0:
            over = _lose_ball(m)
        else:
            c = 0
    return flags, c, over


@_routine
def _paddle_bounce(m, c):
    """$F428: the paddle met the ball on its way down: the x direction and the angle from where it met it
    (paddle x + half width + carry c - ball x), one more hit, the new speed; a hit at exactly 432 points (one
    wall cleared) refills the wall."""
    a = (m[RAM_PADDLE_X] + m[RAM_PADDLE_HALF_W] + c) & 255
    y = (a - m[RAM_BALL_X]) & 255
    if y == 0:
        m[RAM_BALL_X] = (m[RAM_BALL_X] + (0xFC if m[RAM_BALL_VX] & 0x80 else 4)) & 255
        y = 1
    if (y ^ m[RAM_BALL_VX]) & 0x80:
        _neg16(m, RAM_BALL_VX_FRAC, RAM_BALL_VX)
    a = y
    if a & 0x80:
        a = (256 - a) & 255
    if not ((a - 9) & 0x80):
        a = 8
    x = m[RAM_PADDLE_HALF_W]
    if x == 4:
        a = (a << 1) & 255
    if x == 6 and ((a - 4) & 0x80):
        a = (a + (1 if a >= 4 else 0)) & 255
    m[RAM_BALL_ANGLE] = ((a + 3) & 4) >> 1
    a = m[RAM_BALL_CLASS] & 0x3F
    if (a - 12) & 0x80:
        a = a + 1
    m[RAM_BALL_CLASS] = a | 0x40
    _set_speed(m)
    m[RAM_SOUND] = 0x88
    if m[RAM_SCORE_HI] == 4 and m[RAM_SCORE_LO] == 0x32:
        m[RAM_BUILD] = 0xC0


@numba.njit(cache=True, inline="always")
def _hit_brick(m, y):
    """$F4C4: the brick under the ball's position (row from y, column from x, clamped), if it is still there:
    removed, sounded and scored, and the ball's new speed (the fastest after a brick of the top three rows).
    Returns UNMODELLED bits (a position outside the wall's bytes)."""
    s = y - 0x32 - (0 if y >= 0x28 else 1)
    row, _ = _divide(s if s >= 0 else 0, 6)
    neg = (256 - row) & 255
    s = m[RAM_BALL_X] - 0x39 - (0 if neg + 5 > 255 else 1)
    col = s >> 3 if s >= 0 else 0
    if not ((col - 0x12) & 0x80):
        col = 0x11
    x = ((neg + 5) + COL_BYTE[col]) & 255
    if x >= 128 or row > 5:
        return UNMOD_VARIATION
    v = m[x] & COL_MASK[col]
    if v != m[x]:
        m[x] = v
        m[RAM_SOUND_PITCH] = ROW_SOUND[row]
        m[RAM_SOUND] = 6
        _bcd_add(m, ROW_POINTS[row])
        if row < 3:
            m[RAM_BALL_ANGLE] = 0
            m[RAM_BALL_CLASS] = (m[RAM_BALL_CLASS] & 0xC0) | 0x10
        m[RAM_BALL_CLASS] = _set_speed(m) | 0x80
    return 0


@_routine
def _playfield_bounce(m):
    """$F4A4: the ball met the playfield: above y $28 the top wall (y turns, the paddle narrows), below it a
    brick, unless one already counted since the ball last turned. Returns UNMODELLED bits."""
    flags = 0
    y = m[RAM_BALL_Y]
    if (y - 0x28) & 0x80:
        m[RAM_TOP_WALL_HIT] = 0x80
        m[RAM_SOUND] = 0x88
        _neg16(m, RAM_BALL_VY_FRAC, RAM_BALL_VY)
        m[RAM_BALL_CLASS] = m[RAM_BALL_CLASS] & 0x3F
    elif not (m[RAM_BALL_CLASS] & 0x80):
        flags = _hit_brick(m, y)
    return flags


@_routine
def _side_wall_bounce(m):
    """$F542: the ball met a side wall: x turns if it moves into the wall."""
    if not ((m[RAM_BALL_X] ^ m[RAM_BALL_VX]) & 0x80):
        _neg16(m, RAM_BALL_VX_FRAC, RAM_BALL_VX)
        if (m[RAM_SOUND] & 0x3F) == 0:
            m[RAM_SOUND] = 0x46


@_routine
def _size_paddle(m):
    """$F55F: the paddle's width and pattern, narrow once the ball reached the top wall ($F7D9, $F7D6); no
    second paddle. Returns UNMODELLED bits (a team mate's paddle in control)."""
    k = 1 if m[RAM_TOP_WALL_HIT] & 0x80 else 0
    m[RAM_PADDLE_HALF_W] = PADDLE_HALF[k]
    m[RAM_PADDLE_GFX] = PADDLE_GFX[k]
    m[RAM_PADDLE2_MASK] = 0
    return UNMOD_VARIATION if m[RAM_PADDLE_INPUT] & 2 else 0


@_routine
def _move_paddle(m):
    """$F6E9: the paddle moves halfway from where it was to where the pot reading puts it, clamped ($F782)."""
    a = m[RAM_PADDLE_READING] + 0x14
    s = ((a & 255) ^ 0xFF) + m[RAM_PADDLE_X] + (a >> 8)
    a = ((s >> 8) << 7) | ((s & 255) >> 1)
    if a < PADDLE_LIMITS[0]:
        a = PADDLE_LIMITS[0]
    if a >= PADDLE_LIMITS[1]:
        a = PADDLE_LIMITS[1]
    m[RAM_PADDLE_X] = a


@_routine
def _move_ball(m):
    """$F5C1: the ball moves (y += v_y, x -= the stored x velocity, 8.8 fixed point); the stack bytes its BRK at
    $F5F8 leaves (the score's return address while the score shows)."""
    s = m[RAM_BALL_VY_FRAC] + m[RAM_BALL_Y_FRAC]
    m[RAM_BALL_Y_FRAC] = s & 255
    s = m[RAM_BALL_VY] + m[RAM_BALL_Y] + (s >> 8)
    m[RAM_BALL_Y] = s & 255
    s = m[RAM_BALL_X_FRAC] - m[RAM_BALL_VX_FRAC]
    m[RAM_BALL_X_FRAC] = s & 255
    old = m[RAM_BALL_X]
    s = old - m[RAM_BALL_VX] - (0 if s >= 0 else 1)
    res = s & 255
    m[RAM_BALL_X] = res
    if m[RAM_SHOW_SCORE] & 0x80:
        m[RAM_STACK_FD] = JSR_SCORE >> 8
        m[RAM_STACK_FC] = JSR_SCORE & 255
    else:  # the ball's BRK: flags after its SBC (N = Z = 0 from LDX #4), and the handler's JSR
        v = 1 if ((old ^ m[RAM_BALL_VX]) & (old ^ res) & 0x80) else 0
        m[RAM_STACK_FD] = 0x34 | (v << 6) | (1 if s >= 0 else 0)
        m[RAM_STACK_FC] = 0xF1


@_routine
def _point_digits(m):
    """$F265: the five digits' glyph pointers: in a game the score, lives and player, otherwise the game number
    and the players."""
    if m[RAM_SHOW_SCORE] & 0x80:
        m[RAM_DIGIT_HUNDREDS] = _times5(m[RAM_SCORE_HI])
        m[RAM_DIGIT_ONES] = _times5(m[RAM_SCORE_LO])
        m[RAM_DIGIT_TENS] = _times5(_swap(m[RAM_SCORE_LO]))
        m[RAM_DIGIT_LIVES] = _times5(m[RAM_LIVES])
        x = m[RAM_PLAYER]
    else:
        q, a = _divide((m[RAM_GAME_SELECT] >> 2) + 1, 10)
        m[RAM_DIGIT_ONES] = _times5(a)
        a = _times5(q)
        m[RAM_DIGIT_TENS] = a if a != 0 else 0x32
        x = m[RAM_PLAYERS]
    m[RAM_DIGIT_PLAYER] = _times5(x + 1)


@_routine
def _colours(m):
    """$F2D7: the colours, $F7AA XOR the shade (attract mode's timer, nibble-swapped), masked with $F7 while no
    game is on."""
    shade = _swap(m[RAM_ATTRACT_TIMER])
    if shade != m[RAM_COLOUR_SHADE] or not (m[RAM_GAME_ON] & 0x80) or m[RAM_PLAYER] != 0:  # else they hold it
        m[RAM_COLOUR_SHADE] = shade
        mask = 0xFF if m[RAM_GAME_ON] & 0x80 else 0xF7
        for x in range(9, -1, -1):
            a = COLOURS[x]
            if 2 <= x < 4 and m[RAM_PLAYER] != 0:
                a ^= 0x90
            m[RAM_COLOURS + x] = (a ^ shade) & mask


@numba.njit(cache=True)
def frame(m, pot, fire):
    """One emulated frame of the cartridge on env state row `m` (int64 (NI,), RAM bytes first): `pot` is ALE's
    paddle resistance after the action (the kernel measures it into RAM_PADDLE_READING: `paddle_reading`),
    `fire` whether the paddle button is down. Returns UNMODELLED bits for anything met outside the translated
    game. Temporaries and stack bytes get their end-of-frame values only."""
    cx = collisions(m)  # latched while the frame now in RAM was drawn
    reading = paddle_reading(pot, m[RAM_PADDLE_COLOUR] == 0)  # the kernel runs with the last overscan's colours
    m[SHOWN] = drawn_with(m)  # this frame's kernel draws the digits last frame's overscan pointed at
    # ---- vertical blank ($F34D)
    flags, done = _count_frame(m)
    c = 1  # the carry $F38F leaves for the build step and the paddle bounce (`_play`)
    if not done:
        played, c, done = _play(m, fire)
        flags |= played
    if not done and (m[RAM_BUILD] & 0x80):  # $F41E
        _build_step(m, c)
        done = True
    if not done:  # the collisions the TIA latched
        if (cx & CX_PADDLE) and not (m[RAM_BALL_CLASS] & 0x40):
            _paddle_bounce(m, c)
        if cx & CX_PLAYFIELD:
            flags |= _playfield_bounce(m)
        if cx & CX_WALL:
            _side_wall_bounce(m)
    flags |= _size_paddle(m)
    _move_paddle(m)
    _move_ball(m)
    m[RAM_PADDLE_INPUT] = m[RAM_PLAYER]  # $F606: the next frame's kernel reads the player's paddle
    # ---- the display kernel's effect on RAM (RAM 111-116, its row counters, end at $FF as they started)
    m[RAM_PADDLE_READING] = reading
    # ---- overscan ($F25E)
    _point_digits(m)
    if m[RAM_SOUND] & 0x3F:  # $F2CB: the sound's countdown
        m[RAM_SOUND] = m[RAM_SOUND] - 1
    _colours(m)
    return flags


# --- the batch: `ShadowBreakout`'s state arrays, with the physics kernel's names and this model's contents.
# I[i, :128] is env i's RAM; after it, ALE's paddle resistance, the last applied action, agent steps, the game
# over flag, ALE's score (as its Breakout settings read RAM_SCORE_HI/LO), lives, the UNMODELLED bits and the digit
# pointers and colours the last frame was drawn with (`drawn_with`). F holds the
# previous observation's ball x, y and in-play flag (for velocities, as `ale.ram_features`).
POT, LAST_ACT, STEPS, TERM, SCORE, LIVES, FLAGS, SHOWN = range(RAM_N, RAM_N + 8)
NI = RAM_N + 8
PBX, PBY, PIN = range(3)
NF = 3


@numba.njit(cache=True, inline="always")
def ale_score(m):
    """ALE's Breakout score: 1 * (RAM_SCORE_LO & 15) + 10 * (RAM_SCORE_LO >> 4) + 100 * (RAM_SCORE_HI & 15)."""
    return (m[RAM_SCORE_LO] & 15) + 10 * (m[RAM_SCORE_LO] >> 4) + 100 * (m[RAM_SCORE_HI] & 15)


@numba.njit(cache=True, inline="always")
def _observe(F, I, i, obs):
    """Env i's contract features from its RAM, as `ale.ram_features` reads ALE's."""
    m = I[i]
    in_play = m[RAM_BALL_Y] != 0
    bx = m[RAM_BALL_X] + BALL_X_OFFSET if in_play else 0
    by = m[RAM_BALL_Y] + BALL_Y_OFFSET if in_play else 0
    obs[i, 0] = bx
    obs[i, 1] = by
    if in_play and F[i, PIN] > 0:
        obs[i, 2] = bx - F[i, PBX]
        obs[i, 3] = by - F[i, PBY]
    else:
        obs[i, 2] = 0.0
        obs[i, 3] = 0.0
    obs[i, 4] = 1.0 if in_play else 0.0
    obs[i, 5] = m[RAM_PADDLE_X] + PADDLE_X_OFFSET
    obs[i, 6] = 2 * m[RAM_PADDLE_HALF_W]
    obs[i, 7] = m[RAM_LIVES]
    obs[i, 8] = ale_score(m)
    F[i, PBX] = bx
    F[i, PBY] = by
    F[i, PIN] = 1.0 if in_play else 0.0


@numba.njit(cache=True, nogil=True)  # a learner's shards step their envs on parallel threads
def reset_kernel(p, F, I, bricks, rng, mt, seeds, obs):
    """A fresh ALE emulator per env after `reset_game`: the reset RAM, the paddle at ALE's default
    resistance, NOOP as the previous action, ALE's MT19937 seeded with the env's seed."""
    for i in range(I.shape[0]):
        ale_random.mt_seed(mt, rng, i, seeds[i])
        for k in range(RAM_N):
            I[i, k] = RESET_RAM[k]
        I[i, POT] = PADDLE_DEFAULT
        I[i, LAST_ACT] = NOOP
        I[i, STEPS] = 0
        I[i, TERM] = 0
        I[i, SCORE] = ale_score(I[i])
        I[i, LIVES] = I[i, RAM_LIVES]
        I[i, FLAGS] = 0
        I[i, SHOWN] = drawn_with(I[i])
        F[i, PIN] = 0.0
        _observe(F, I, i, obs)


@numba.njit(cache=True, inline="always")
def pot_after(pot, action):
    """ALE's paddle resistance after one frame of `action`: RIGHT lowers it and LEFT raises it by ALE's
    step, clamped to the paddle's travel."""
    if action == RIGHT:
        return max(PADDLE_MIN, pot - PADDLE_DELTA)
    if action == LEFT:
        return min(PADDLE_MAX, pot + PADDLE_DELTA)
    return pot


@numba.njit(cache=True, nogil=True)  # a learner's shards step their envs on parallel threads
def step_kernel(p, F, I, bricks, rng, mt, actions, obs, reward, terminated, max_steps):
    """One agent step for every env: `p.frameskip` frames, each with ALE's sticky decision from the env's
    MT19937 stream (`ale_random.step_repeats`: two draws per frame), the paddle resistance moved by the applied action (RIGHT lowers
    it, LEFT raises it, by ALE's step, clamped), then the cartridge's frame. As ALE, no frame runs once
    the game is over (lives 0); reward is the change of ALE's score."""
    frameskip = p.frameskip
    sticky = p.sticky_prob
    for i in range(I.shape[0]):
        reward[i] = 0.0
        if I[i, TERM] or (max_steps > 0 and I[i, STEPS] >= max_steps):
            terminated[i] = I[i, TERM] == 1
            continue
        a = actions[i]
        m = I[i]
        pot = I[i, POT]
        last = I[i, LAST_ACT]
        before = I[i, SCORE]
        repeats = ale_random.step_repeats(mt, rng, i, sticky, frameskip)
        for f in range(frameskip):
            if not (repeats >> np.uint64(f)) & np.uint64(1):
                last = a
            if last == RIGHT or last == LEFT:
                pot = pot_after(pot, last)
            I[i, FLAGS] |= frame(m, pot, last == FIRE)
            if m[RAM_LIVES] == 0:
                I[i, TERM] = 1
                break
        I[i, POT] = pot
        I[i, LAST_ACT] = last
        I[i, SCORE] = ale_score(m)
        I[i, LIVES] = m[RAM_LIVES]
        I[i, STEPS] += 1
        reward[i] = I[i, SCORE] - before
        terminated[i] = I[i, TERM] == 1
        _observe(F, I, i, obs)


@numba.njit(cache=True, nogil=True)  # a learner's shards step their envs on parallel threads
def brick_flags(I):
    """Live bricks (n, 6, 18) uint8, top row first, of the RAM rows in I (any integer array whose first
    RAM_WALL_END columns are the wall's bytes: this model's state, or ALE's `getRAM` rows): brick c of a row is
    the playfield at its left pixel column 8 + 8c (the ROM clears both bits of a brick together). The one decoder
    of the wall in Breakout's RAM, for this model and for ALE's recorded RAM alike; one row:
    `brick_flags(ram[None])[0]`.

    The wall is kept as the 2600 playfield registers of each brick row: six groups of 6 bytes (byte 5 - row of
    a group holds that row); 2 bits per 8 px brick. Group 5 = left PF0 (bits 6-7: col 0), group 4 = left PF1
    (cols 1-4, MSB first), group 3 = left PF2 (cols 5-8, LSB first), group 2 = right PF0 (bits 4-5 col 9, bits
    6-7 col 10), group 1 = right PF1 (cols 11-14, MSB first), group 0 = right PF2 (cols 15-17)."""
    out = np.zeros((I.shape[0], 6, 18), dtype=np.uint8)
    for i in range(I.shape[0]):
        for row in range(6):
            for c in range(18):
                out[i, row, c] = _pf_bit(I[i], row, 8 + 8 * c)
    return out
