"""The robust-policy goals (issue 25) on rows the real reduction computes: a row's bootstrap median
against its friction's floor, a row that survives every push holds (boundary above the grid), a row
below the grid fails, rows below mu 0.3 are not checked; the nominal verdicts."""

from __future__ import annotations

import numpy as np

from policylab.studies.boundary.goals import boundary_checks, boundary_summary, nominal_check
from policylab.studies.boundary.reduce import row_boundary

PUSHES = [10.0, 50.0, 90.0, 130.0]


def row(mu: float, survivors_per_cell: list[int], n: int = 16) -> dict:
    codes = np.array([[1] * s + [0] * (n - s) for s in survivors_per_cell])
    return {"row": mu, **row_boundary(PUSHES, codes, resamples=400, seed=0, row=0)}


def test_each_row_is_held_to_its_frictions_floor():
    rows = [
        row(0.2, [16, 0, 0, 0]),  # below mu 0.3: not checked
        row(0.3, [16, 16, 2, 0]),  # crosses between 50 and 90: ~73 %BW >= 50
        row(0.6, [16, 16, 2, 0]),  # the same row at mu 0.6: < 75
        row(0.8, [16, 16, 16, 16]),  # survives every push: above the grid, holds
        row(1.0, [4, 0, 0, 0]),
    ]  # falls at the smallest push: below the grid, fails
    checks = {c["mu"]: c for c in boundary_checks(rows)}
    assert sorted(checks) == [0.3, 0.6, 0.8, 1.0]
    assert checks[0.3]["floor_pct_bw"] == 50.0 and 50 < checks[0.3]["median_pct_bw"] < 90 and checks[0.3]["holds"]
    assert checks[0.6]["floor_pct_bw"] == 75.0 and not checks[0.6]["holds"]
    assert checks[0.6]["median_pct_bw"] == checks[0.3]["median_pct_bw"]
    assert checks[0.8]["above_grid"] and checks[0.8]["holds"] and checks[0.8]["interval_above_floor"]
    assert checks[0.8]["median_pct_bw"] is None and "above" in checks[0.8]["note"]
    assert not checks[1.0]["above_grid"] and not checks[1.0]["holds"]
    summary = boundary_summary(rows)
    assert (summary["rows_checked"], summary["rows_holding"], summary["all_hold"]) == (4, 2, False)


def test_the_interval_is_checked_beside_the_median():
    c = boundary_checks([row(0.3, [16, 12, 6, 0])])[0]
    lo, hi = c["ci95_pct_bw"]
    assert lo <= c["median_pct_bw"] <= hi
    assert c["interval_above_floor"] == (lo >= 50.0)


def test_nominal_needs_both_survival_and_speed():
    judged = {"worlds": 256, "survival": 254 / 256, "speed_mps": 0.45, "command_mps": 0.5, "speed_within_20pct": True}
    assert nominal_check(judged)["holds"]
    assert not nominal_check({**judged, "survival": 253 / 256})["holds"]
    slow = nominal_check({**judged, "speed_within_20pct": False})
    assert slow["survival_holds"] and not slow["holds"]


def test_the_trainer_bar_adds_higher_floors_a_share_of_its_rows_and_a_band_rising_with_friction():
    from policylab.studies.boundary.goals import trainer_bar

    rising = [
        row(0.3, [16, 16, 2, 0]),  # ~73 %BW: over the 60 floor, not 0.8 x 100
        row(0.6, [16, 16, 16, 2]),  # ~113: over 100 and 0.8 x 124
        row(0.8, [16, 16, 16, 16]),
    ]  # above the grid: meets everything, ranks highest
    bar = trainer_bar(rising)
    checks = {c["mu"]: c for c in bar["rows"]}
    assert checks[0.3]["holds"] and not checks[0.3]["meets_trainer_share"] and checks[0.3]["trainer_pct_bw"] == 100
    assert checks[0.6]["holds"] and checks[0.6]["meets_trainer_share"] and checks[0.8]["meets_trainer_share"]
    assert bar["spearman_mu_boundary"] == 1.0 and bar["rises_with_friction"] and not bar["all_hold"]
    wall = trainer_bar([row(mu, [16, 2, 0, 0]) for mu in (0.3, 0.5, 0.7, 0.9)])  # the same boundary on every row
    assert wall["floors_holding"] == 0 and wall["spearman_mu_boundary"] is None and not wall["rises_with_friction"]
