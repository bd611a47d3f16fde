"""The seed scheme: the formula of each study, and bad input refused."""

import pytest

from policylab.errors import BadInput
from policylab.rollout.seeds import seed_range, world_seed


def test_breakout_scheme_is_start_plus_episode():
    assert [world_seed("breakout", 0, i, base=100) for i in range(3)] == [100, 101, 102]


def test_boundary_scheme_matches_spec_formula():
    n_push, spc = 20, 16
    for mu_idx, push_idx, s in [(0, 0, 0), (3, 7, 5), (19, 19, 15)]:
        cell = mu_idx * n_push + push_idx
        expected = 1_000_000 + (mu_idx * n_push + push_idx) * spc + s
        assert world_seed("boundary", cell, s, seeds_per_cell=spc) == expected


def test_seed_scheme_rejects_bad_input():
    with pytest.raises(BadInput):
        world_seed("nope", 0, 0)
    with pytest.raises(BadInput):
        world_seed("boundary", 0, 16, seeds_per_cell=16)
    with pytest.raises(BadInput):
        world_seed("breakout", 0, -1)


def test_seed_range_parsing():
    assert seed_range("0-5") == [0, 1, 2, 3, 4, 5]
    assert seed_range("3,1,2") == [1, 2, 3]
    for bad in ("5-1", "a", "-3", ""):
        with pytest.raises(BadInput):
            seed_range(bad)
