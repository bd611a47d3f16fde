"""Checks of the ROM model's hardware effects against the real ALE, shared by its test and its
benchmark (one definition of what is compared); in the package, not in tests/support, because
benchmarks/bench_breakout_exact.py imports it too."""

from __future__ import annotations

from policylab.envs.breakout.ale import frame_emulator
from policylab.envs.breakout.contract import LEFT, NOOP, RIGHT
from policylab.envs.breakout.ram import RAM_PADDLE_READING
from policylab.envs.breakout.rom import kernel as rom_kernel


def pot_readings(seed: int, paddle_colour_zero: bool = False) -> tuple[int, int]:
    """(resistances reached, frames whose RAM 70 differs from `paddle_reading`): from ALE's default
    resistance, RIGHT into the lower stop, LEFT into the upper, RIGHT again, then LEFT from the default;
    the steps and clamps reach every resistance a game can have. `paddle_colour_zero`: RAM 62 is set to 0
    before every frame (the kernel's lower field then samples early, as in attract mode's colour cycle)."""
    seen, wrong = set(), 0
    for holds in ([RIGHT] * 20 + [LEFT] * 40 + [RIGHT] * 40, [NOOP] + [LEFT] * 20):
        ale = frame_emulator(seed)
        acts = ale.getMinimalActionSet()
        pot = rom_kernel.PADDLE_DEFAULT
        for a in holds:
            pot = rom_kernel.pot_after(pot, a)
            if paddle_colour_zero:
                ale.setRAM(62, 0)
            ale.act(acts[a])
            seen.add(pot)
            wrong += int(ale.getRAM()[RAM_PADDLE_READING] != rom_kernel.paddle_reading(pot, paddle_colour_zero))
    return len(seen), wrong
