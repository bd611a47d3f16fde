"""`policylab breakout ...`: evaluate a policy on real ALE Breakout or the shadow simulator, and
audit the gap between the two on the same seeds."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    help="Breakout sim-to-real: the shadow simulator vs real Atari Breakout (ALE).",
    no_args_is_help=True,
)


class Env(str, Enum):
    ale = "ale"
    shadow = "shadow"


class Serve(str, Enum):
    auto = "auto"
    never = "never"


class Executor(str, Enum):
    local = "local"
    processes = "processes"
    ray = "ray"


POLICY_HELP = "Policy name: breakout_policy_v3, breakout_policy_planner_v1 or breakout_policy_training_v1."
PARAMS_HELP = ("JSON file with the policy's full parameter set (every field, in range; a 'policy_' prefix is "
               "accepted); default: the policy's own defaults.")
EPISODES_HELP = "Number of episodes (> 0); episode i runs on seed S+i."
SEED_HELP = "First seed S (>= 0)."
MAX_STEPS_HELP = "Horizon in agent steps (the original used 1800)."
PRESET_HELP = "Shadow-simulator preset: go-v1 (the original Go simulator), atari, or a preset .json file."
STICKY_HELP = ("Sticky-action probability. ALE's default is 0.25 (repeat_action_probability); given explicitly it "
               "also overrides the shadow preset's own value.")
SERVE_HELP = ("auto: FIRE whenever no ball is in play (every life is played); never: only the first ball is "
              "served (the original's one-ball Atari episodes).")
STORE_HELP = "Rollout store folder (default OUT/store); episodes whose key is present are not run again."
EXECUTOR_HELP = "Where episodes run: local (this process), processes (a process pool) or ray."


@app.command("eval")
def eval_cmd(
    env: Env = typer.Option(..., "--env", help="Environment: ale (real Atari Breakout) or shadow (the fast simulator)."),
    policy: str = typer.Option(..., "--policy", help=POLICY_HELP),
    params: Optional[Path] = typer.Option(None, "--params", help=PARAMS_HELP),
    episodes: int = typer.Option(..., "--episodes", help=EPISODES_HELP),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    max_steps: int = typer.Option(1800, "--max-steps", help=MAX_STEPS_HELP),
    out: Path = typer.Option(..., "--out", help="Output folder (new, or holding a run of this same config)."),
    preset: str = typer.Option("go-v1", "--preset", help=PRESET_HELP + " Used with --env shadow."),
    sticky: Optional[float] = typer.Option(None, "--sticky", help=STICKY_HELP),
    serve: Serve = typer.Option(Serve.auto, "--serve", help=SERVE_HELP),
    video: bool = typer.Option(False, "--video", help="Also write an mp4 of episode 0 (every 2nd agent step)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    executor: Executor = typer.Option(Executor.local, "--executor", help=EXECUTOR_HELP),
) -> None:
    """Run a policy for N seeded episodes; write episodes.jsonl, replays/, report.json and report.html."""
    from policylab.studies.breakout.eval import EvalRequest, run_eval

    report = run_eval(EvalRequest(env.value, policy, params, episodes, seed, max_steps, out, store, preset,
                                  sticky, serve.value, video, executor.value))
    typer.echo(f"report: {report}")


@app.command("audit")
def audit_cmd(
    policy: str = typer.Option(..., "--policy", help=POLICY_HELP),
    params: Optional[Path] = typer.Option(None, "--params", help=PARAMS_HELP),
    episodes: int = typer.Option(6, "--episodes", help=EPISODES_HELP),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    max_steps: int = typer.Option(1800, "--max-steps", help=MAX_STEPS_HELP),
    out: Path = typer.Option(..., "--out", help="Output folder (new, or holding a run of this same config)."),
    preset: str = typer.Option("go-v1", "--preset", help=PRESET_HELP),
    candidates: Optional[Path] = typer.Option(
        None, "--candidates",
        help="JSON list of {candidate_id, params}: each candidate runs on both envs, plus ALE on a disjoint seed "
             "set, for the shadow-vs-ALE rank correlation and its noise ceiling."),
    sticky: Optional[float] = typer.Option(None, "--sticky", help=STICKY_HELP),
    serve: Serve = typer.Option(Serve.auto, "--serve", help=SERVE_HELP),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    executor: Executor = typer.Option(Executor.local, "--executor", help=EXECUTOR_HELP),
    compare_preset: Optional[str] = typer.Option(
        None, "--compare-preset",
        help="A second shadow preset (e.g. atari, before calibration) played on the same candidates and seeds; "
             "audit.json's `compare` section shows both presets' rank correlation, score ratios and feature "
             "gaps side by side (needs --candidates)."),
) -> None:
    """Run a policy on both envs on the same seeds; write audit.json and audit.html (gaps + decision)."""
    from policylab.studies.breakout.audit import AuditRequest, run_audit

    report = run_audit(AuditRequest(policy, params, episodes, seed, max_steps, out, store, preset, sticky,
                                    serve.value, candidates, executor.value, compare_preset))
    typer.echo(f"report: {report}")


# The training loop lives in its own module; it is mounted here beside eval and audit.
from policylab.studies.breakout.train_cli import train_cmd  # noqa: E402

app.command("train")(train_cmd)


@app.command("trace")
def trace_cmd(
    out: Path = typer.Option(..., "--out", help="Folder for the trace .npz files (one per scenario) and traces.json."),
    scenario: list[str] = typer.Option(
        ["all"], "--scenario",
        help="Scenario name (repeatable) from the standard suite: paddle_holds, paddle_alternate, noop_serves, "
             "random_holds_a/b, policy_* (see policylab/studies/breakout/trace.py), or 'all'."),
) -> None:
    """Record frame-level ALE traces (per-frame action + full RAM) for system identification."""
    from policylab.studies.breakout.trace_cli import run_trace

    typer.echo(f"traces: {run_trace(out, scenario)}")


@app.command("calibrate")
def calibrate_cmd(
    out: Path = typer.Option(..., "--out", help="Output folder: preset.json, calibration.json, calibration.html."),
    traces: Optional[Path] = typer.Option(
        None, "--traces", help="Folder of trace .npz files (default: the committed suite in "
                               "policylab/studies/breakout/traces)."),
    base: str = typer.Option("atari", "--base", help="Preset the fit starts from (name or .json)."),
    write_preset: bool = typer.Option(
        False, "--write-preset/--no-write-preset",
        help="Also write policylab/envs/presets/breakout_atari-cal.json (what the project ships)."),
) -> None:
    """Fit the shadow simulator to the ALE traces; write the calibrated preset and the calibration report."""
    from policylab.studies.breakout.calibrate import run_calibrate

    typer.echo(f"report: {run_calibrate(out, traces, base, write_preset)}")
