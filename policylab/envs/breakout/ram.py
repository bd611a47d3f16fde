"""Breakout's RAM: every byte the code reads or writes, named for what the game keeps in it.

Index i of `getRAM()`, a trace's RAM row and the exact model's state row is address $80 + i; module-level ints, so
numba compiles them as constants. Meanings: docs/breakout.md, "The exact model"."""

from __future__ import annotations

RAM_N = 128  # the 2600's RAM bytes

# The wall: the playfield registers of the six brick rows, 6 bytes per register (byte 5 - row holds brick row
# `row`, 0 the top one), 2 bits per 8 px brick; `rom.kernel.brick_flags` decodes it.
RAM_WALL_RIGHT_PF2 = 0  # brick columns 15-17; also the wall's first byte
RAM_WALL_RIGHT_PF1 = 6  # columns 11-14
RAM_WALL_RIGHT_PF0 = 12  # columns 9-10
RAM_WALL_LEFT_PF2 = 18  # columns 5-8
RAM_WALL_LEFT_PF1 = 24  # columns 1-4
RAM_WALL_LEFT_PF0 = 30  # column 0
RAM_WALL_END = 36  # one past the wall's last byte
# 108 bits, one per brick (36-48 and the high nibble of RAM_WALL_BITS_TAIL), that the wall-building animation
# rotates into the wall it draws (all set in ALE's game)
RAM_WALL_BITS = 36
RAM_WALL_BITS_TAIL = 49

RAM_GAME_SELECT = 50  # the selected game: (game number - 1) * 4 + players - 1 (0: ALE's default game 1)
RAM_GAME_FEATURES = 51  # the selected game's variation bits ($F7F0: catch, timed, ...; 0 in game 1)
RAM_GAME_ON = 52  # bit 7 while a game is played (cleared at game over and by attract mode)
RAM_PLAYER = 53  # whose turn it is (0: player 1); the fifth digit shows it plus 1
RAM_PADDLE_INPUT = 54  # which paddle controller the kernel reads (INPT0 + it): the player's, or a team mate's
RAM_PADDLE_GFX = 55  # the paddle's pattern (GRP0), 8 bits of 4 px each
RAM_PADDLE2_MASK = 56  # $FF when a second paddle is drawn (GRP1 = pattern AND it: team games), else 0
RAM_LIVES = 57  # lives left (ALE's `lives()`; 0 is the game over)
RAM_PLAYERS = 58  # players - 1; the fifth digit shows it plus 1 while no game is on
RAM_COLOUR_SHADE = 59  # a temporary the overscan leaves holding the colours' shade (`rom.kernel.drawn_with`)
# ten colours ($F7AA XOR the shade): score and top wall, background, paddle (COLUP0), left wall (COLUP1), then
# the six brick rows, bottom row first
RAM_COLOURS = 60
RAM_BACKGROUND_COLOUR = 61
RAM_PADDLE_COLOUR = 62

RAM_PADDLE_READING = 70  # the pot's reading: the last kernel scanline whose sample had not charged
RAM_BUILD_COUNT = 71  # wall bytes left before the wall-building script advances (every 6)
RAM_PADDLE_X = 72  # the paddle's position; screen x = it + PADDLE_X_OFFSET
RAM_BUILD_BITS_LEFT = 74  # bits left to rotate out of the current RAM_WALL_BITS byte
RAM_BUILD_BITS_BYTE = 75  # the current RAM_WALL_BITS byte (index from RAM_WALL_BITS)
RAM_SCORE_HI = 76  # BCD: the score's hundreds (low nibble)
RAM_SCORE_LO = 77  # BCD: the score's tens and ones

# the five digits' glyph pointers, 2 bytes each (low byte first): in a game, the score's hundreds, tens and ones,
# the lives, the player; otherwise the game number's tens and ones in the second and third
RAM_DIGITS = 80
RAM_DIGIT_HUNDREDS = RAM_DIGITS
RAM_DIGIT_TENS = RAM_DIGITS + 2
RAM_DIGIT_ONES = RAM_DIGITS + 4
RAM_DIGIT_LIVES = RAM_DIGITS + 6
RAM_DIGIT_PLAYER = RAM_DIGITS + 8

RAM_FRAME_COUNTER = 90  # frames since reset mod 256 (zeroed at game over); its low 2 bits pick the serve
RAM_FRAME_COUNTER_HI = 91  # its high byte; its wrap to 0 (65,536 frames) starts attract mode
RAM_SELECT_SWITCH = 92  # $FF while the select switch is up; while it is held, the game it stepped to
RAM_ATTRACT_TIMER = 93  # 256-frame periods without a game on; nibble-swapped, the colours' shade
RAM_BUILD = 94  # the wall-building animation: bit 7 building, bit 6 a full wall, bits 0-5 the bytes left
RAM_SOUND = 95  # the sound's kind (bits 6-7) and frames left (bits 0-5)
RAM_SOUND_PITCH = 96  # the brick sound's pitch, by row ($F792)
RAM_TOP_WALL_HIT = 97  # bit 7 once this ball reached the top wall: the paddle is narrow

# the ball: 8.8 fixed point (integer byte, fraction/256); x velocity stored negated (x -= vx every frame);
# no ball is in play while RAM_BALL_Y is 0
RAM_BALL_X = 99  # screen x = it + BALL_X_OFFSET
RAM_BALL_X_FRAC = 100
RAM_BALL_Y = 101  # screen y = it + BALL_Y_OFFSET
RAM_BALL_Y_FRAC = 102
RAM_BALL_VY = 103
RAM_BALL_VY_FRAC = 104
RAM_BALL_VX = 105
RAM_BALL_VX_FRAC = 106
# bit 6: turned by the paddle (which ignores the ball until a wall or a brick turns it), bit 7: turned by a brick
# (no other brick counts until the paddle or the top wall turns it), bits 0-5: the speed table's row, the paddle
# hits of this ball (0 at the serve, capped at 12), 16 after a brick of the top three rows
RAM_BALL_CLASS = 107
RAM_PADDLE_HALF_W = 108  # half the paddle's width in px (8, 6 once narrowed)
RAM_BALL_ANGLE = 109  # 0 shallow, 2 steep: the paddle section of the last hit
RAM_SHOW_SCORE = 110  # $FF from a game's start (the digits show the score), 0 in attract mode (the game number)
RAM_BUILD_SCRIPT = 119  # the wall-building script's current byte ($F7D0 index)

# The 6502's stack bytes ($F9-$FF) the model writes; each frame's last write is all that matters
# (`rom.kernel`'s note on stack bytes)
RAM_STACK_F9 = 121
RAM_STACK_FA = 122
RAM_STACK_FC = 124
RAM_STACK_FD = 125

# RAM positions to screen pixels (ALE's 210 x 160 screen), measured in tests/envs/breakout/test_ale.py
BALL_X_OFFSET, BALL_Y_OFFSET, PADDLE_X_OFFSET = -49, 9, -47
