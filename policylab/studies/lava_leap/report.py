"""What a run writes: results/*.json, the charts, and DIR/index.html (headline numbers, every chart,
the constraint checks and the full summary JSON).

The JSON files keep the spec's key order (insertion order, not sorted) and contain no times, so
two runs of one configuration write identical bytes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from policylab.cli.command import Result
from policylab.config import claim_out_dir
from policylab.fileio import atomic_write_text
from policylab.progress import say
from policylab.rollout.store import Store
from policylab.report.html import Page, Table, render
from policylab.studies.lava_leap.charts import FILES, NAME, draw_all
from policylab.studies.lava_leap.config import LavaLeapConfig, LavaLeapRun
from policylab.studies.lava_leap.experiments import Study, run_study
from policylab.studies.lava_leap.floor import FIRST, LAST_START, P_CHANNEL, P_WIDE
from policylab.studies.lava_leap.learners import ALGOS

CAPTIONS = {
    "e1": "E1. The showcase floor played 8 times untrained and 8 times by the trained GRPO bot.",
    "e2": "E2. Exact mean score on the 200 test floors during training, every algorithm and seed.",
    "e3a": "E3a. Grading on a curve: one group of runs on a hard floor and their GRPO advantages.",
    "e3b": "E3b. The PPO critic's single forecast from the start line against an easy and a hard floor.",
    "e4": "E4. Probability ratios of every step across the passes of one GRPO update; rings are clipped.",
    "e5": "E5. P(LEAP) per sensor pattern before and after GRPO training.",
}


def write_report(out: Path, study: Study) -> Path:
    s = study.summary
    fin = s["final"]
    headline = [("untrained score (exact)", s["untrained"]["score"]),
                ("best possible score (256 policies)", s["ceiling"]["score"])]
    headline += [(f"{NAME[a]} final score, % of best", f"{fin[a]['score_mean']:.3f} ({fin[a]['pct_of_ceiling']:.0f}%)")
                 for a in ("grpo", "ppo", "reinforce")]
    headline += [("best possible exit rate", s["ceiling"]["exit_rate"]),
                 ("GRPO exit rate", s["e6"]["grpo"]["mean"])]
    finals = Table("Final scores on the test floors (exact; mean over training seeds)",
                   ["algorithm", "score mean", "score min", "score max", "exit mean", "% of best",
                    "updates to 90%", "Monte Carlo score (first seed)"],
                   [{"algorithm": NAME[a], "score mean": fin[a]["score_mean"], "score min": fin[a]["score_min"],
                     "score max": fin[a]["score_max"], "exit mean": fin[a]["exit_mean"],
                     "% of best": fin[a]["pct_of_ceiling"], "updates to 90%": fin[a]["updates_to_90pct"],
                     "Monte Carlo score (first seed)": fin[a]["seed0_sim"]["score"]} for a in ALGOS])
    sweep = Table("Learning-rate sensitivity (final score over the training seeds)",
                  ["run", "score mean", "score min", "score max"],
                  [{"run": k, "score mean": v["score_mean"], "score min": v["score_min"], "score max": v["score_max"]}
                   for k, v in s["lr_sensitivity"].items()])
    checks = Table("Acceptance constraints of the spec (§10), checked on this run",
                   ["kind", "id", "constraint", "holds"], study.checks)
    failed = [c["constraint"] for c in study.checks if not c["holds"]]
    notes = [f"Floor generator: tiles {FIRST}..{LAST_START} each start a channel with probability {P_CHANNEL}, "
             f"2 wide with probability {P_WIDE}; channels are separated by at least 2 safe tiles "
             "(see README.md for why)."]
    if failed:
        notes.append("This configuration breaks: " + "; ".join(failed) + ".")
    figures = [(f"{CAPTIONS[k]} ({study.charts[k]['title']})", f"assets/{FILES[k]}") for k in FILES]
    page = Page(title="Lava Leap: REINFORCE vs PPO vs GRPO, scored exactly",
                subtitle=f"{len(s['config']['seeds'])} training seeds per algorithm, {s['config']['rounds']} updates "
                         f"of {s['config']['G']} plays each; every score is an exact expectation over "
                         f"{s['config']['n_test_floors']} fixed test floors.",
                headline=headline, notes=notes, tables=[finals, sweep, checks], figures=figures)
    path = Path(out) / "index.html"
    render(path, page, s, json_name="results/summary.json")
    return path


def write_json_ordered(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def write_outputs(cfg: LavaLeapConfig, out: Path) -> Path:
    """Run the study and write everything into `out`; returns the path of index.html."""
    out = Path(out)
    with Store(out / "store") as store:
        study = run_study(cfg, store)
    write_json_ordered(out / "results" / "summary.json", study.summary)
    write_json_ordered(out / "results" / "walkthrough.json", study.walkthrough)
    write_json_ordered(out / "results" / "checks.json", study.checks)
    say("lava-leap: drawing the six charts")
    draw_all(study.charts, out / "assets")
    return write_report(out, study)


def run(req: LavaLeapRun) -> Result:
    """`policylab lava-leap run`: claim the out folder, run every experiment, write the page."""
    start = time.perf_counter()
    claim_out_dir(req.out, req.config())
    index = write_outputs(req, req.out)
    say(f"lava-leap: done in {time.perf_counter() - start:.1f} s")
    return Result(index)
