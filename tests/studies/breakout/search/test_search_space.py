"""Search spaces: the documented 216-point grid, seeded random and TPE proposals."""

from policylab.policies.breakout import V3_SPACE, validate_params
from policylab.studies.breakout.search.search_space import grid216, random_candidates, tpe_candidates


def test_grid216_is_216_distinct_valid_candidates():
    grid = grid216()
    assert len(grid) == 216
    assert grid[0]["candidate_id"] == "c000" and grid[-1]["candidate_id"] == "c215"
    assert len({tuple(c["params"].values()) for c in grid}) == 216
    for c in grid:
        validate_params("breakout_policy_v3", c["params"])
    # last axis (panic_y) varies fastest
    assert grid[0]["params"]["panic_y"] == 175 and grid[1]["params"]["panic_y"] == 185


def test_random_is_seeded_and_in_range():
    a = random_candidates(40, seed=7)
    assert a == random_candidates(40, seed=7)
    assert a != random_candidates(40, seed=8)
    for c in a:
        for k, v in c["params"].items():
            assert V3_SPACE[k][0] <= v <= V3_SPACE[k][1]


def test_tpe_is_seeded_and_climbs_a_simple_objective():
    def score(batch):
        return [-abs(p["far_cap"] - 20.0) for p in batch]

    a = tpe_candidates(48, seed=3, score=score, batch=12)
    assert a == tpe_candidates(48, seed=3, score=score, batch=12)
    first = sum(abs(c["params"]["far_cap"] - 20) for c in a[:12]) / 12
    last = sum(abs(c["params"]["far_cap"] - 20) for c in a[-12:]) / 12
    assert last < first


def test_the_grid_has_the_size_the_train_request_counts_with():
    from policylab.studies.breakout.requests import GRID_SIZE

    assert len(grid216()) == GRID_SIZE
