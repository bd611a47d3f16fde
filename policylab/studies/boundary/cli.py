"""`policylab boundary ...`: where a frozen Ant walking policy falls over a friction x push grid.

Commands are plain functions in their own modules, mounted here one line each, so adding a stage
(reduce, select, replay, clips, rrd, diff, report) is one `app.command(...)(...)` line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from policylab.errors import BadInput
from policylab.progress import say

app = typer.Typer(
    help="Failure boundary of a legged MuJoCo policy (Gymnasium's Ant): train, sweep a friction x push "
    "grid into the store, verify it by re-simulation.",
    no_args_is_help=True,
)


def _pair(text: str, field: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise BadInput(field, f"{text!r} is not a range like 0.05,1.00") from None
    return lo, hi


def train_cmd(
    config: str = typer.Option("v0", help="Training config: v0 (nominal worlds) or v1 (low friction and "
                               "lateral pushes during training)."),
    out_dir: Path = typer.Option(None, help="Folder for <name>.npz/.json (default: the committed checkpoints folder)."),
    iterations: Optional[int] = typer.Option(None, help="Override the config's ARS iterations (for quick trials)."),
    threads: int = typer.Option(2, help="Simulation threads."),
) -> None:
    """Train the linear Ant policy with seeded ARS and write the checkpoint."""
    from policylab.studies.boundary import train

    if config not in train.CONFIGS:
        raise BadInput("config", f"unknown config {config!r}; expected one of {', '.join(train.CONFIGS)}")
    if iterations is not None and iterations < 1:
        raise BadInput("iterations", "must be at least 1")
    if threads < 1:
        raise BadInput("threads", "must be at least 1")
    cfg = train.CONFIGS[config]
    if iterations is not None:
        cfg = cfg.model_copy(update={"iterations": iterations})
    path = train.train_and_save(cfg, out_dir or train.CHECKPOINT_DIR, nthread=threads)
    print(path)


def sweep_cmd(
    checkpoint: str = typer.Option("ant_v0", help="Committed checkpoint name (ant_v0, ant_v1) or a .npz path."),
    mu_range: str = typer.Option("0.05,1.00", help="Friction range lo,hi (clamp 0.05-2.0, resolution 0.01)."),
    n_mu: int = typer.Option(20, help="Number of friction values, evenly spaced in --mu-range."),
    push_range: str = typer.Option("10,200", help="Push range lo,hi in %% bodyweight (clamp 0-300, resolution 1)."),
    n_push: int = typer.Option(20, help="Number of push magnitudes, evenly spaced in --push-range."),
    seeds_per_cell: int = typer.Option(16, help="Seeds per (friction, push) cell."),
    push_dir: float = typer.Option(90.0, help="Push direction in degrees from the heading at onset (90 = left)."),
    push_t0: float = typer.Option(2.0, help="Push start in seconds (clamp 0.5-4.0, resolution 0.1); lasts 0.5 s."),
    store: Path = typer.Option(Path("runs/boundary/store"), help="Store folder (the canonical record)."),
    out: Optional[Path] = typer.Option(None, help="Folder for sweep.json and timing.json "
                                       "(default runs/boundary/sweep-<checkpoint>)."),
    executor: str = typer.Option("local", help="local (threads in this process), processes, or ray."),
    chunk: int = typer.Option(400, help="Worlds per task; the store is written after each chunk."),
    threads: Optional[int] = typer.Option(None, help="Simulation threads per task (default 2 local, 1 otherwise)."),
    workers: Optional[int] = typer.Option(None, help="Parallel tasks for processes/ray (default: CPU count)."),
    ray_address: Optional[str] = typer.Option(None, help="Address of an existing Ray cluster (executor ray)."),
) -> None:
    """Play the checkpoint in every world of the grid; each rollout becomes a store record (resumable)."""
    from policylab.studies.boundary import sweep
    from policylab.studies.boundary.world import Grid

    ckpt = sweep.resolve_checkpoint(checkpoint)
    grid = Grid.build(_pair(mu_range, "mu_range"), n_mu, _pair(push_range, "push_range"), n_push,
                      seeds_per_cell, push_dir, push_t0)
    if threads is not None and threads < 1:
        raise BadInput("threads", "must be at least 1")
    if workers is not None and workers < 1:
        raise BadInput("workers", "must be at least 1")
    out = out or Path("runs/boundary") / f"sweep-{ckpt.name}"
    result = sweep.run_sweep(grid, ckpt, store, out, executor=executor, chunk=chunk, threads=threads,
                             workers=workers, ray_address=ray_address)
    c, t = result["counts"], result["timing"]
    say(f"{ckpt.name}: survived {c['survived']}, failed {c['failed']}, diverged {c['diverged']}, "
        f"missing {c['missing']}; {t['rollouts_run']} run in {t['wall_s']:.1f} s")
    print(out / "sweep.json")


def verify_cmd(
    checkpoint: str = typer.Option("ant_v0", help="Checkpoint whose stored sweep is re-simulated."),
    store: Path = typer.Option(Path("runs/boundary/store"), help="Store folder holding the sweep."),
    sample: int = typer.Option(32, help="Number of stored worlds to re-simulate (evenly spread, deterministic)."),
    out: Optional[Path] = typer.Option(None, help="Folder for equivalence.json (default runs/boundary/verify-<checkpoint>)."),
) -> None:
    """Equivalence gate: re-simulate stored worlds and compare bitwise with their records."""
    from policylab.studies.boundary import sweep, verify

    ckpt = sweep.resolve_checkpoint(checkpoint)
    out = out or Path("runs/boundary") / f"verify-{ckpt.name}"
    report = verify.run_verify(ckpt, store, sample, out)
    say(f"equivalence {ckpt.name}: {report['agreement']['identical']}/{report['agreement']['n']} identical "
        f"({report['agreement']['rate']:.0%}); gate {'PASS' if report['passed'] else 'FAIL'}")
    print(out / "equivalence.json")
    if not report["passed"]:
        raise typer.Exit(1)


def calibrate_cmd(
    checkpoint: str = typer.Option("ant_v0", help="Checkpoint to calibrate the failure thresholds with."),
    n_nominal: int = typer.Option(256, help="Nominal worlds (friction 1.0, no push)."),
    n_pushed: int = typer.Option(16, help="Worlds per hard-push corner (mu 0.05/0.5/1.0 x push 50-200 %BW)."),
    out: Path = typer.Option(Path("runs/boundary/calibration"), help="Folder for calibration.json."),
) -> None:
    """The data behind the frozen failure thresholds: nominal minima and the poses of toppled robots."""
    from policylab.studies.boundary import calibrate, sweep

    if n_nominal < 1 or n_pushed < 1:
        raise BadInput("n_nominal" if n_nominal < 1 else "n_pushed", "must be at least 1")
    ckpt = sweep.resolve_checkpoint(checkpoint)
    calibrate.calibrate(ckpt, n_nominal, n_pushed, out)
    print(out / "calibration.json")


# Mounted commands: one line per stage (other stages add their line here).
app.command("train")(train_cmd)
app.command("calibrate")(calibrate_cmd)
app.command("sweep")(sweep_cmd)
app.command("verify")(verify_cmd)

# Analysis stages (policylab/studies/boundary/commands_analysis.py): read the store, never re-decide outcomes.
from policylab.studies.boundary import commands_analysis as analysis  # noqa: E402

app.command("reduce")(analysis.reduce)
app.command("select")(analysis.select)
app.command("replay")(analysis.replay)
app.command("clips")(analysis.clips)
app.command("rrd")(analysis.rrd)
app.command("diff")(analysis.diff)
app.command("report")(analysis.report)
