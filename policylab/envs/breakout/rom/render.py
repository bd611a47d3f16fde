"""ALE's Breakout screen drawn from the game's RAM: the one drawing of both Breakout envs (frames, rows, layers).

Where each object is drawn, and in which colours: docs/breakout.md, "Module notes"."""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np

from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    PADDLE_X_OFFSET,
    RAM_BACKGROUND_COLOUR,
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_DIGITS,
    RAM_PADDLE_GFX,
    RAM_PADDLE_X,
    RAM_SHOW_SCORE,
    RAM_WALL_LEFT_PF0,
    RAM_WALL_LEFT_PF1,
    RAM_WALL_LEFT_PF2,
    RAM_WALL_RIGHT_PF0,
    RAM_WALL_RIGHT_PF1,
    RAM_WALL_RIGHT_PF2,
)
from policylab.envs.breakout.rom import kernel as rom_kernel

# ALE 0.12.1's NTSC palette (src/ale/common/Palettes.hpp), the RGB of each even colour byte
_NTSC = bytes.fromhex(
    "0000004a4a4a6f6f6f8e8e8eaaaaaac0c0c0d6d6d6ecececebebeb"[:0] + "0000004a4a4a6f6f6f8e8e8eaaaaaac0c0c0d6d6d6ececec"
    "48480069690f86861da2a22abbbb35d2d240e8e84afcfc54"
    "7c2c00904811a26221b47a30c3903dd2a44adfb755ecc860"
    "901c00a33915b55328c66c3ad5824ae39759f0aa67fcbc74"
    "940000a71a1ab83232c84848d65c5ce46f6ff08080fc9090"
    "84006497197aa8308fb846a2c659b3d46cc3e07cd2ec8ce0"
    "50008468199a7d30ad9246c0a459d0b56ce0c57ceed48cfc"
    "140090331aa34e32b56848c67f5cd5956fe3a980f0bc90fc"
    "000094181aa72d32b84248c8545cd6656fe47580f08490fc"
    "001c88183b9d2d57b04272c2548ad265a0e175b5ef84c8fc"
    "0030641850802d6d984288b054a0c565b7d975cceb84e0fc"
    "00403018624e2d8169429e8254b89965d1ae75e7c284fcd4"
    "0044001a661a32843248a0485cba5c6fd26f80e88090fc90"
    "143c00355f18527e2d6e9c4287b7549ed065b4e775c8fc84"
    "3038005059166d762b88923ea0ab4fb7c25fccd86ee0ec7c"
    "482c00694d14866a26a28638bb9f47d2b656e8cc63fce070"
)
PALETTE = np.frombuffer(_NTSC, dtype=np.uint8).reshape(128, 3)

SCORE_ROWS = (5, 14)
WALL_TOP = 17
HMOVE_BLANK = 8
RECOLOUR_ROW = 189  # the lower loop's paddle lines set COLUP0/COLUP1 from RAM_COLOURS + 2 and + 3
OVERSCAN_BG = (203, 55)  # the overscan stores the new background (RAM_BACKGROUND_COLOUR) here: ALE's last rows show it


GRAY = np.round(PALETTE.astype(np.float64) @ np.array([0.2989, 0.587, 0.114])).astype(np.uint8)
"""ALE's grayscale screen: each palette colour's luminance, 0.2989 R + 0.587 G + 0.114 B, rounded."""


@lru_cache(maxsize=1)
def rom_bytes() -> np.ndarray:
    """The cartridge (ale-py ships it) as uint8; its glyph tables are read where the kernel reads them."""
    from ale_py import roms

    return np.frombuffer(roms.get_rom_path("breakout").read_bytes(), dtype=np.uint8).copy()


@numba.njit(cache=True, inline="always")
def _pf_on(pf0, pf1, pf2, k):
    """Whether 4-px group k (0-19) of one half of a playfield line is set (PF0 bits 4-7, PF1 bits 7-0, PF2
    bits 0-7)."""
    if k < 4:
        return (pf0 >> (4 + k)) & 1
    if k < 12:
        return (pf1 >> (11 - k)) & 1
    return (pf2 >> (k - 12)) & 1


@numba.njit(cache=True, inline="always")
def _pf_line(line, x0, pf0, pf1, pf2, colour):
    """Paint one half of a playfield line (80 px from column x0) where its bits are set."""
    for k in range(20):
        if _pf_on(pf0, pf1, pf2, k):
            for d in range(4):
                line[x0 + 4 * k + d] = colour


@numba.njit(cache=True, inline="always")
def _glyph(rom, shown, m, d, off):
    """Byte `off` of digit d's glyph: the pointer's low byte as drawn (`shown`), its high byte at RAM_DIGITS + 1 +
    2d; the 2 KB ROM appears at $F000 (and its mirrors)."""
    return rom[((m[RAM_DIGITS + 1 + 2 * d] << 8 | ((shown >> (8 * d)) & 255)) + off) & 0x7FF]


@numba.njit(cache=True, inline="always")
def lower_up(shown):
    """1 when the frame's lower field, walls' foot and overscan were drawn a line higher: RAM_PADDLE_COLOUR was 0
    when it was drawn (`rom.kernel.POT_LOWER_EARLY`: the lower field's first WSYNC is skipped; only attract mode
    gets there, where no ball is in play)."""
    return 1 if rom_kernel.drawn_ram_colour(shown, 2) == 0 else 0


@numba.njit(cache=True, inline="always")
def ball_colour(shown, r):
    """The ball's colour on row r: the playfield colour of its row (the wall's above the bricks, a brick row's),
    then COLUP0."""
    if r < rom_kernel.BRICK_TOP:
        return rom_kernel.drawn_colour(shown, 0)
    if r < rom_kernel.BRICK_TOP + 6 * rom_kernel.BRICK_H:
        return rom_kernel.drawn_colour(shown, 9 - (r - rom_kernel.BRICK_TOP) // rom_kernel.BRICK_H)
    return rom_kernel.drawn_colour(shown, 2)


@numba.njit(cache=True, inline="always")
def wall_colour(shown, r, right):
    """The side wall's colour on row r (missile 1 on the left, COLUP1; missile 0 on the right, COLUP0; the
    playfield colour above the recoloured foot), -1 where the wall is not drawn."""
    up = lower_up(shown)
    if r < WALL_TOP or r > rom_kernel.LAST_ROW - up - right:
        return -1
    if r < RECOLOUR_ROW - up:
        return rom_kernel.drawn_colour(shown, 0)
    return rom_kernel.drawn_colour(shown, 2 if right else 3)


@numba.njit(cache=True, inline="always")
def background(m, r, c):
    """The background at (r, c): the colour the frame was drawn with; black for the first 8 pixels of row 0 (the
    line of the frame's one HMOVE); ALE's last rows are overscan lines, from row 203 column 55 on in the
    background the overscan has just stored (RAM_BACKGROUND_COLOUR, already changed when attract mode's colours
    cycle)."""
    shown = m[rom_kernel.SHOWN]
    over = OVERSCAN_BG[0] - lower_up(shown)
    if r > over or (r == over and c >= OVERSCAN_BG[1]):
        return m[RAM_BACKGROUND_COLOUR] & 0xFE
    if r == 0 and c < HMOVE_BLANK:
        return 0
    return rom_kernel.drawn_colour(shown, 1)


@numba.njit(cache=True, inline="always")
def ball_column(m):
    """The ball's left column (RAM_BALL_X + BALL_X_OFFSET, wrapped into 0..159); it is 2 px wide and wraps at
    160."""
    x0 = m[RAM_BALL_X] + BALL_X_OFFSET
    if x0 < 0:
        x0 += 160
    elif x0 >= 160:
        x0 -= 160
    return x0


@numba.njit(cache=True, inline="always")
def moving_objects(m):
    """What moves in frame m, as plain integers (a compiled caller passes them without reference counting): the
    ball's first and last row (`rom.kernel.BALL_ROWS` of RAM_BALL_Y), left column (`ball_column`) and the column
    its last row is cut at (the kernel's clears land mid-line); the paddle's first and last row (189-192, a line
    higher: `lower_up`), left column (RAM_PADDLE_X + PADDLE_X_OFFSET: 8..144, it wraps at most once), pattern
    (RAM_PADDLE_GFX, each bit 4 px) and colour; and the frame's drawn colours (`rom.kernel.drawn_with`)."""
    shown = m[rom_kernel.SHOWN]
    b = m[RAM_BALL_Y]
    up = lower_up(shown)
    return (
        rom_kernel.BALL_ROWS[b, 0],
        rom_kernel.BALL_ROWS[b, 1],
        ball_column(m),
        rom_kernel.LAST_ROW_COLUMNS[1 - (b & 1)],
        rom_kernel.PADDLE_ROWS[0] - up,
        rom_kernel.PADDLE_ROWS[1] - up,
        m[RAM_PADDLE_X] + PADDLE_X_OFFSET,
        m[RAM_PADDLE_GFX],
        rom_kernel.drawn_colour(shown, 2),
        shown,
    )


@numba.njit(cache=True, inline="always")
def moving_on_row(objects, r):
    """Whether anything that moves (`moving_objects`) is on row r: where not, `moving_colour` is -1 all along it."""
    return objects[0] <= r <= objects[1] or objects[4] <= r <= objects[5]


@numba.njit(cache=True, inline="always")
def moving_colour(objects, r, c):
    """The colour byte at (r, c) of what moves (`moving_objects`): the paddle over the side walls over the ball;
    -1 where the still layer (`draw_row` without `moving`) shows."""
    ball_r0, ball_r1, ball_x, ball_cut, paddle_r0, paddle_r1, paddle_x, pattern, paddle_colour, shown = objects
    if paddle_r0 <= r <= paddle_r1:
        k = c - paddle_x
        if k < 0:
            k += 160
        if k < 32 and (pattern >> (7 - k // 4)) & 1:
            return paddle_colour
    if (
        ball_r0 <= r <= ball_r1
        and (c == ball_x or c == ball_x + 1 or c == ball_x + 1 - 160)
        and (r < rom_kernel.LAST_ROW or c < ball_cut)
    ):
        if (
            rom_kernel.SIDE_W <= c < 160 - rom_kernel.SIDE_W
            or wall_colour(shown, r, 0 if c < rom_kernel.SIDE_W else 1) < 0
        ):
            return ball_colour(shown, r)
    return -1


@numba.njit(cache=True)
def draw_row(m, rom, r, line, moving=True):
    """Row r of the frame the kernel drew for an exact-model state row m (RAM bytes, then the kernel's extras:
    the digit pointers and colours it drew with, `rom.kernel.drawn_with`) into line (160,): the TIA colour
    byte of each pixel. Without the ball and the paddle when not `moving`: the still layer, which changes only
    when a brick, the score or a colour does (`paint_moving` completes it)."""
    colour = rom_kernel.drawn_colour(m[rom_kernel.SHOWN], 1)
    for c in range(160):
        line[c] = colour
    _paint_row(m, rom, r, line, moving)


@numba.njit(cache=True, inline="always")
def _paint_score(m, rom, r, line):
    """Score, lives and player on row r (5-14): the kernel's five glyph rows, two lines each, bottom glyph byte
    last, as playfield in the playfield colour."""
    shown = m[rom_kernel.SHOWN]
    off = 4 - (r - SCORE_ROWS[0]) // 2
    g0 = _glyph(rom, shown, m, 0, off)
    g1 = _glyph(rom, shown, m, 1, off)
    g2 = _glyph(rom, shown, m, 2, off)
    g3 = _glyph(rom, shown, m, 3, off)
    g4 = _glyph(rom, shown, m, 4, off)
    pf_colour = rom_kernel.drawn_colour(shown, 0)
    _pf_line(line, 0, 0, g0 & 0x0F & m[RAM_SHOW_SCORE], (g1 & 0x0F) | (g2 & 0xF0), pf_colour)
    _pf_line(line, 80, 0, g3 & 0xF0 & m[RAM_SHOW_SCORE], g4 & 0x0F, pf_colour)


@numba.njit(cache=True, inline="always")
def _paint_bricks(m, r, line):
    """Brick row (r - 57) // 6 on row r: the playfield bits of the wall's bytes in the row's colour."""
    x = 5 - (r - rom_kernel.BRICK_TOP) // rom_kernel.BRICK_H
    colour = rom_kernel.drawn_colour(m[rom_kernel.SHOWN], 4 + x)
    _pf_line(line, 0, m[RAM_WALL_LEFT_PF0 + x], m[RAM_WALL_LEFT_PF1 + x], m[RAM_WALL_LEFT_PF2 + x], colour)
    _pf_line(line, 80, m[RAM_WALL_RIGHT_PF0 + x], m[RAM_WALL_RIGHT_PF1 + x], m[RAM_WALL_RIGHT_PF2 + x], colour)


@numba.njit(cache=True, inline="always")
def _paint_walls(m, r, line):
    """The side walls' pixels on row r."""
    left = wall_colour(m[rom_kernel.SHOWN], r, 0)
    if left >= 0:
        for c in range(rom_kernel.SIDE_W):
            line[c] = left
    right = wall_colour(m[rom_kernel.SHOWN], r, 1)
    if right >= 0:
        for c in range(160 - rom_kernel.SIDE_W, 160):
            line[c] = right


@numba.njit(cache=True, inline="always")
def _paint_over_row(m, r, line, moving):
    """What lies over the playfield on row r: the side walls, the ball where they are not (they are drawn over it),
    the paddle over everything (the ball and the paddle only when `moving`)."""
    _paint_walls(m, r, line)
    if moving:
        paint_moving(m, r, line)


@numba.njit(cache=True, inline="always")
def paint_moving(m, r, line):
    """Paint on row r of the frame's still layer (`draw_row` without `moving`) what moves (`moving_colour`): row r
    of the whole frame."""
    objects = moving_objects(m)
    if objects[0] <= r <= objects[1]:
        for c in (objects[2], objects[2] + 1 if objects[2] < 159 else 0):
            colour = moving_colour(objects, r, c)
            if colour >= 0:
                line[c] = colour
    if objects[4] <= r <= objects[5]:  # the paddle is on top: its pattern's pixels, 4 per bit
        for k in range(8):
            if (objects[7] >> (7 - k)) & 1:
                for d in range(4):
                    c = objects[6] + 4 * k + d
                    line[c if c < 160 else c - 160] = objects[8]


@numba.njit(cache=True, inline="always")
def _background_exceptions(m, r, line):
    """Where row r's background is not the frame's background colour (row 0's HMOVE blank, the overscan rows)."""
    if r == 0 or r >= OVERSCAN_BG[0] - lower_up(m[rom_kernel.SHOWN]):
        for c in range(160):
            line[c] = background(m, r, c)


@numba.njit(cache=True, inline="always")
def _paint_row(m, rom, r, line, moving):
    """Paint on row r, which holds the frame's background colour, what differs from it, in the order the screen
    stacks the objects: the background's own exceptions, score, top wall, bricks, then `_paint_over_row`."""
    _background_exceptions(m, r, line)
    if SCORE_ROWS[0] <= r <= SCORE_ROWS[1]:
        _paint_score(m, rom, r, line)
    if rom_kernel.TOP_WALL[0] <= r <= rom_kernel.TOP_WALL[1]:
        colour = rom_kernel.drawn_colour(m[rom_kernel.SHOWN], 0)
        for c in range(160):
            line[c] = colour
    if rom_kernel.BRICK_TOP <= r < rom_kernel.BRICK_TOP + 6 * rom_kernel.BRICK_H:
        _paint_bricks(m, r, line)
    _paint_over_row(m, r, line, moving)


@numba.njit(cache=True, inline="always")
def _fill_rows(out, r0, r1, colour):
    """Rows r0..r1 (inclusive) of `out` in one colour."""
    for r in range(r0, r1 + 1):
        for c in range(out.shape[1]):
            out[r, c] = colour


@numba.njit(cache=True, _nrt=False)
def draw(state, rom, out):
    """Draw into `out` ((210, 160) uint8) the TIA colour byte of every pixel of the frame the kernel drew for
    an exact-model env state row: `draw_row` for every row, with the rows that repeat (the background, the
    top wall, each brick row's six lines) filled once. Compiled without reference counting (`_nrt=False`): the
    row views it takes cost atomic counts otherwise, half of its time in the single env's rgb step."""
    m = state
    shown = m[rom_kernel.SHOWN]
    _fill_rows(out, 0, out.shape[0] - 1, rom_kernel.drawn_colour(shown, 1))
    _fill_rows(out, rom_kernel.TOP_WALL[0], rom_kernel.TOP_WALL[1], rom_kernel.drawn_colour(shown, 0))
    for row in range(6):
        y0 = rom_kernel.BRICK_TOP + rom_kernel.BRICK_H * row
        _paint_bricks(m, y0, out[y0])
        for y in range(y0 + 1, y0 + rom_kernel.BRICK_H):
            for c in range(out.shape[1]):
                out[y, c] = out[y0, c]
    for r in range(out.shape[0]):
        _background_exceptions(m, r, out[r])
        if SCORE_ROWS[0] <= r <= SCORE_ROWS[1]:
            _paint_score(m, rom, r, out[r])
    for r in range(WALL_TOP, rom_kernel.LAST_ROW + 1):  # `_paint_over_row`, layer by layer
        _paint_walls(m, r, out[r])
    objects = moving_objects(m)
    for r in range(objects[0], objects[1] + 1):  # the ball's rows, then the paddle's (a row of both: the same)
        paint_moving(m, r, out[r])
    for r in range(objects[4], objects[5] + 1):
        paint_moving(m, r, out[r])


def render_colours(state: np.ndarray) -> np.ndarray:
    """(210, 160) uint8: the TIA colour byte of every pixel of the frame drawn for an exact-model env state
    row (`draw`)."""
    out = np.empty((210, 160), dtype=np.uint8)
    draw(np.asarray(state, dtype=np.int64).reshape(-1), rom_bytes(), out)
    return out


def render_ram(state: np.ndarray) -> np.ndarray:
    """(210, 160, 3) uint8 RGB, as ALE's `getScreenRGB` shows the frame drawn for `state` (an exact-model
    env state row)."""
    return PALETTE[render_colours(state) >> 1]
