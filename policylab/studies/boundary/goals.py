"""The bar a robust Go1 policy is held to (issue 25, after the original study's PPO network, whose
band lay at 50-110 %BW): each friction row's boundary, and the nominal judgement of `boundary learn`.

A row's boundary is its bootstrap median (`reduce.row_boundary`); a row whose observed survival stays
>= 0.5 up to the largest push has its boundary above the grid, so it holds whatever the floor. A row
whose boundary lies below the grid, or that fewer than half the resamples cross, does not.
"""

from __future__ import annotations

from typing import Mapping, Sequence

# (lowest friction of the rows a goal covers, boundary floor in %BW); a row takes the first that covers it
BOUNDARY_FLOORS = ((0.6, 75.0), (0.3, 50.0))
NOMINAL_SURVIVAL = 0.99  # of the nominal worlds (mu 1.0, no push, 5 s)
BOUNDARY_RULE = ("bootstrap median >= 75 %BW for every row with mu >= 0.6, >= 50 %BW for mu >= 0.3; a row "
                 "surviving every push of the grid holds (boundary above the grid)")


def boundary_checks(rows: Sequence[Mapping]) -> list[dict]:
    """The boundary goal per friction row of a reduction (reduce.json's ``boundary``); rows below the
    lowest goal's friction are not checked."""
    out = []
    for row in rows:
        floor = next((f for mu_min, f in BOUNDARY_FLOORS if row["mu"] >= mu_min - 1e-9), None)
        if floor is None:
            continue
        above = row["status"] != "boundary" and row.get("beyond_grid") == "above"
        median, ci = row["median_pct_bw"], row["ci95_pct_bw"]
        out.append({"mu": row["mu"], "floor_pct_bw": floor, "median_pct_bw": median, "ci95_pct_bw": ci,
                    "above_grid": above, "holds": above or (median is not None and median >= floor),
                    "interval_above_floor": above or (ci is not None and ci[0] >= floor),
                    "note": "survives every push of the grid: boundary above its range" if above else row["note"]})
    return out


def boundary_summary(rows: Sequence[Mapping]) -> dict:
    checks = boundary_checks(rows)
    return {"rows": checks, "rows_checked": len(checks), "rows_holding": sum(c["holds"] for c in checks),
            "all_hold": all(c["holds"] for c in checks), "rule": BOUNDARY_RULE}


def nominal_check(judged: Mapping) -> dict:
    """`learn.judge.nominal`'s judgement with the goal's verdicts: survival >= 99% and the forward speed
    within 20% of the command."""
    survival = judged["survival"] >= NOMINAL_SURVIVAL
    return {**judged, "goal_survival": NOMINAL_SURVIVAL, "survival_holds": survival,
            "holds": survival and bool(judged["speed_within_20pct"])}
