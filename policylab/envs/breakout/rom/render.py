"""ALE's Breakout screen drawn from the game's RAM: what the display kernel puts on the TIA's 160 x 210 picture.

Why a separate drawing: the exact model (`rom.kernel`) skips the display kernel for speed; a
frame for a person, a video or a screen comparison with ALE is drawn here from the same RAM, object by
object, in the rows and columns the kernel gives them (measured against `getScreenRGB`, tests compare
whole episodes pixel for pixel):

- score and lives: playfield digits on rows 5-14, two lines per glyph row, from the ROM's glyph tables
  through the pointers in RAM 80-89 (RAM 110 masks the left digit), in the playfield colour;
- the top wall: the whole playfield on rows 17-31; the side walls: missile 1 (left, columns 0-7) and
  missile 0 (right, 152-159) from row 17 to 194 (the left one also on 195), recoloured from row 189 on
  when the kernel sets the paddle's colours;
- bricks: rows 57-92, six lines per brick row, playfield bits from RAM 0-35, colours RAM 64-69 (all colours
  as they were when the frame was drawn: `rom.kernel.drawn_colour`);
- the ball: the playfield colour of its row, rows from `rom.kernel.BALL_ROWS`;
- the paddle: player 0 on rows 189-192, four times wide, pattern RAM 55, colour RAM 62;
- the background (RAM 61; black during a game), but the first 8 pixels of row 0 are always black: the
  kernel strobes HMOVE on that line; from row 203 on, ALE shows overscan lines, in the background the
  overscan stores (attract mode's colour cycle changes it a frame before the rest of the screen).

Colours are the TIA's colour bytes through ALE's NTSC palette. The drawing is compiled (`draw`), so a
Gymnasium env can return a screen every step at a small cost beside the frame logic.
"""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np

from policylab.envs.breakout.rom import kernel as EK

# ALE 0.12.1's NTSC palette (src/ale/common/Palettes.hpp), the RGB of each even colour byte
_NTSC = bytes.fromhex(
    "0000004a4a4a6f6f6f8e8e8eaaaaaac0c0c0d6d6d6ecececebebeb"[:0] +
    "0000004a4a4a6f6f6f8e8e8eaaaaaac0c0c0d6d6d6ececec"
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
    "482c00694d14866a26a28638bb9f47d2b656e8cc63fce070")
PALETTE = np.frombuffer(_NTSC, dtype=np.uint8).reshape(128, 3)

SCORE_ROWS = (5, 14)
WALL_TOP = 17
HMOVE_BLANK = 8
RECOLOUR_ROW = 189  # the lower loop's paddle lines set COLUP0/COLUP1 from RAM 62/63
OVERSCAN_BG = (203, 55)  # the overscan stores the new background (RAM 61) here: ALE's last rows show it


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
    """Byte `off` of digit d's glyph: the pointer's low byte as drawn (`shown`), its high byte RAM 81 + 2d; the
    2 KB ROM appears at $F000 (and its mirrors)."""
    return rom[((m[81 + 2 * d] << 8 | ((shown >> (8 * d)) & 255)) + off) & 0x7FF]


@numba.njit(cache=True)
def draw(state, rom, out):
    """Draw into `out` ((210, 160) uint8) the TIA colour byte of every pixel of the frame the kernel drew for
    an exact-model env state row (RAM bytes, then the kernel's extras: the digit pointers it drew with)."""
    m = state  # RAM 80-89's low bytes are read from the pointers the frame was drawn with (`shown`) instead
    shown = state[EK.SHOWN]
    pf_colour = EK.drawn_colour(shown, 0)
    p0_low = EK.drawn_colour(shown, 2)
    p1_low = EK.drawn_colour(shown, 3)
    out[:, :] = EK.drawn_colour(shown, 1)
    out[0, :HMOVE_BLANK] = 0  # the line of the frame's one HMOVE starts with 8 blanked pixels
    # score, lives, player digits: the kernel's five glyph rows, two lines each, bottom glyph byte last
    for line in range(SCORE_ROWS[1] - SCORE_ROWS[0] + 1):
        off = 4 - line // 2
        g0 = _glyph(rom, shown, m, 0, off)
        g1 = _glyph(rom, shown, m, 1, off)
        g2 = _glyph(rom, shown, m, 2, off)
        g3 = _glyph(rom, shown, m, 3, off)
        g4 = _glyph(rom, shown, m, 4, off)
        for h in range(2):
            pf1 = g0 & 0x0F & m[110] if h == 0 else g3 & 0xF0 & m[110]
            pf2 = (g1 & 0x0F) | (g2 & 0xF0) if h == 0 else g4 & 0x0F
            _pf_line(out[SCORE_ROWS[0] + line], 80 * h, 0, pf1, pf2, pf_colour)
    out[EK.TOP_WALL[0] : EK.TOP_WALL[1] + 1, :] = pf_colour
    for r in range(6):
        x = 5 - r
        y0 = EK.BRICK_TOP + EK.BRICK_H * r
        colour = EK.drawn_colour(shown, 4 + x)
        for h in range(2):
            base = 30 - 18 * h
            _pf_line(out[y0], 80 * h, m[base + x], m[base - 6 + x], m[base - 12 + x], colour)
        for y in range(y0 + 1, y0 + EK.BRICK_H):
            out[y, :] = out[y0, :]
    r0 = EK.BALL_ROWS[m[101], 0]
    r1 = EK.BALL_ROWS[m[101], 1]
    last = EK.LAST_ROW_COLUMNS[1 - (m[101] & 1)]
    for r in range(r0, r1 + 1):
        # the ball takes the playfield colour of its row: the wall's above the bricks, a brick row's, then COLUP0
        if r < EK.BRICK_TOP:
            colour = pf_colour
        elif r < EK.BRICK_TOP + 6 * EK.BRICK_H:
            colour = EK.drawn_colour(shown, 9 - (r - EK.BRICK_TOP) // EK.BRICK_H)
        else:
            colour = p0_low
        for dx in range(2):
            c = (m[99] - 49 + dx) % 160
            if r < EK.LAST_ROW or c < last:
                out[r, c] = colour
    # the lower field and the overscan: one line higher when RAM 62 was 0 (`rom.kernel.POT_LOWER_EARLY`: its first WSYNC is
    # skipped); only attract mode gets there, where no ball is in play
    up = 1 if EK.drawn_ram_colour(shown, 2) == 0 else 0
    recolour = RECOLOUR_ROW - up
    # walls: missile 1 on the left (COLUP1), missile 0 on the right (COLUP0), over the playfield
    out[WALL_TOP:recolour, : EK.SIDE_W] = pf_colour
    out[recolour : EK.LAST_ROW + 1 - up, : EK.SIDE_W] = p1_low
    out[WALL_TOP:recolour, 160 - EK.SIDE_W :] = pf_colour
    out[recolour : EK.LAST_ROW - up, 160 - EK.SIDE_W :] = p0_low
    # ALE's last rows are overscan lines: from row 203, column 55 on, the background the overscan just stored
    out[OVERSCAN_BG[0] - up, OVERSCAN_BG[1] :] = m[61] & 0xFE
    out[OVERSCAN_BG[0] + 1 - up :, :] = m[61] & 0xFE
    # paddle: player 0, each of the pattern's bits 4 px wide
    p0 = m[72] - 47
    for k in range(8):
        if (m[55] >> (7 - k)) & 1:
            for d in range(4):
                out[EK.PADDLE_ROWS[0] - up : EK.PADDLE_ROWS[1] + 1 - up, (p0 + 4 * k + d) % 160] = p0_low


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
