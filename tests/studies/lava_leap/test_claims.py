"""The narrative's claims: checked over every seed, with the chart title chosen from the check.

Unit cases feed `claims.py` data where a claim fails; the run cases compare the default run (five
seeds) with a one-seed run of the same first seed, where the original's E5 wording does hold."""

from __future__ import annotations

import numpy as np

from policylab.studies.lava_leap import claims
from policylab.studies.lava_leap.floor import FLOOR, new_floor
from tests.support.lava_run_cache import full_run, load

GOOD = {"100": 0.99, "110": 0.98, "000": 0.2, "001": 0.01, "010": 0.04, "011": 0.001, "101": 0.9, "111": 0.5}
SCORES = [dict(own=0.56, step=0.559, leap=0.561)]


def table(**changes) -> dict:
    return {**GOOD, **{k.removeprefix("p"): v for k, v in changes.items()}}


def test_e5_title_follows_the_check_on_every_seed():
    rows, title = claims.e5_claims([0, 1], [table(), table()], SCORES * 2)
    assert title == claims.E5_TITLE and all(r["holds"] for r in rows)
    # one seed leaps on 000 more often than not: the '000' claim fails, the title drops 'everywhere else'
    rows, title = claims.e5_claims([0, 1], [table(), table(p000=0.52)], SCORES * 2)
    by = {r["id"]: r for r in rows}
    assert by["e5"]["holds"] and not by["e5-000"]["holds"]
    assert by["e5-000"]["values"]["p_leap_000"] == [0.2, 0.52]
    assert "everywhere else" not in title and "two or three tiles ahead" in title
    # a seed that leaps on 010 (lava two ahead): the claim about the patterns that matter fails
    rows, title = claims.e5_claims([0, 1], [table(), table(p010=0.6)], SCORES * 2)
    assert not rows[0]["holds"] and title == "Trained, the bot leaps when lava is directly ahead, but not only then"
    assert rows[0]["values"]["max_leap_on_001_010_011"] == [0.04, 0.6]
    rows, title = claims.e5_claims([0], [table(p110=0.4)], SCORES)
    assert not rows[0]["holds"] and "does not reliably leap" in title
    # the 000 row says why 000 matters little, with each seed's score change
    assert "both land safe" in rows[1]["constraint"] and rows[1]["threshold"] == "P(LEAP | 000) < 0.5 on every seed"
    assert rows[1]["values"]["score_change_if_always_step_000"] == [-0.001]


def test_fall_distribution_is_exact():
    lava = np.zeros(FLOOR, dtype=bool)
    lava[[10, 11]] = True  # one two-tile channel
    always_step = np.zeros(8)
    fall, p_exit = claims.fall_distribution(always_step, lava)
    assert fall[10] == 1.0 and p_exit == 0.0
    leap_iff_next = np.array([1.0 if b >> 2 & 1 else 0.0 for b in range(8)])
    fall, p_exit = claims.fall_distribution(leap_iff_next, lava)
    assert abs(fall[11] - 0.5) < 1e-12 and abs(p_exit - 0.5) < 1e-12  # the coin flip, and only it
    assert claims.falls_at_wide(leap_iff_next, lava)["share_at_wide"] == 1.0


def test_e1_claim_fails_when_a_seed_falls_elsewhere():
    lava = new_floor(np.random.default_rng(8))
    leap_iff_next = np.array([1.0 if b >> 2 & 1 else 0.0 for b in range(8)])
    row, title = claims.e1_claim([0], [leap_iff_next], lava, True, 9.0, 24.0)
    assert row["holds"] and title == claims.E1_TITLE
    assert row["values"]["p_fall_elsewhere"] == [0.0]
    # "only", as worded: a seed with a few percent of its falls elsewhere (the run's seeds have 3.5-7.4%)
    # fails it, though more than 90% of its fall chance is on two-tile channels
    slightly = leap_iff_next.copy()
    slightly[0b010] = 0.05  # leaps now and then with lava two ahead: falls in narrow channels too
    row, title = claims.e1_claim([0, 1], [leap_iff_next, slightly], lava, True, 9.0, 24.0)
    share = row["values"]["share_at_wide"]
    assert not row["holds"] and share[0] == 1.0 and 0.9 < share[1] < 1.0
    assert 0 < row["values"]["p_fall_elsewhere"][1] < 0.1
    assert "only" not in title
    assert title == (
        f"Untrained, it falls early; trained, it falls mostly at two-tile channels "
        f"({100 * share[1]:.0f}-100% of its fall chance)"
    )
    narrow_first = np.zeros(FLOOR, dtype=bool)
    narrow_first[[10, 20, 21]] = True  # a one-tile channel, then a two-tile one
    never_leaps = np.zeros(8)  # falls in the first channel, the narrow one
    row, title = claims.e1_claim([0, 1], [leap_iff_next, never_leaps], narrow_first, True, 9.0, 24.0)
    assert not row["holds"] and row["values"]["share_at_wide"][1] < claims.MOSTLY
    assert title == "Training carries the bot further: its runs end at tile 24 on average, against 9 untrained"
    row, _ = claims.e1_claim([0], [leap_iff_next], lava, False, 9.0, 24.0)  # the shown plays disagree
    assert not row["holds"]


def test_plateau_claim():
    updates = list(range(0, 301, 10))
    rising = [0.27 + 0.3 * min(u, 100) / 100 for u in updates]  # 0.03 per evaluation: never flat
    stuck = [0.27 + (0.05 if 10 <= u <= 80 else 0.3 * min(u, 150) / 150) for u in updates]
    row, title = claims.plateau_claim([0, 1], updates, [rising, stuck], 1)
    assert row["holds"] and row["values"]["longest_plateau_updates"] == [0, 70]
    assert row["values"]["plateau_span"] == [None, [10, 80]]
    assert title == "GRPO seed 1 sits near 0.32 for 70 updates (10 to 80), then climbs to 0.57"
    row, title = claims.plateau_claim([0, 1], updates, [stuck, rising], 1)
    assert not row["holds"] and title.endswith("has no plateau: it climbs from 0.30 at update 10 to 0.57 at update 140")


def test_e3b_and_ordering_claims():
    row, title = claims.e3b_claim([0, 1], [0.6, 0.4], [0.4, 0.45], [0.7, 0.6], 40)
    assert not row["holds"] and title != claims.E3B_TITLE
    row, title = claims.e3b_claim([0, 1], [0.6, 0.5], [0.4, 0.45], [0.7, 0.6], 40)
    assert row["holds"] and title == claims.E3B_TITLE
    comps = [
        dict(a="GRPO", b="PPO", verdict="better", per_seed_delta=[0.1], seeds=[0]),
        dict(a="PPO", b="REINFORCE", verdict="no detectable difference", per_seed_delta=[0.1], seeds=[0]),
    ]
    assert not claims.ordering_claim(comps)["holds"]


def test_one_seed_keeps_the_original_wording_five_seeds_do_not():
    """Seed 0 alone steps on 000 (P(LEAP) 0.30), so the one-seed run keeps the original E5 title; the
    default run adds seeds 1-4, seed 1 leaps on 000 more often than not, and its title and check table
    say so."""
    one = full_run("one-seed", ("--seeds", "1"))
    five = full_run()
    s1, s5 = load(one, "summary.json"), load(five, "summary.json")
    c1 = {c["id"]: c for c in load(one, "checks.json")}
    c5 = {c["id"]: c for c in load(five, "checks.json")}
    assert s1["e5"]["leap_table"] == s5["e5"]["leap_table"]  # the same first seed
    assert c1["e5-000"]["holds"] and s1["chart_titles"]["e5"] == claims.E5_TITLE
    assert not c5["e5-000"]["holds"] and s5["chart_titles"]["e5"] != claims.E5_TITLE
    html = (five / "index.html").read_text()
    assert s5["chart_titles"]["e5"] in html and "e5-000 (trained, the bot also steps" in html
    # with one seed there is no interval, and no verdict
    assert s1["final"]["grpo"]["score_ci95"] is None
    assert {c["verdict"] for c in s1["comparisons"]} == {"too few seeds"}
    assert not c1["e2-order"]["holds"]
