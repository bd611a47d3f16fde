"""`policylab breakout ...`: the Breakout sim-to-real study's commands (options from their request models
in `policylab.studies.breakout.requests`), each with what the runs index shows of its run folder."""

from __future__ import annotations

import typer

from policylab.cli.command import command
from policylab.report.run_kinds import RunKind, at
from policylab.studies.breakout import requests

app = typer.Typer(
    help="Breakout sim-to-real: the shadow simulator vs real Atari Breakout (ALE).",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: long option names wrap instead of being cut at 80 columns
)

command(
    app,
    "eval",
    requests.EvalRequest,
    "policylab.studies.breakout.episodes.eval:run",
    index=RunKind(
        "breakout",
        "breakout eval",
        "report.json",
        ("report.html",),
        ("env", "policy", "episodes", "seed", "protocol.max_steps", "preset"),
        (
            ("policy", "measured.policy"),
            ("mean score on {measured.env}", "distribution.mean"),
            ("95% CI", "distribution.mean_ci95"),
            ("low scores", "distribution.low_score_count"),
        ),
    ),
)
command(
    app,
    "audit",
    requests.AuditRequest,
    "policylab.studies.breakout.audit.audit:run",
    index=RunKind(
        "breakout",
        "breakout audit",
        "audit.json",
        ("audit.html",),
        ("policy", "episodes", "seed", "protocol.max_steps", "preset", "candidates"),
        (
            ("shadow mean", "comparison.shadow.score.mean"),
            ("ALE mean", "comparison.ale.score.mean"),
            ("Spearman shadow vs ALE", "rank_correlation.spearman"),
        ),
        at("decision.primary_failure_class", "primary gap: {}"),
    ),
)
command(
    app,
    "train",
    requests.TrainRequest,
    "policylab.studies.breakout.search.train:run",
    index=RunKind(
        "breakout",
        "breakout train",
        "report.json",
        ("report.html",),
        ("space", "search_env", "preset", "screen_top", "validate_episodes", "protocol.max_steps"),
        (
            (
                "pick mean on {evaluation.paired_delta.n} {evaluation.winners_curse.validation_env} seeds",
                "evaluation.new_policy.mean",
            ),
            ("baseline mean on the same seeds", "evaluation.baseline_policy.mean"),
            ("paired delta", "evaluation.paired_delta.mean_delta"),
            ("delta 95% CI", "evaluation.paired_delta.ci95"),
        ),
        at("decision.verdict", "pick vs baseline: {}"),
    ),
)
command(
    app,
    "transfer",
    requests.TransferRequest,
    "policylab.studies.breakout.learn.transfer:run",
    index=RunKind(
        "breakout",
        "breakout transfer",
        "transfer.json",
        ("transfer.html",),
        ("policy", "episodes", "gap_episodes", "preset", "protocol.max_steps"),
        (
            ("network mean on {validation.env}", "validation.distributions.network.mean"),
            ("95% CI", "validation.distributions.network.mean_ci95"),
            ("vs search pick", "validation.comparisons.pick.verdict"),
            ("shadow/ALE", "goals.ratio"),
        ),
        at("validation.comparisons.v3.verdict", "vs v3: {}"),
    ),
)
command(
    app,
    "learn",
    requests.LearnRequest,
    "policylab.studies.breakout.learn.learn:run",
    index=RunKind(
        "breakout",
        "breakout learn",
        "learn.json",
        ("report.html",),
        ("steps", "envs", "hidden", "preset", "validate_episodes", "protocol.max_steps"),
        (
            ("network mean on {validation.validation.env}", "validation.validation.distributions.network.mean"),
            ("95% CI", "validation.validation.distributions.network.mean_ci95"),
            ("final training return", "final_return_mean"),
            ("updates", "updates"),
        ),
        at("validation.validation.comparisons.v3.verdict", "vs v3: {}"),
    ),
)
command(
    app,
    "trace",
    requests.TraceRequest,
    "policylab.studies.breakout.fidelity.trace:run",
    index=RunKind("breakout", "breakout trace", "traces.json", (), ("scenarios",), (("traces", ""),)),
)
command(
    app,
    "lockstep",
    requests.LockstepRequest,
    "policylab.studies.breakout.fidelity.lockstep:run",
    index=RunKind(
        "breakout",
        "breakout lockstep",
        "lockstep.json",
        ("report.html",),
        ("policy", "episodes", "seed", "max_steps", "preset"),
        (
            ("identical to the end", "summary.identical_to_end"),
            ("episodes", "summary.episodes"),
            ("screens identical", "summary.screen_identical_fraction"),
            ("median first divergence", "summary.median_first_divergence_frame"),
        ),
    ),
)
command(
    app,
    "calibrate",
    requests.CalibrateRequest,
    "policylab.studies.breakout.fidelity.calibration.calibrate:run",
    index=RunKind(
        "breakout",
        "breakout calibrate",
        "calibration.json",
        ("calibration.html",),
        ("base", "traces"),
        (
            ("objective before", "before.objective"),
            ("objective after", "after.objective"),
            ("changes kept", "accepted"),
            ("changes rejected", "rejected"),
        ),
    ),
)
