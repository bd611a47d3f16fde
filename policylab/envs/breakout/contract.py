"""The observation/action contract shared by real ALE Breakout and the shadow simulator.

Both environments expose the same batch of RAM-level features, in screen coordinates of the
210x160 Atari frame (x to the right, y downward), so a policy cannot tell which one it plays:

=============  ===========================================================================
feature        meaning
=============  ===========================================================================
ball_x         ball left x in screen pixels (ALE: ram[RAM_BALL_X] - 49; `ram.py`)
ball_y         ball top y in screen pixels (ALE: ram[RAM_BALL_Y] + 9)
ball_vx        ball_x[t] - ball_x[t-1] in px per agent step (0 when not in play)
ball_vy        ball_y[t] - ball_y[t-1] in px per agent step (0 when not in play)
ball_in_play   1.0 when a ball is on the field, else 0.0 (then FIRE serves on ALE)
paddle_x       paddle left x in screen pixels (ALE: ram[RAM_PADDLE_X] - 47)
paddle_width   paddle width in pixels (shrinks on ALE after the ball reaches the top wall)
lives          lives left
score          game score so far
=============  ===========================================================================

Actions are the minimal action set: NOOP=0, FIRE=1, RIGHT=2, LEFT=3.
"""

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
