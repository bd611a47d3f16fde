"""The floor, the sensors and one play follow the post's rules."""

from __future__ import annotations

import numpy as np

from policylab.studies.lava_leap import EXIT, FLOOR, LEAP, STEP, leap_table, new_floor, play, policy, sensors
from policylab.studies.lava_leap.agent import PLAY_DRAWS
from policylab.studies.lava_leap.floor import FLOOR_DRAWS, channels, is_valid_floor, new_floors


def test_generated_floors_obey_the_rules():
    floors = new_floors(np.random.default_rng(123), 3000)
    assert all(is_valid_floor(f) for f in floors)
    counts = [len(channels(f)) for f in floors]
    widths = {w for f in floors for _, w in channels(f)}
    assert widths == {1, 2} and min(counts) >= 1 and 6 in counts


def test_new_floor_consumes_a_fixed_block_and_matches_new_floors():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    one = [new_floor(a) for _ in range(4)]
    assert all((x == y).all() for x, y in zip(one, new_floors(b, 4)))
    c = np.random.default_rng(5)
    c.random(4 * FLOOR_DRAWS)
    assert a.random() == c.random()


def test_sensors_and_policy():
    lava = np.zeros(FLOOR, dtype=bool)
    lava[[10, 11, 38]] = True
    assert sensors(lava, 9).tolist() == [1.0, 1.0, 0.0, 1.0]
    assert sensors(lava, 8).tolist() == [0.0, 1.0, 1.0, 1.0]
    assert sensors(lava, 37).tolist() == [1.0, 0.0, 0.0, 1.0]  # past the exit reads safe
    assert np.allclose(leap_table(np.zeros((4, 2))), 0.5)
    W = np.array([[0.0, 2.0], [0.0, -1.0], [0.0, 0.0], [0.3, 0.1]])
    s = np.array([1.0, 0.0, 1.0, 1.0])
    z = s @ W
    assert np.allclose(policy(W, s), np.exp(z) / np.exp(z).sum())
    assert np.isclose(leap_table(W)[0b101], policy(W, s)[1])
    assert policy(W, np.stack([s, s])).shape == (2, 2)


def test_play_moves_and_ends_by_the_rules():
    rng = np.random.default_rng(0)
    W = np.zeros((4, 2))
    for _i in range(300):
        lava = new_floor(rng)
        run = play(W, lava, rng)
        steps = np.diff(run.path)
        assert run.path[0] == 0 and len(run.path) == len(run.actions) + 1 == len(run.states) + 1
        assert all(d == 1 for d, a in zip(steps, run.actions) if a == STEP)
        assert all(
            d in (2, 3) or run.path[k + 1] == EXIT for k, (d, a) in enumerate(zip(steps, run.actions)) if a == LEAP
        )
        end = run.path[-1]
        assert lava[end] or end == EXIT
        assert not any(lava[t] for t in run.path[:-1])
        assert run.reward == end / EXIT
        assert (run.states[0] == sensors(np.zeros(FLOOR, dtype=bool), 0)).all()
        for t, s in zip(run.path[:-1], run.states):
            assert (s == sensors(lava, t)).all()


def test_play_consumes_one_block_per_run():
    lava = new_floor(np.random.default_rng(8))
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    play(np.zeros((4, 2)), lava, a)
    b.random(PLAY_DRAWS)
    assert a.random() == b.random()


def test_leap_is_a_fair_coin_between_two_and_three():
    lava = np.zeros(FLOOR, dtype=bool)
    always_leap = np.array([[0.0, 0.0]] * 3 + [[-20.0, 20.0]])
    rng = np.random.default_rng(2)
    hops = np.concatenate([np.diff(play(always_leap, lava, rng).path)[:-1] for _ in range(400)])
    share_two = np.mean(hops == 2)
    assert set(hops) == {2, 3} and abs(share_two - 0.5) < 0.03
