"""`boundary learn`'s report: learn.json (config, curves, timing, the nominal judgement) and
report.html with the training curves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from policylab.fileio import write_json
from policylab.learning.learner import TIMING, Learner
from policylab.report.charts import learning_curves
from policylab.report.html import Page, render

LEARN_C = "#2f6db5"
PANELS = (
    ("return_mean", "mean episode return"),
    ("length_mean", "mean episode length (control steps)"),
    ("forward_speed", "mean forward velocity (m/s, velocimeter)"),
    ("fall_rate", "falls per ended episode"),
    ("tracking_error", "velocity tracking error (m/s)"),
    ("entropy", "policy entropy (nats)"),
    ("value_loss", "value loss"),
    ("approx_kl", "approximate KL"),
    ("clip_fraction", "clip fraction"),
    ("steps_per_s", "agent steps/s (wall clock)"),
)


def write(out: Path, data: dict) -> Path:
    write_json(out / "learn.json", data)
    learning_curves(data["curves"], data["timing"], PANELS, out / "figures" / "curves.png", LEARN_C)
    j = data["nominal"]
    headline = [
        ("updates", f"{data['updates']:,}"),
        ("agent steps", f"{data['agent_steps']:,}"),
        ("episodes", f"{data['episodes']:,}"),
        ("median steps/s", f"{data['timing']['median_steps_per_s']:,.0f}"),
        ("learner time", f"{data['timing']['learner_wall_s'] / 3600:.2f} h wall"),
    ]
    notes = []
    if j is None:
        notes.append("The nominal judgement was skipped (--eval-worlds 0).")
    else:
        speed = "-" if j["speed_mps"] is None else f"{j['speed_mps']:.3f} m/s"
        headline += [
            ("nominal survival", f"{j['survived']}/{j['worlds']}"),
            (f"forward speed (command {j['command_mps']} m/s)", speed),
        ]
    if "tracking" in data:  # joystick recipes (`judge.tracking`)
        t = data["tracking"]
        headline.append(("commands followed within 20%", f"{t['tracked']} of {len(t['commands'])}"))
        notes += [
            f"Command {tuple(c['command'])}: survival {c['survival']:.0%}, mean (forward, lateral, yaw rate) "
            f"{'-' if c['achieved'][0] is None else tuple(c['achieved'])}"
            for c in t["commands"]
        ]
    page = Page(
        title=f"Boundary: a Go1 network learned with PPO ({data['config']['recipe']})",
        subtitle=(
            f"{data['agent_steps']:,} agent steps over {data['config']['envs']:,} worlds; the network "
            f"file is {data['policy_file']}"
        ),
        headline=headline,
        notes=notes,
        figures=[("Training curves (one point per update)", "figures/curves.png")],
    )
    render(out / "report.html", page, data, json_name="learn.json")
    return out / "report.html"


def build(out: Path, learner: Learner, config: dict, rerun: str, nominal: dict | None, policy_file: str) -> dict:
    timing = json.loads((out / TIMING).read_text())
    return {
        "command": "boundary learn",
        "rerun": rerun,
        "config": config,
        "network": {
            "parameters": sum(int(x.numel()) for x in learner.net.parameters()),
            "actor_parameters": sum(int(x.numel()) for x in learner.net.actor.parameters()),
        },
        "updates": learner.done,
        "agent_steps": learner.done * int(learner.cols[-1]) * learner.steps,
        "episodes": learner.episodes - int(learner.cols[-1]),
        "curves": learner.curves,
        "timing": {**timing, **learner_time(timing, int(learner.cols[-1]) * learner.steps)},
        "policy_file": policy_file,
        "nominal": nominal,
    }


def learner_time(timing: dict, per_update: int) -> dict:
    """The learner's own time over all its runs (a kill and resume counts only the updates' time): the
    median rate, wall-clock seconds, and CPU-seconds where they were kept (with how many updates they cover)."""
    cpu = [c for c in timing.get("cpu_s", []) if c is not None]
    return {
        "median_steps_per_s": float(np.median(timing["steps_per_s"])),
        "learner_wall_s": float(sum(per_update / r for r in timing["steps_per_s"])),
        "learner_cpu_s": float(sum(cpu)),
        "cpu_timed_updates": len(cpu),
    }
