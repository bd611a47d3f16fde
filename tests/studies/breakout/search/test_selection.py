"""Selection rule (ordering, ties) and verdict rule."""

import pytest

from policylab.errors import BadInput
from policylab.studies.breakout.requests import DEFAULT_RULE
from policylab.studies.breakout.search.selection import parse_rule, rank_candidates, verdict


def row(cid, low, smin, mean):
    return {"candidate_id": cid, "low_score_count": low, "score_min": smin, "score_mean": mean}


def test_default_rule_orders_like_the_original():
    rows = [row("c0", 1, 2, 9.0), row("c1", 0, 6, 7.0), row("c2", 0, 6, 7.6), row("c3", 0, 7, 7.1)]
    assert [r["candidate_id"] for r in rank_candidates(rows, DEFAULT_RULE)] == ["c3", "c2", "c1", "c0"]


def test_ties_keep_input_order():
    rows = [row("c5", 0, 6, 7.5), row("c1", 0, 6, 7.5), row("c9", 0, 6, 7.5)]
    assert [r["candidate_id"] for r in rank_candidates(rows)] == ["c5", "c1", "c9"]


def test_rule_is_a_parameter():
    rows = [row("a", 2, 0, 9.0), row("b", 0, 5, 6.0)]
    assert rank_candidates(rows, "score_mean desc")[0]["candidate_id"] == "a"
    assert rank_candidates(rows, "score_mean asc")[0]["candidate_id"] == "b"


@pytest.mark.parametrize("bad", ["score_mean", "score_mean up", "bogus asc", "score_mean asc, score_mean desc", ""])
def test_malformed_rules_name_the_field(bad):
    with pytest.raises(BadInput) as exc:
        parse_rule(bad)
    assert exc.value.field == "select"


def test_verdict_rule():
    assert verdict({"ci95": [0.5, 3.0], "n": 20}) == "improved"
    assert verdict({"ci95": [-3.0, -0.1], "n": 20}) == "worse"
    assert verdict({"ci95": [-1.0, 2.0], "n": 20}) == "inconclusive"
    assert verdict({"ci95": [0.0, 2.0], "n": 20}) == "inconclusive"
    # two seeds' interval below 0 is no verdict (a percentile bootstrap said "worse [-364, -73]")
    assert verdict({"ci95": [-364.0, -73.0], "n": 2}) == verdict({"ci95": None, "n": 1}) == "too few seeds"
