"""The learner's report: learn.json (config, curves, the validation on ALE) and report.html with the
training curves (mean return, episode length, entropy, value loss, steps/s per update) and then the
validation section (the learned network on fresh ALE seeds against v3 and the search pick)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from policylab.fileio import write_json
from policylab.learning.learner import TIMING
from policylab.report.charts import learning_curves
from policylab.report.html import Page, render
from policylab.result import command_line
from policylab.studies.breakout.learn import transfer
from policylab.studies.breakout.learn.learner import Learner
from policylab.studies.breakout.learn.plan import Plan

LEARN_C = "#2f6db5"
PANELS = (
    ("return_mean", "mean episode score (raw points)"),
    ("length_mean", "mean episode length (agent steps)"),
    ("entropy", "policy entropy (nats)"),
    ("value_loss", "value loss"),
    ("approx_kl", "approximate KL per update"),
    ("steps_per_s", "agent steps/s (wall clock)"),
)


def write_learn_report(out: Path, data: dict) -> Path:
    write_json(out / "learn.json", data)
    learning_curves(data["curves"], data["timing"], PANELS, out / "figures" / "curves.png", LEARN_C)
    v = data["validation"]
    headline = [
        ("updates", f"{data['updates']:,}"),
        ("agent steps", f"{data['agent_steps']:,}"),
        ("episodes", f"{data['episodes']:,}"),
        ("final shadow return (last 10 updates)", data["final_return_mean"]),
        ("median steps/s", f"{data['timing']['median_steps_per_s']:,.0f}"),
    ]
    tables, figures, notes = [], [("Training curves (one point per update)", "figures/curves.png")], []
    if v is None:
        notes.append("Validation on ALE skipped (--validate-episodes 0).")
    else:
        section = transfer.section(v)
        headline += section.headline
        notes += section.notes
        tables += section.tables
        transfer.gap_chart(v, out / "figures" / "transfer_gap.png")
        figures.append(("Transfer gap: shadow vs ALE mean per policy (95% intervals)", "figures/transfer_gap.png"))
    page = Page(
        title="Breakout: a network learned in the shadow",
        subtitle=(
            f"PPO on {data['config']['preset']}, {data['agent_steps']:,} agent steps over "
            f"{data['config']['envs']:,} envs; the network file is {data['policy_file']}"
        ),
        headline=headline,
        notes=notes,
        tables=tables,
        figures=figures,
    )
    render(out / "report.html", page, data, json_name="learn.json")
    return out / "report.html"


def build_report(p: Plan, learner: Learner, validation: dict | None) -> dict:
    """learn.json: the run's config, its curves and the validation; timings in their own section. Its
    `rerun` line (the options that differ from their defaults) also resumes the run."""
    c = learner.curves
    finite = [v for v in c["return_mean"][-10:] if v is not None]
    timing = json.loads((p.req.out / TIMING).read_text())
    return {
        "command": "breakout learn",
        "rerun": command_line("policylab breakout learn", p.req),
        "config": p.config,
        "observation": {"history": p.spec.history, "wall": p.spec.wall, "dim": p.spec.dim},
        "network": {
            "hidden": p.req.hidden,
            "layers": p.req.layers,
            "parameters": sum(int(x.numel()) for x in learner.net.parameters()),
        },
        "updates": learner.done,
        "agent_steps": learner.done * p.req.envs * p.rollout,
        "episodes": learner.episodes - p.req.envs,
        "final_return_mean": float(np.mean(finite)) if finite else None,
        "curves": c,
        "timing": {**timing, "median_steps_per_s": float(np.median(timing["steps_per_s"]))},
        "policy_file": "policy.onnx",
        "validation": validation,
    }
