"""Draw one physics-model env as a 210x160 RGB frame in ALE Breakout's look (read off ale-py 0.12.1's frames)."""

from __future__ import annotations

import numpy as np

from policylab.envs.breakout.contract import SCREEN_H, SCREEN_W

WALL = (142, 142, 142)
RED = (200, 72, 72)
ROW_COLOURS = [(200, 72, 72), (198, 108, 58), (180, 122, 48), (162, 162, 42), (72, 160, 72), (66, 72, 200)]

# 3x5 digit glyphs, scaled 4x2 when drawn (ALE's digits are about 12x10 px)
_GLYPHS = {
    "0": ("111", "101", "101", "101", "111"),
    "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"),
    "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"),
    "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"),
    "7": ("111", "001", "001", "001", "001"),
    "8": ("111", "101", "111", "101", "111"),
    "9": ("111", "101", "111", "001", "111"),
}


def _digits(frame: np.ndarray, text: str, x0: int, y0: int) -> None:
    for k, ch in enumerate(text):
        glyph = _GLYPHS[ch]
        for gy, row in enumerate(glyph):
            for gx, bit in enumerate(row):
                if bit == "1":
                    x = x0 + k * 16 + gx * 4
                    frame[y0 + gy * 2 : y0 + gy * 2 + 2, x : x + 4] = WALL


def _box(frame: np.ndarray, x: float, y: float, w: float, h: float, colour) -> None:
    x0, y0 = max(int(np.floor(x)), 0), max(int(np.floor(y)), 0)
    x1, y1 = min(int(np.floor(x + w)), SCREEN_W), min(int(np.floor(y + h)), SCREEN_H)
    if x1 > x0 and y1 > y0:
        frame[y0:y1, x0:x1] = colour


def render_frame(
    params,
    bricks: np.ndarray,
    ball: tuple[float, float] | None,
    paddle_x: float,
    paddle_w: float,
    score: int,
    lives: int,
) -> np.ndarray:
    """The frame for one env: `bricks` is its live-flag row (top row first)."""
    p = params
    frame = np.zeros((SCREEN_H, SCREEN_W, 3), dtype=np.uint8)
    top = int(p.field_top)
    frame[max(top - 15, 0) : top, :] = WALL
    frame[max(top - 15, 0) : 196, : max(int(p.field_left), 0)] = WALL
    frame[max(top - 15, 0) : 196, min(int(p.field_right), SCREEN_W) :] = WALL
    _digits(frame, f"{score:03d}", 36, 5)
    _digits(frame, str(lives), 100, 5)
    grid = bricks[: p.brick_rows * p.brick_cols].reshape(p.brick_rows, p.brick_cols)
    for r in range(p.brick_rows):
        colour = ROW_COLOURS[min(r * 6 // p.brick_rows, 5)]
        for c in np.flatnonzero(grid[r]):
            _box(frame, p.brick_left + c * p.brick_w, p.brick_top + r * p.brick_h, p.brick_w, p.brick_h, colour)
    _box(frame, paddle_x, p.paddle_y, paddle_w, p.paddle_h, RED)
    if ball is not None:
        _box(frame, ball[0], ball[1], p.ball_w, p.ball_h, RED)
    return frame
