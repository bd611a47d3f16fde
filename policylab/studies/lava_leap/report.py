"""What a run writes: results/*.json, the charts, and DIR/index.html with every result checked over every seed.

The JSON keeps the spec's key order and holds no times, so two runs of one configuration write identical bytes."""

from __future__ import annotations

import json
import time
from pathlib import Path

from policylab.config import claim_out_dir
from policylab.fileio import atomic_write_text, write_json, write_wallclock
from policylab.progress import say
from policylab.report.html import Figure, Page, Section, Table, Text, render_sections
from policylab.result import Result, command_line
from policylab.rollout.store import Store
from policylab.studies.lava_leap.charts import FILES, NAME, draw_all
from policylab.studies.lava_leap.config import LavaLeapConfig
from policylab.studies.lava_leap.experiments import Study, run_study
from policylab.studies.lava_leap.floor import FIRST, LAST_START, P_CHANNEL, P_WIDE
from policylab.studies.lava_leap.learners import ALGOS
from policylab.studies.lava_leap.requests import RunRequest
from policylab.studies.lava_leap.uncertainty import side_by_side

CAPTIONS = {
    "e1": "E1. The showcase floor played 8 times untrained and 8 times by the trained GRPO bot (first seed).",
    "e2": "E2. Exact mean score on the 200 test floors during training, every algorithm and seed.",
    "slow": "E2, the slow seed. Every GRPO seed's curve; the slowest one thick.",
    "e3a": "E3a. Grading on a curve: one group of runs on a hard floor and their GRPO advantages.",
    "e3b": "E3b. The PPO critic's single forecast from the start line against an easy and a hard floor (first seed).",
    "e4": "E4. Probability ratios of every step across the passes of one GRPO update; rings are clipped.",
    "walk": "E4. What the update did to the policy: P(LEAP) per pattern pass by pass, and each weight's change.",
    "e5": "E5. P(LEAP) per sensor pattern before and after GRPO training, every seed.",
}
PATTERNS = ("100", "110", "000", "001", "010", "011", "101", "111")
ROWS = ("lava +1", "lava +2", "lava +3", "bias")


def f3(x) -> str:
    return "" if x is None else f"{x:.3f}"


def f4(x) -> str:
    return "" if x is None else f"{x:.4f}"


def signed(x, d: int = 4) -> str:
    return "" if x is None else f"{x:+.{d}f}"


def ci_text(ci, d: int = 3, sign: bool = False) -> str:
    if ci is None:
        return "none (1 seed)"
    return f"[{ci[0]:+.{d}f}, {ci[1]:+.{d}f}]" if sign else f"[{ci[0]:.{d}f}, {ci[1]:.{d}f}]"


def needed_text(c: dict) -> str:
    n = c["seeds_needed_80pct_power"]
    if n is None:
        return "no difference to detect" if c["mean_delta"] == 0 else "more than 100,000"
    return f"{n:,}"


def values_text(values) -> str:
    """A claim's per-seed values as one readable line."""
    if not values:
        return ""
    if not isinstance(values, dict):
        return str(values)
    seeds = values.get("seeds")
    parts = []
    for k, v in values.items():
        if k == "seeds":
            continue
        if isinstance(v, list) and seeds is not None and len(v) == len(seeds) and k != "verdicts":
            inner = ", ".join(f"{s}: {fmt_value(x)}" for s, x in zip(seeds, v))
            parts.append(f"{k.replace('_', ' ')} by seed ({inner})")
        elif isinstance(v, list):
            parts.append(f"{k.replace('_', ' ')}: " + "; ".join(fmt_value(x) for x in v))
        else:
            parts.append(f"{k.replace('_', ' ')}: {fmt_value(v)}")
    if seeds is not None and not any(
        isinstance(v, list) and len(v) == len(seeds) for k, v in values.items() if k not in ("seeds", "verdicts")
    ):
        parts.insert(0, "seeds " + ", ".join(map(str, seeds)))
    return "; ".join(parts)


def fmt_value(x) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(fmt_value(v) for v in x) + "]"
    return "none" if x is None else str(x)


def headline_lines(s: dict) -> tuple[str, ...]:
    """What the console prints before `report: PATH`: the original's untrained / ceiling line and
    each algorithm's final score with its 95% interval over training seeds."""
    c = s["ceiling"]
    lines = [
        f"untrained {s['untrained']['score']:.4f}  ceiling {c['score']:.4f} "
        f"({c['n_tied_best']} tied best of {c['n_policies']} deterministic policies)"
    ]
    for a in ("reinforce", "ppo", "grpo"):
        f = s["final"][a]
        ci = "no interval with 1 seed" if f["score_ci95"] is None else f"95% CI {ci_text(f['score_ci95'], 4)}"
        lines.append(
            f"{NAME[a]} final {f['score_mean']:.4f}  {ci}  over {f['n_seeds']} training "
            f"seed{'s' if f['n_seeds'] != 1 else ''} "
            f"({f['pct_of_ceiling']:.0f}% of ceiling)"
        )
    return tuple(lines)


def comparison_table(title: str, comps: list[dict], note: str = "") -> Table:
    rows = [
        [
            f"{c['a']} vs {c['b']}",
            f3(c["mean_a"]),
            f3(c["mean_b"]),
            signed(c["mean_delta"]),
            ci_text(c["ci95"], 4, sign=True),
            c["verdict"],
            f"{c['wins']} / {c['ties']} / {c['losses']}",
            needed_text(c),
        ]
        for c in comps
    ]
    return Table(
        title,
        [
            "comparison",
            "mean A",
            "mean B",
            "A - B",
            "95% CI of A - B",
            "verdict",
            "seeds A ahead / tied / behind",
            "seeds needed (80% power)",
        ],
        rows,
        note=note,
    )


def results_section(s: dict, study: Study) -> Section:
    fin, n = s["final"], len(s["config"]["seeds"])
    rounds = s["config"]["rounds"]
    rows = []
    for a in ALGOS:
        f = fin[a]
        u90 = f["updates_to_90pct"]
        rows.append(
            [
                NAME[a],
                f["n_seeds"],
                f4(f["score_mean"]),
                ci_text(f["score_ci95"], 4),
                f4(f["score_sd"]),
                f4(f["score_min"]),
                f4(f["score_max"]),
                f"{f['pct_of_ceiling']:.1f}%",
                ""
                if f["pct_of_ceiling_ci95"] is None
                else f"{f['pct_of_ceiling_ci95'][0]:.1f}-{f['pct_of_ceiling_ci95'][1]:.1f}%",
                f"never within {rounds}" if u90 is None else u90,
                f4(f["score_at_50"]),
                f4(f["score_at_100"]),
            ]
        )
    finals = Table(
        "Final scores on the 200 test floors (exact), over training seeds",
        [
            "algorithm",
            "seeds",
            "mean",
            "95% CI",
            "sd",
            "min",
            "max",
            "% of best",
            "95% CI, % of best",
            "updates to 90% of best (mean curve)",
            "mean at 50",
            "mean at 100",
        ],
        rows,
        note="The unit is the training seed: each seed's score is already an exact expectation averaged over the "
        "200 test floors, so the floors are not independent samples. Intervals: Student t over the seeds "
        f"(n = {n}, sd with ddof 1), clipped to the range the quantity takes (a score to [0, the ceiling], "
        "an exit rate to [0, 1]), so a seed that collapses cannot carry an interval past a score no policy "
        "reaches. More seeds (--seeds) narrow them.",
    )
    comps = comparison_table(
        "Paired comparisons of the final scores (same training seeds)",
        s["comparisons"],
        note="Paired by training seed: seed i of every algorithm trains on the same floors with the same random "
        "numbers, and all are scored on the same test floors. Verdict 'better' / 'worse' when the 95% t interval "
        "of the per-seed differences excludes 0. 'Seeds needed': how many paired seeds a t-test at 5% needs "
        "to detect a difference of this size with 80% power, given the spread of the per-seed differences "
        "seen here (itself an estimate from these seeds). Intervals are per comparison, not corrected for "
        "multiplicity.",
    )
    mc_rows = [
        [
            "untrained",
            f4(s["untrained"]["score"]),
            f4(s["untrained"]["sim"]["score"]),
            signed(s["untrained"]["sim"]["score"] - s["untrained"]["score"]),
        ],
        [
            "best deterministic policy",
            f4(s["ceiling"]["score"]),
            f4(s["ceiling"]["sim"]["score"]),
            signed(s["ceiling"]["sim"]["score"] - s["ceiling"]["score"]),
        ],
    ]
    for a in ALGOS:
        ex = fin[a]["per_seed"][0]["score"]
        mc_rows.append(
            [
                f"{NAME[a]}, seed {fin[a]['per_seed'][0]['seed']}",
                f4(ex),
                f4(fin[a]["seed0_sim"]["score"]),
                signed(fin[a]["seed0_sim"]["score"] - ex),
            ]
        )
    mc = Table(
        "Monte Carlo cross-check (the first seed only)",
        ["policy", "exact score", "Monte Carlo score", "difference"],
        mc_rows,
        note="Each Monte Carlo score plays every test floor 50 times (10,000 plays); it checks the exact "
        "numbers, it is not a result. It is run on the first training seed's policies only, so it sits "
        "apart from the seed means above.",
    )
    e6 = s["e6"]
    e6_rows = [["untrained", f4(e6["untrained"]), "", "", ""]]
    e6_rows += [
        [NAME[a], f4(e6[a]["mean"]), ci_text(e6[a]["ci95"], 4), f4(e6[a]["min"]), f4(e6[a]["max"])] for a in ALGOS
    ]
    e6_rows.append(["best deterministic policy", f4(e6["ceiling"]), "", "", ""])
    exits = Table(
        "E6. Exit rate on the test floors (exact probability of reaching the dock)",
        ["policy", "mean", "95% CI", "min", "max"],
        e6_rows,
        note="Even the best policy reaches the exit only when every two-tile channel's coin flip goes its "
        f"way: mean 0.5^(two-tile channels) over the floors. Test floors: "
        f"{s['test_floor_stats']['mean_channels']:.2f} channels on average, "
        f"{s['test_floor_stats']['mean_wide']:.2f} of them two-tile; "
        f"{100 * s['test_floor_stats']['share_with_no_wide']:.0f}% have none.",
    )
    return Section(
        "results", "Results", [finals, comps, Figure(f"assets/{FILES['e2']}", fig_caption(study, "e2")), exits, mc]
    )


def fig_caption(study: Study, key: str) -> str:
    return f"{CAPTIONS[key]} Title: \u201c{study.charts[key]['title']}\u201d."


def lr_section(s: dict) -> Section:
    sweep = s["lr_sensitivity"]
    cfg_lr = s["config"]["lr"]
    rows = [
        [
            k,
            v["n"],
            f4(v["score_mean"]),
            ci_text(v["score_ci95"], 4),
            f4(v["score_min"]),
            f4(v["score_max"]),
            signed(v["vs_grpo_default"]["mean_delta"]),
            ci_text(v["vs_grpo_default"]["ci95"], 4, sign=True),
            v["vs_grpo_default"]["verdict"],
        ]
        for k, v in sweep.items()
    ]
    sens = Table(
        f"The original's learning-rate sweep, on the training seeds, against GRPO at lr {cfg_lr}",
        ["run", "seeds", "mean", "95% CI", "min", "max", f"minus grpo@{cfg_lr}", "95% CI", "verdict"],
        rows,
        note="The sweep's question: is GRPO's edge just its larger, std-scaled step? Each point is "
        f"compared, paired by seed, with GRPO at the run's own lr ({cfg_lr}) on the same seeds.",
    )
    sel = s["lr_selection"]
    sel_rows = [
        [k, "yes" if v["chosen"] else "", f4(v["score_mean"]), ci_text(v["score_ci95"], 4)]
        for k, v in sel["selection"].items()
    ]
    selection = Table(
        "Selection: each algorithm's learning rate, chosen on the training seeds "
        f"({', '.join(map(str, sel['selection_seeds']))})",
        ["candidate", "chosen", "mean (training seeds)", "95% CI"],
        sel_rows,
        note=sel["rule"] + ".",
    )
    val_rows = [
        [
            k,
            "chosen" if v["chosen"] else "default",
            v["n"],
            f4(v["selection_score_mean"]),
            f4(v["score_mean"]),
            ci_text(v["score_ci95"], 4),
            f4(v["score_min"]),
            f4(v["score_max"]),
        ]
        for k, v in sel["validation"].items()
    ]
    validation = Table(
        f"Validation: the chosen rates trained again on fresh seeds ({', '.join(map(str, sel['validation_seeds']))})",
        ["run", "role", "seeds", "mean on training seeds", "mean on validation seeds", "95% CI", "min", "max"],
        val_rows,
        note="The validation seeds come from their own named seed range, disjoint from the training "
        "seeds, so the choice cannot flatter the chosen rate.",
    )
    comps = comparison_table(
        "Validation comparisons (paired by validation seed)",
        sel["comparisons"],
        note="The chosen rates against each other, and each chosen rate against the default where they differ.",
    )
    return Section(
        "learning-rate",
        "Learning rate: chosen on training seeds, compared on fresh seeds",
        [sens, selection, validation, comps],
    )


def claims_section(study: Study) -> Section:
    rows = [
        [
            c["id"],
            c["kind"],
            c["constraint"],
            c["threshold"],
            c["scope"],
            values_text(c["values"]),
            "holds" if c["holds"] else "does not hold",
        ]
        for c in study.checks
    ]
    table = Table(
        "Every constraint and narrative claim, checked on this run",
        ["id", "kind", "claim", "threshold", "covers", "values", "holds"],
        rows,
        failed=[not c["holds"] for c in study.checks],
        note="Hard constraints are the original script's asserts. Narrative claims are checked over every "
        "training seed with the stated threshold; a chart keeps the original's title only when its "
        "claim holds, and otherwise gets the title shown under it.",
    )
    figs = [Figure(f"assets/{FILES[k]}", fig_caption(study, k)) for k in ("e1", "e3b", "e5")]
    return Section("claims", "Claims, checked over every seed", [table, *figs])


def slow_section(s: dict, study: Study) -> Section:
    slow = s["grpo_slow_seed"]
    plateau = next(c for c in study.checks if c["id"] == "e2-slow")
    seeds = s["config"]["seeds"]
    rows = [
        [
            seed,
            f4(a100),
            plateau["values"]["longest_plateau_updates"][i],
            ""
            if plateau["values"]["plateau_span"][i] is None
            else f"{plateau['values']['plateau_span'][i][0]}-{plateau['values']['plateau_span'][i][1]}",
            f4(s["final"]["grpo"]["per_seed"][i]["score"]),
            "slowest" if seed == slow["seed"] else "",
        ]
        for i, (seed, a100) in enumerate(zip(seeds, slow["score_at_100_per_seed"]))
    ]
    table = Table(
        "GRPO seeds: score at update 100, longest plateau, final score",
        ["seed", "score at 100", "longest plateau (updates)", "plateau updates", "final", ""],
        rows,
        note=f"Plateau: {plateau['threshold']}.",
    )
    t10 = slow["leap_table_at_10"]
    facts = Table(
        f"The slowest seed ({slow['seed']})",
        ["measure", "value"],
        [
            ["mean score over updates 10-140", f4(slow["plateau_mean"])],
            ["lowest / highest score over updates 10-140", f"{f4(slow['plateau_min'])} / {f4(slow['plateau_max'])}"],
            [
                "first update 0.05 above that mean",
                "never" if slow["release_update"] is None else slow["release_update"],
            ],
            [
                "P(LEAP) at update 10, patterns " + ", ".join(PATTERNS),
                ", ".join(f"{t10[int(b, 2)]:.2f}" for b in PATTERNS),
            ],
            ["lowest P(LEAP) at update 10 over the patterns that occur", f4(slow["min_leap_at_10"])],
        ],
    )
    return Section(
        "slow-seed", "The slow GRPO seed", [Figure(f"assets/{FILES['slow']}", fig_caption(study, "slow")), table, facts]
    )


def clip_section(s: dict) -> Section:
    rows = []
    for a in ("grpo", "ppo"):
        c = s["clip_stats"][a]
        rows.append(
            [
                NAME[a],
                ", ".join(map(str, c["updates_with_clip_per_seed"])),
                ", ".join(f"{100 * x:.2f}%" for x in c["share_per_seed"]),
                f"{100 * c['share_of_step_passes_clipped']:.2f}%",
                f4(c["mean_abs_advantage"]),
                c["updates"],
            ]
        )
    return Section(
        "clipping",
        "How often the clip engages during training",
        [
            Table(
                "Clip statistics (per training seed)",
                [
                    "algorithm",
                    "updates with any clipped step, by seed",
                    "clipped share of step-passes, by seed",
                    "pooled share",
                    "mean |advantage|",
                    "updates per seed",
                ],
                rows,
                note="A step-pass is one step in one of the update's passes; it is clipped when its ratio has left "
                "[1 - eps, 1 + eps] in its advantage's direction, and it then pushes nothing.",
            )
        ],
    )


def matrix_rows(*named: tuple[str, list], digits: int = 4) -> list[list[str]]:
    """Rows bias/lava+k of 4 x 2 matrices side by side: [row, A step, A leap, B step, B leap, ...]."""
    out = []
    for i, row in enumerate(ROWS):
        cells = [row]
        for _, m in named:
            cells += [f"{m[i][0] + 0.0:+.{digits}f}", f"{m[i][1] + 0.0:+.{digits}f}"]  # + 0.0: no "-0"
        out.append(cells)
    return out


def matrix_columns(*names: str) -> list[str]:
    return ["sensor"] + [f"{n}: {side}" for n in names for side in ("STEP", "LEAP")]


def walkthrough_section(w: dict, study: Study) -> Section:
    pol, fl, grp, hyper = w["policy"], w["floor"], w["group"], w["hyper"]
    rep = w["representative"]
    N = grp["N_steps"]
    blocks: list = [
        Text(
            f"One GRPO update, replayed with every number kept (results/walkthrough.json). The policy is "
            f"{pol['source']} (exact test score {pol['test_score']:.4f}); it plays one hard floor "
            f"(floor seed {fl['seed']}) {len(w['runs'])} times, scores the group, and takes {hyper['passes']} clipped "
            f"passes at lr {hyper['lr']}, clip eps {hyper['eps']}."
        )
    ]
    blocks.append(
        Text(
            f"floor {fl['seed']}:  {fl['layout']}   (# = lava; channels at "
            + ", ".join(f"{a} (width {b})" for a, b in fl["channels"])
            + ")",
            mono=True,
        )
    )
    blocks.append(
        Table(
            "1. The policy before the update",
            matrix_columns("W"),
            matrix_rows(("W", pol["W"])),
            note="P(LEAP) per pattern: " + ", ".join(f"{b} {pol['leap_table'][int(b, 2)]:.3f}" for b in PATTERNS),
        )
    )
    run_rows = [
        [
            i + 1,
            r["moves"],
            r["steps"],
            r["final_tile"],
            "exit" if r["reached_exit"] else "lava",
            f4(r["reward"]),
            signed(r["advantage"], 3),
        ]
        for i, r in enumerate(w["runs"])
    ]
    blocks.append(
        Table(
            "2. The group: each run, its reward r = tile / 39 and its advantage",
            [
                "run",
                "moves (S = step, L = leap)",
                "moves",
                "final tile",
                "ended in",
                "reward r",
                "advantage (r - mean) / std",
            ],
            run_rows,
            note=f"Group mean {grp['mean']:.4f} (tile {grp['mean_tile']:.2f}), population std "
            f"{grp['std']:.4f}; every step of a run carries the run's advantage, {N} steps in all. "
            "All rewards equal would give every advantage 0 and no update.",
        )
    )
    blocks.append(Figure(f"assets/{FILES['e3a']}", fig_caption(study, "e3a")))
    blocks.append(
        Table(
            f"3. One step in detail: run {rep['run']}, step {rep['step']} (tile {rep['tile']}, pattern {rep['pattern']}, "
            f"{rep['move']})",
            ["quantity", "value"],
            [
                ["why this step", "the least likely last move among the worst runs (the most avoidable fall)"],
                ["sensor vector s", fmt_value(rep["s"])],
                ["logits s @ W (STEP, LEAP)", fmt_value(rep["scores"])],
                ["pi_old (STEP, LEAP)", f"{rep['p_step']:.4f}, {rep['p_leap']:.4f}"],
                ["onehot(move) - pi", fmt_value(rep["onehot_minus_pi"])],
                ["advantage A", signed(rep["advantage"])],
                [f"pass-1 coefficient A / N (N = {N})", signed(rep["coef_pass1"], 6)],
                [
                    "its ratio pi_new / pi_old at the start of passes 1..",
                    ", ".join(f"{x:.4f}" for x in rep["rho_by_pass"]),
                ],
                ["its ratio after the update", f4(rep["rho_final"])],
            ],
        )
    )
    blocks.append(
        Table(
            "   Its push on W in pass 1: outer(s, onehot - pi) * A / N, and times lr",
            matrix_columns("push", "lr * push"),
            matrix_rows(("push", rep["push"]), ("lr * push", rep["push_lr"]), digits=5),
            note="Only the rows of the sensors that are on (s = 1) move; STEP and LEAP move oppositely.",
        )
    )
    pass_rows = [
        [
            p["k"],
            f4(p["rho_min"]),
            f4(p["rho_max"]),
            p["n_outside_band"],
            p["n_clipped"],
            "; ".join(
                f"run {c['run']} step {c['step']} ({c['pattern']} {c['move']}, rho {c['rho']:.3f})"
                for c in p["clipped"]
            )
            or "none",
            f4(p["rep_rho"]),
        ]
        for p in w["passes"]
    ]
    blocks.append(
        Table(
            "4. The passes: ratios and clipping",
            [
                "pass",
                "lowest ratio",
                "highest ratio",
                f"outside [{1 - hyper['eps']:.1f}, {1 + hyper['eps']:.1f}]",
                "clipped (push nothing)",
                "clipped steps",
                "detailed step's ratio",
            ],
            pass_rows,
            note="A step is clipped when its ratio has left the band in its advantage's direction (A > 0 and ratio > "
            "1 + eps, or A < 0 and ratio < 1 - eps); a ratio outside the band the other way still pushes. "
            f"Clipped step-passes in all: {w['total_clipped_step_passes']}.",
        )
    )
    blocks.append(Figure(f"assets/{FILES['e4']}", fig_caption(study, "e4")))
    for p in w["passes"]:
        blocks.append(
            Table(
                f"5.{p['k']} Pass {p['k']}: gradient and weight change",
                matrix_columns("W before", "gradient", "lr * gradient", "W after"),
                [
                    a + b[1:] + c[1:] + d[1:]
                    for a, b, c, d in zip(
                        matrix_rows(("W", p["W_before"])),
                        matrix_rows(("g", p["grad"]), digits=5),
                        matrix_rows(("d", p["delta_W"]), digits=5),
                        matrix_rows(("W", p["W_after"])),
                    )
                ],
                note="gradient = (1/N) sum over unclipped steps of A * ratio * outer(s, onehot - pi); "
                "W after = W before + lr * gradient. P(LEAP) at the pass's start: "
                + ", ".join(f"{b} {p['leap_table'][int(b, 2)]:.3f}" for b in PATTERNS[:6]),
            )
        )
    lt0, lt1 = pol["leap_table"], w["leap_table_final"]
    blocks.append(
        Table(
            "6. The weight change and what it did",
            ["pattern", "P(LEAP) before", "P(LEAP) after", "change"],
            [[b, f4(lt0[int(b, 2)]), f4(lt1[int(b, 2)]), signed(lt1[int(b, 2)] - lt0[int(b, 2)])] for b in PATTERNS],
            note=f"Exact test score {pol['test_score']:.4f} before, {w['test_score_after']:.4f} after. "
            f"Ratios after the update range {w['final_rho_min']:.3f} to {w['final_rho_max']:.3f}. "
            f"Share of LEAP among above-mean steps {fmt_value(w['leap_share']['above_mean'])} "
            f"({w['leap_share']['leaps_above']} of {w['leap_share']['n_above']}), among below-mean "
            f"steps {fmt_value(w['leap_share']['below_mean'])} ({w['leap_share']['leaps_below']} of "
            f"{w['leap_share']['n_below']}).",
        )
    )
    blocks.append(
        Table(
            "   W before and after",
            matrix_columns("W before", "W after"),
            matrix_rows(("W", pol["W"]), ("W", w["W_final"])),
        )
    )
    blocks.append(Figure(f"assets/{FILES['walk']}", fig_caption(study, "walk")))
    blocks.append(
        Table(
            "7. The steps whose ratio moved most by the last pass",
            ["run", "step", "tile", "pattern", "move", "advantage", "pi_old", "ratio in the last pass", "clipped"],
            [
                [
                    m["run"],
                    m["step"],
                    m["tile"],
                    m["pattern"],
                    m["move"],
                    signed(m["advantage"], 3),
                    f4(m["pi_old"]),
                    f4(m["rho_pass4"]),
                    "yes" if m["clipped_pass4"] else "no",
                ]
                for m in w["biggest_movers"]
            ],
        )
    )
    return Section("walkthrough", "Walkthrough: one GRPO update, step by step", blocks)


def write_report(out: Path, study: Study) -> Path:
    s = study.summary
    fin = s["final"]
    headline = [
        ("untrained score (exact)", f4(s["untrained"]["score"])),
        ("best possible score (256 policies)", f4(s["ceiling"]["score"])),
    ]
    headline += [
        (f"{NAME[a]} final, 95% CI", f"{fin[a]['score_mean']:.3f} {ci_text(fin[a]['score_ci95'])}")
        for a in ("grpo", "ppo", "reinforce")
    ]
    headline += [
        (f"{row['pair']}, {row[side]['rates']}", f"{row[side]['mean_delta']:+.3f}: {row[side]['verdict']}")
        for row in side_by_side(s)
        for side in ("equal", "fresh")
    ]
    headline += [
        ("best possible exit rate", f4(s["ceiling"]["exit_rate"])),
        ("GRPO exit rate", f4(s["e6"]["grpo"]["mean"])),
    ]
    failed = [f"{c['id']} ({c['constraint']})" for c in study.checks if not c["holds"]]
    notes = [
        f"Floor generator: tiles {FIRST}..{LAST_START} each start a channel with probability {P_CHANNEL}, "
        f"2 wide with probability {P_WIDE}; channels are separated by at least 2 safe tiles "
        "(docs/lava_leap.md says why)."
    ]
    if failed:
        notes.append(
            f"{len(failed)} of {len(study.checks)} checks do not hold on this run: "
            + "; ".join(failed)
            + ". Their charts carry titles the data supports; the claims table gives every value."
        )
    n = len(s["config"]["seeds"])
    page = Page(
        title="Lava Leap: REINFORCE vs PPO vs GRPO, scored exactly",
        subtitle=f"{n} training seeds per algorithm, {s['config']['rounds']} updates of {s['config']['G']} "
        f"plays each; every score is an exact expectation over {s['config']['n_test_floors']} fixed "
        "test floors, every interval a 95% t interval over training seeds, clipped to the range the "
        "quantity takes.",
        headline=headline,
        notes=notes,
        sections=[
            results_section(s, study),
            lr_section(s),
            claims_section(study),
            slow_section(s, study),
            clip_section(s),
            walkthrough_section(study.walkthrough, study),
        ],
    )
    path = Path(out) / "index.html"
    render_sections(
        path,
        page,
        {
            "results/summary.json": s,
            "results/walkthrough.json": study.walkthrough,
            "results/checks.json": {str(i): c for i, c in enumerate(study.checks)},
        },
    )
    return path


RESULTS = ("results/summary.json", "results/walkthrough.json", "results/checks.json")  # in the page's JSON order


def write_json_ordered(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def write_outputs(cfg: LavaLeapConfig, out: Path) -> Path:
    """Run the study and write everything into `out`; returns the path of index.html."""
    out = Path(out)
    with Store(out / "store") as store:
        study = run_study(cfg, store)
    for name, doc in zip(RESULTS, (study.summary, study.walkthrough, study.checks)):
        write_json_ordered(out / name, doc)
    say(f"lava-leap: drawing the {len(study.charts)} charts")
    draw_all(study.charts, out / "assets")
    return write_report(out, study)


def run(req: RunRequest) -> Result:
    """`policylab lava-leap run`: claim the out folder, run every experiment, write the page; then, as the other
    studies' commands do, `manifest.json` (the config, the files written, the command that reruns it) and
    `wallclock.json`, the one file holding a wall-clock time."""
    start = time.perf_counter()
    claim_out_dir(req.out, req.config())
    index = write_outputs(req, req.out)
    write_json(
        Path(req.out) / "manifest.json",
        {
            "config": req.config(),
            "page": "index.html",
            "results": list(RESULTS),
            "charts": [f"assets/{name}" for name in FILES.values()],
            "store": "store",
            "rerun_commands": {"run": command_line("policylab lava-leap run", req)},
        },
    )
    wall = time.perf_counter() - start
    write_wallclock(Path(req.out), wall)
    say(f"lava-leap: done in {wall:.1f} s")
    summary = json.loads((Path(req.out) / "results" / "summary.json").read_text())
    return Result(index, headlines=headline_lines(summary))
