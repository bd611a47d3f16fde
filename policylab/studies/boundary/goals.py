"""The bars a robust Go1 policy is held to: each friction row's boundary (issue 25's, and issue 37's
`trainer_bar`), and the nominal judgement of `boundary learn`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scipy.stats import spearmanr

# (lowest friction of the rows a goal covers, boundary floor in %BW); a row takes the first that covers it
BOUNDARY_FLOORS = ((0.6, 75.0), (0.3, 50.0))
# Issue 37: higher floors, the band rising with friction, and every row with mu >= 0.3 at least 0.8x the
# trainer's network's (its rows as the issue reports them, by friction: (lowest mu, highest mu, lowest %BW
# of the rows between); the default grid's rows are 0.05 apart).
TRAINER_FLOORS = ((0.6, 100.0), (0.3, 60.0))
TRAINER_ROWS = ((0.10, 0.35, 100.0), (0.40, 0.65, 124.0), (0.70, 1.0, 139.0))
TRAINER_SHARE, TRAINER_SPEARMAN = 0.8, 0.5
NOMINAL_SURVIVAL = 0.99  # of the nominal worlds (mu 1.0, no push, 5 s)
BOUNDARY_RULE = (
    "bootstrap median >= 75 %BW for every row with mu >= 0.6, >= 50 %BW for mu >= 0.3; a row "
    "surviving every push of the grid holds (boundary above the grid)"
)


def boundary_checks(rows: Sequence[Mapping], floors=BOUNDARY_FLOORS) -> list[dict]:
    """The boundary goal per friction row of a reduction of a friction x push grid (reduce.json's
    ``boundary``, each row's `row` its friction); rows below the lowest goal's friction are not checked."""
    out = []
    for row in rows:
        floor = next((f for mu_min, f in floors if row["row"] >= mu_min - 1e-9), None)
        if floor is None:
            continue
        above = row["status"] != "boundary" and row.get("beyond_grid") == "above"
        median, ci = row["median"], row["ci95"]
        out.append(
            {
                "mu": row["row"],
                "floor_pct_bw": floor,
                "median_pct_bw": median,
                "ci95_pct_bw": ci,
                "above_grid": above,
                "holds": above or (median is not None and median >= floor),
                "interval_above_floor": above or (ci is not None and ci[0] >= floor),
                "note": "survives every push of the grid: boundary above its range" if above else row["note"],
            }
        )
    return out


def boundary_summary(rows: Sequence[Mapping]) -> dict:
    checks = boundary_checks(rows)
    return {
        "rows": checks,
        "rows_checked": len(checks),
        "rows_holding": sum(c["holds"] for c in checks),
        "all_hold": all(c["holds"] for c in checks),
        "rule": BOUNDARY_RULE,
    }


def trainer_bar(rows: Sequence[Mapping]) -> dict:
    """Issue 37's bar on a reduction's rows: the floors (`TRAINER_FLOORS`); every row with mu >= 0.3 at
    least `TRAINER_SHARE` of the trainer's network's row (a row above the grid meets it); and the band
    rising with friction, Spearman's rho of mu against the boundary over the rows that cross (a row above
    the grid ranks above every crossing)."""
    checks = boundary_checks(rows, TRAINER_FLOORS)
    for c in checks:
        ref = next(lo for mu_lo, mu_hi, lo in TRAINER_ROWS if mu_lo - 1e-9 <= c["mu"] <= mu_hi + 1e-9)
        c["trainer_pct_bw"] = ref
        c["meets_trainer_share"] = c["above_grid"] or (
            c["median_pct_bw"] is not None and c["median_pct_bw"] >= TRAINER_SHARE * ref
        )
    ranked = [
        (row["row"], float("inf") if row.get("beyond_grid") == "above" else row["median"])
        for row in rows
        if row["median"] is not None or row.get("beyond_grid") == "above"
    ]
    varies = len({b for _, b in ranked}) > 1  # a straight wall has no rank order: rho is undefined (None)
    rho = float(spearmanr(*zip(*ranked)).statistic) if len(ranked) >= 3 and varies else None
    rises = rho is not None and rho >= TRAINER_SPEARMAN
    return {
        "rows": checks,
        "rows_checked": len(checks),
        "floors_holding": sum(c["holds"] for c in checks),
        "share_holding": sum(c["meets_trainer_share"] for c in checks),
        "spearman_mu_boundary": rho,
        "rises_with_friction": rises,
        "all_hold": rises and all(c["holds"] and c["meets_trainer_share"] for c in checks),
    }


def nominal_check(judged: Mapping) -> dict:
    """`learn.judge.nominal`'s judgement with the goal's verdicts: survival >= 99% and the forward speed
    within 20% of the command."""
    survival = judged["survival"] >= NOMINAL_SURVIVAL
    return {
        **judged,
        "goal_survival": NOMINAL_SURVIVAL,
        "survival_holds": survival,
        "holds": survival and bool(judged["speed_within_20pct"]),
    }
