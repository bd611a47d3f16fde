"""`RomALEInterface` and the batch env (`ShadowBreakout`, `ale-exact`) play the same game: the same RAM after
every agent step for the same MT19937 seed, actions and sticky probability. Both run `rom.kernel.frame`, but
numba caches `act_frames` with its own compiled copy of it, keyed on ale_interface.py alone, so this also
catches a cache left stale by a change to kernel.py."""

from __future__ import annotations

import numpy as np

from policylab.envs.breakout.rom.ale_interface import MINIMAL_ACTIONS, RomALEInterface
from policylab.envs.breakout.shadow import ShadowBreakout


def test_the_interface_and_the_batch_play_the_same_game():
    batch = ShadowBreakout(1, "ale-exact", seeds=[77])
    batch.reset()
    ale = RomALEInterface(repeat_action_probability=0.25)
    ale.seed(77)
    rng = np.random.default_rng(3)
    for t in range(1500):
        a = 1 if t % 50 == 0 else int(rng.integers(4))
        _, reward, terminated, _, _ = batch.step(np.array([a]))
        r = ale.act(int(MINIMAL_ACTIONS[a]), frames=4)
        assert np.array_equal(ale.getRAM(), batch.ram(0)), t
        assert r == reward[0] and ale.game_over() == terminated[0], t
        if terminated[0]:
            break
