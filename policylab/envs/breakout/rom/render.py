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
- bricks: rows 57-92, six lines per brick row, playfield bits from RAM 0-35, colours RAM 64-69;
- the ball: the playfield colour of its row, rows from `rom.kernel.BALL_ROWS`;
- the paddle: player 0 on rows 189-192, four times wide, pattern RAM 55, colour RAM 62;
- the background (RAM 61; black during a game), but the first 8 pixels of row 0 are always black: the
  kernel strobes HMOVE on that line.

Colours are the TIA's colour bytes through ALE's NTSC palette.
"""

from __future__ import annotations

from functools import lru_cache

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


@lru_cache(maxsize=1)
def _rom() -> bytes:
    """The cartridge (ale-py ships it); its glyph tables are read where the kernel reads them."""
    from ale_py import roms

    return roms.get_rom_path("breakout").read_bytes()


def _pf_pixels(pf0: int, pf1: int, pf2: int) -> np.ndarray:
    """80 booleans: one half of a playfield line (PF0 bits 4-7, PF1 bits 7-0, PF2 bits 0-7, 4 px each)."""
    bits = [(pf0 >> b) & 1 for b in range(4, 8)] + [(pf1 >> b) & 1 for b in range(7, -1, -1)] + \
           [(pf2 >> b) & 1 for b in range(8)]
    return np.repeat(np.array(bits, dtype=bool), 4)


def render_colours(state: np.ndarray) -> np.ndarray:
    """(210, 160) uint8: the TIA colour byte of every pixel of the frame the kernel drew for an exact-model
    env state row (RAM bytes, then the kernel's extras: the digit pointers it drew with)."""
    row = np.asarray(state).reshape(-1)
    m = [int(v) for v in row[: EK.RAM_N]]
    shown = int(row[EK.SHOWN])
    for k, addr in enumerate((80, 82, 84, 86, 88)):
        m[addr] = (shown >> (8 * k)) & 255
    rom = _rom()
    pf_colour, p0_low, p1_low = m[60], m[62], m[63]
    out = np.full((210, 160), m[61], dtype=np.uint8)
    out[0, :HMOVE_BLANK] = 0  # the line of the frame's one HMOVE starts with 8 blanked pixels
    # score, lives, player digits: the kernel's five glyph rows, two lines each, bottom glyph byte last

    def glyph(ptr_lo: int, ptr_hi: int, off: int) -> int:
        return rom[(((ptr_hi << 8) | ptr_lo) + off) & 0x7FF]  # the 2 KB ROM appears at $F000 (and its mirrors)

    for line in range(SCORE_ROWS[1] - SCORE_ROWS[0] + 1):
        off = 4 - line // 2
        left = _pf_pixels(0, glyph(m[80], m[81], off) & 0x0F & m[110],
                          (glyph(m[82], m[83], off) & 0x0F) | (glyph(m[84], m[85], off) & 0xF0))
        right = _pf_pixels(0, glyph(m[86], m[87], off) & 0xF0 & m[110], glyph(m[88], m[89], off) & 0x0F)
        out[SCORE_ROWS[0] + line][np.concatenate([left, right])] = pf_colour
    out[EK.TOP_WALL[0] : EK.TOP_WALL[1] + 1] = pf_colour
    row_colour = np.full(210, p0_low, dtype=np.uint8)  # playfield colour by row: the ball takes it
    row_colour[: EK.BRICK_TOP] = pf_colour
    for k in range(6):
        x = 5 - k
        y0 = EK.BRICK_TOP + EK.BRICK_H * k
        line = np.concatenate([_pf_pixels(m[30 + x], m[24 + x], m[18 + x]), _pf_pixels(m[12 + x], m[6 + x], m[x])])
        colour = m[64 + x]
        out[y0 : y0 + EK.BRICK_H, line] = colour
        row_colour[y0 : y0 + EK.BRICK_H] = colour
    r0, r1 = EK.BALL_ROWS[m[101]]
    if r0 >= 0:
        cols = [(m[99] - 49 + dx) % 160 for dx in range(2)]
        for r in range(r0, r1 + 1):
            last = EK.LAST_ROW_COLUMNS[1 - (m[101] & 1)]
            out[r, [c for c in cols if r < EK.LAST_ROW or c < last]] = row_colour[r]
    # walls: missile 1 on the left (COLUP1), missile 0 on the right (COLUP0), over the playfield
    out[WALL_TOP:RECOLOUR_ROW, : EK.SIDE_W] = pf_colour
    out[RECOLOUR_ROW : EK.LAST_ROW + 1, : EK.SIDE_W] = p1_low
    out[WALL_TOP:RECOLOUR_ROW, 160 - EK.SIDE_W :] = pf_colour
    out[RECOLOUR_ROW : EK.LAST_ROW, 160 - EK.SIDE_W :] = p0_low
    # paddle: player 0, each of the pattern's bits 4 px wide
    p0 = m[72] - 47
    for k in range(8):
        if (m[55] >> (7 - k)) & 1:
            cols = [(p0 + 4 * k + d) % 160 for d in range(4)]
            out[EK.PADDLE_ROWS[0] : EK.PADDLE_ROWS[1] + 1, cols] = p0_low
    return out


def render_ram(state: np.ndarray) -> np.ndarray:
    """(210, 160, 3) uint8 RGB, as ALE's `getScreenRGB` shows the frame drawn for `state` (an exact-model
    env state row)."""
    return PALETTE[render_colours(state) >> 1]
