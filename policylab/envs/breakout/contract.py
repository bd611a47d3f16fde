"""The observation/action contract shared by ALE Breakout and the shadow: 9 features, actions NOOP, FIRE, RIGHT, LEFT.

Screen pixels of the 210x160 frame (x right, y down), velocities in px per agent step (docs/breakout.md,
"Module notes")."""

from __future__ import annotations

FEATURES = (
    "ball_x",
    "ball_y",
    "ball_vx",
    "ball_vy",
    "ball_in_play",
    "paddle_x",
    "paddle_width",
    "lives",
    "score",
)
F = {name: i for i, name in enumerate(FEATURES)}
N_FEATURES = len(FEATURES)

NOOP, FIRE, RIGHT, LEFT = 0, 1, 2, 3
ACTION_NAMES = ("NOOP", "FIRE", "RIGHT", "LEFT")

SCREEN_H, SCREEN_W = 210, 160
