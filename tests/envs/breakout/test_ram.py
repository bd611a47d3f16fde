"""The RAM names (`envs/breakout/ram.py`) against the real game: each named byte of ALE's RAM holds what its name
says, after reset and once a ball is served."""

from __future__ import annotations

import numpy as np

from policylab.envs.breakout import ram
from policylab.envs.breakout.ale import frame_emulator, ram_features
from policylab.envs.breakout.contract import FIRE, F
from policylab.envs.breakout.rom.kernel import PADDLE_LIMITS, SERVE_X, brick_flags


def test_every_name_is_an_address_in_the_ram():
    addresses = {name: v for name, v in vars(ram).items() if name.startswith("RAM_") and name != "RAM_N"}
    assert addresses and all(0 <= v < ram.RAM_N for v in addresses.values())


def test_the_named_bytes_hold_what_their_names_say_on_ale():
    ale = frame_emulator(0)
    r = ale.getRAM().astype(np.int64)
    assert r[ram.RAM_LIVES] == ale.lives() == 5
    assert r[ram.RAM_SCORE_HI] == r[ram.RAM_SCORE_LO] == 0
    assert r[ram.RAM_BALL_Y] == 0  # no ball in play before the serve
    assert r[ram.RAM_GAME_ON] & 0x80 and r[ram.RAM_SHOW_SCORE] == 0xFF
    assert r[ram.RAM_GAME_SELECT] == r[ram.RAM_GAME_FEATURES] == r[ram.RAM_PLAYERS] == r[ram.RAM_PLAYER] == 0
    assert PADDLE_LIMITS[0] <= r[ram.RAM_PADDLE_X] <= PADDLE_LIMITS[1]
    assert r[ram.RAM_PADDLE_HALF_W] == 8 and r[ram.RAM_TOP_WALL_HIT] == 0  # the wide paddle
    assert brick_flags(r[None])[0].all()

    ale.act(ale.getMinimalActionSet()[FIRE])
    served = ale.getRAM().astype(np.int64)
    assert served[ram.RAM_FRAME_COUNTER] == (r[ram.RAM_FRAME_COUNTER] + 1) & 255
    assert served[ram.RAM_BALL_Y] == 0x70 + 1 and served[ram.RAM_BALL_VY] == 1  # served at $70, falling 1 px
    x = (SERVE_X[served[ram.RAM_FRAME_COUNTER] & 3] << 1) & 255  # the serve's x, from the counter's low 2 bits
    assert served[ram.RAM_BALL_X] == (x - served[ram.RAM_BALL_VX]) & 255  # x velocity stored negated
    obs = ram_features(served, None)
    assert obs[F["ball_x"]] == served[ram.RAM_BALL_X] + ram.BALL_X_OFFSET
    assert obs[F["paddle_x"]] == served[ram.RAM_PADDLE_X] + ram.PADDLE_X_OFFSET
