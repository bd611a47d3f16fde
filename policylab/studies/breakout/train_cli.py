"""`policylab breakout train`: the command-line face of `policylab.studies.breakout.train`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from policylab.rollout.seeds import seed_range_base
from policylab.studies.breakout.selection import DEFAULT_RULE
from policylab.studies.breakout.train import DEFAULT_PRESET


def train_cmd(
    out: Path = typer.Option(..., "--out", help="Output folder (new, or holding a run of this same config)."),
    space: str = typer.Option("grid216", "--space", help="Search space: grid216 (216 documented grid points "
                              "c000-c215), random (uniform over the v3 ranges) or tpe (Optuna TPE)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Number of candidates for random and tpe."),
    space_seed: int = typer.Option(0, "--space-seed", help="Seed of the random / TPE proposals."),
    search_env: str = typer.Option("shadow", "--search-env", help="Where candidates are searched: shadow "
                                   "(the fast simulator) or ale."),
    preset: str = typer.Option(DEFAULT_PRESET, "--preset", help="Shadow preset for the search: atari-cal (the "
                               "calibrated default), atari, go-v1, or a preset .json file."),
    search_seeds: str = typer.Option("0-5", "--search-seeds", help="Seeds every candidate is scored on in the "
                                     "search env, e.g. 0-5 or 0,3,9."),
    select: str = typer.Option(DEFAULT_RULE, "--select", help="Selection rule: 'FIELD asc|desc, ...' with FIELD "
                               "among low_score_count, score_min, score_max, score_mean, score_median, score_stdev."),
    screen_top: Optional[int] = typer.Option(None, "--screen-top", help="Multi-fidelity: re-play the top K "
                                             "search candidates on ALE and pick among them on ALE."),
    screen_episodes: int = typer.Option(5, "--screen-episodes", help="ALE episodes per screened candidate."),
    screen_seed: int = typer.Option(seed_range_base("breakout", "screening"), "--screen-seed",
                                    help="First ALE screening seed."),
    validate_episodes: int = typer.Option(20, "--validate-episodes", help="Fresh ALE seeds for validating the "
                                          "pick against the baseline (paired by seed)."),
    validate_seed: int = typer.Option(seed_range_base("breakout", "validation"), "--validate-seed",
                                      help="First validation seed; must not overlap the search or "
                                           "screening seeds."),
    baseline: str = typer.Option("breakout_policy_v3", "--baseline", help="Baseline policy (with its defaults)."),
    max_steps: int = typer.Option(1800, "--max-steps", help="Horizon in agent steps, on both envs."),
    sticky: Optional[float] = typer.Option(None, "--sticky", help="Sticky-action probability on ALE (default "
                                           "0.25); given explicitly it also overrides the shadow preset's."),
    serve: str = typer.Option("auto", "--serve", help="auto (FIRE whenever no ball is in play) or never."),
    video: bool = typer.Option(True, "--video/--no-video", help="mp4 of the pick on ALE (validation seed 0)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Rollout store (default OUT/store); stored "
                                         "rollouts are not run again, so a killed run resumes."),
    executor: str = typer.Option("local", "--executor", help="local, processes (a process pool) or ray."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Address of an existing Ray "
                                              "cluster (with --executor ray); default: a local Ray."),
) -> None:
    """Search v3-family parameters in the search env, validate the pick on ALE, give a verdict."""
    from policylab.studies.breakout.train import TrainRequest, run_train

    report = run_train(TrainRequest(
        out=out, space=space, budget=budget, space_seed=space_seed, search_env=search_env, preset=preset,
        search_seeds=search_seeds, select=select, screen_top=screen_top, screen_episodes=screen_episodes,
        screen_seed=screen_seed, validate_episodes=validate_episodes, validate_seed=validate_seed,
        baseline=baseline, max_steps=max_steps, sticky=sticky, serve=serve, video=video, store=store,
        executor=executor, ray_address=ray_address))
    typer.echo(f"report: {report}")
