"""The analysis commands of `policylab boundary`: reduce, select, replay, clips, rrd, diff, report.

An analysis folder (`--out`) holds one sweep's analysis, one stage per sub-folder, each with the
config that made it (a stage re-run with another config is refused, exit 2):

    OUT/config.json, OUT/reduce.json          reduce  (the folder's identity: store + checkpoint)
    OUT/select/selection.json                 select
    OUT/replay/replays.json                   replay
    OUT/clips/clips.json, *.mp4               clips
    OUT/rrd/rrd.json, *.rrd, *.qpos.npz       rrd     (rrd-files.json: sizes, not deterministic)
    OUT/report/report.json, report.html       report

`diff` writes its own folder (config.json, diff.json); `report` renders either kind. Every input
is checked before the first write; bad input is one line naming the field, exit status 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

from policylab.config import StrictModel, claim_out_dir, load_json_file, validated
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.progress import progress_bar, say

STORE_HELP = "Store folder of the sweep (holds index.sqlite), as written by `policylab boundary sweep`."
OUT_HELP = "Analysis folder of one sweep (reduce writes it; later stages add sub-folders)."


class ReduceConfig(StrictModel):
    store: str
    checkpoint: str
    resamples: int
    seed: int
    rule_check: bool


class SelectConfig(StrictModel):
    n_boundary: int
    n_recoveries: int


class ReplayConfig(StrictModel):
    verify: bool
    checkpoint_sha256: str | None = None


class ClipsConfig(StrictModel):
    width: int
    height: int
    fps: int


class DiffConfig(StrictModel):
    store: str
    store_b: str
    a: str
    b: str
    resamples: int
    seed: int
    q: float


def _open_store(path: Path, field: str = "store"):
    from policylab.rollout.store import Store

    if not (path / "index.sqlite").is_file():
        raise BadInput(field, f"no store at {path} (expected {path / 'index.sqlite'})")
    return Store(path)


def _need(path: Path, field: str, stage: str) -> dict:
    if not path.is_file():
        raise BadInput(field, f"{path} not found; run `policylab boundary {stage}` first")
    return load_json_file(path, field)


def _check_range(field: str, value: int | float, lo: int | float, hi: int | float) -> None:
    if not lo <= value <= hi:
        raise BadInput(field, f"{value} is outside [{lo}, {hi}]")


def _reduce(store_path: Path, checkpoint: str, resamples: int, seed: int, rule_check: bool) -> dict:
    from policylab.studies.boundary.reduce import load_sweep, reduce_sweep

    store = _open_store(store_path)
    try:
        sweep = load_sweep(store, checkpoint)
        return reduce_sweep(store, sweep, resamples=resamples, seed=seed, check_rule=rule_check)
    finally:
        store.close()


def reduce(
    store: Path = typer.Option(..., help=STORE_HELP),
    checkpoint: str = typer.Option(..., help="Name of the checkpoint whose sweep to reduce (e.g. ant_v0); the "
                                             "grid comes from the sweep's record in the store."),
    out: Path = typer.Option(..., help=OUT_HELP),
    resamples: int = typer.Option(2000, help="Bootstrap resamples for each row's boundary interval."),
    seed: int = typer.Option(0, help="Seed of the bootstrap generator (with the row index)."),
    rule_check: bool = typer.Option(True, help="Re-apply the frozen failure rule to every stored track and "
                                               "count agreement with the records."),
) -> None:
    """Kaplan-Meier survival per cell, danger heatmap data and the per-row boundary with bootstrap CI."""
    _check_range("resamples", resamples, 100, 100_000)
    cfg = validated(ReduceConfig, {"store": str(store.resolve()), "checkpoint": checkpoint, "resamples": resamples,
                                   "seed": seed, "rule_check": rule_check})
    result = _reduce(store.resolve(), checkpoint, resamples, seed, rule_check)
    claim_out_dir(out, cfg.model_dump())
    write_json(out / "reduce.json", result)
    rc = result["rule_check"]
    g = result["sweep"]["grid"]
    say(f"reduce {checkpoint}: {len(g['mus'])} x {len(g['pushes_pct_bw'])} cells x {g['seeds_per_cell']} seeds")
    say(f"rule check: {rc.get('agree', 0)}/{rc.get('checked', 0)} records agree with the frozen rule")
    typer.echo(str(out / "reduce.json"))


def select(
    out: Path = typer.Option(..., help=OUT_HELP),
    n_boundary: int = typer.Option(15, help="How many boundary cells to replay (round-robin over friction rows)."),
    n_recoveries: int = typer.Option(3, help="How many recovery cells (3/16 <= S <= 0.5, one per cell)."),
) -> None:
    """Choose the boundary cells and recoveries to replay from the reduction."""
    from policylab.studies.boundary.select import select as choose

    _check_range("n_boundary", n_boundary, 0, 1000)
    _check_range("n_recoveries", n_recoveries, 0, 1000)
    reduction = _need(out / "reduce.json", "out", "reduce")
    cfg = validated(SelectConfig, {"n_boundary": n_boundary, "n_recoveries": n_recoveries})
    selection = choose(reduction, n_boundary=n_boundary, n_recoveries=n_recoveries)
    claim_out_dir(out / "select", cfg.model_dump())
    write_json(out / "select" / "selection.json", selection)
    say(f"selected {len(selection['boundary_cells'])} boundary cells, {len(selection['recoveries'])} recoveries, "
        f"{len(selection['divergences'])} divergences")
    typer.echo(str(out / "select" / "selection.json"))


def _resimulator(spec: str, sha256: str):
    """Re-simulation for the equivalence check, with the checkpoint the records were made with
    (`spec`: committed name or .npz path; its sha256 must equal the sweep's)."""
    from policylab.studies.boundary import sweep
    from policylab.studies.boundary.world import World

    ckpt = sweep.resolve_checkpoint(spec)
    if ckpt.sha256 != sha256:
        raise BadInput("checkpoint", f"{spec} (sha256 {ckpt.sha256[:12]}) is not the checkpoint of this sweep "
                       f"(sha256 {sha256[:12]})")

    def resimulate(records: list[dict]) -> list[dict]:
        worlds = [World(r["world"]["mu"], r["world"]["push_pct"], r["world"]["push_dir"], r["world"]["push_t0"],
                        r["world"]["seed"]) for r in records]
        return [payload for _, payload in sweep.simulate_worlds(str(ckpt.path), worlds, nthread=2)]

    return resimulate


def replay(
    out: Path = typer.Option(..., help=OUT_HELP),
    verify: bool = typer.Option(True, help="Equivalence check: simulate each replayed world again and compare it "
                                           "bitwise with its record (outcomes still come from the record)."),
    checkpoint: str = typer.Option(None, help="For --verify: the checkpoint (committed name or .npz path) the sweep "
                                              "was made with; default: the sweep's checkpoint name."),
) -> None:
    """The replay batch: selected worlds read from the store; recovery cells searched for a survivor."""
    from policylab.studies.boundary.replay import replay_batch

    config = _need(out / "config.json", "out", "reduce")
    reduction = _need(out / "reduce.json", "out", "reduce")
    selection = _need(out / "select" / "selection.json", "out", "select")
    sha = reduction["sweep"]["checkpoint_sha256"]
    resim = _resimulator(checkpoint or config["checkpoint"], sha) if verify else None
    cfg = validated(ReplayConfig, {"verify": verify, "checkpoint_sha256": sha if verify else None})
    store = _open_store(Path(config["store"]))
    try:
        result = replay_batch(store, selection, resim)
    finally:
        store.close()
    claim_out_dir(out / "replay", cfg.model_dump())
    write_json(out / "replay" / "replays.json", result)
    eq = result["equivalence_summary"]
    say(f"replays: {len(result['replays'])}; equivalence {eq['bitwise_equal']}/{eq['checked']} bitwise equal")
    typer.echo(str(out / "replay" / "replays.json"))


def _render_model():
    import mujoco

    from policylab.envs import ant

    return mujoco.MjModel.from_xml_path(ant.xml_path())  # a private copy: the renderer sizes its buffer


def clips(
    out: Path = typer.Option(..., help=OUT_HELP),
    width: int = typer.Option(320, help="Width of each of the three camera views, pixels."),
    height: int = typer.Option(240, help="Height of each view, pixels."),
    fps: int = typer.Option(20, help="Frames per second of the mp4 (20 = real time at the 0.05 s control rate)."),
) -> None:
    """Render an mp4 of every replay from its stored qpos (never a new simulation)."""
    from policylab.studies.boundary.clips import render_clips

    _check_range("width", width, 32, 1920)
    _check_range("height", height, 32, 1080)
    _check_range("fps", fps, 1, 120)
    config = _need(out / "config.json", "out", "reduce")
    replays = _need(out / "replay" / "replays.json", "out", "replay")
    store = _open_store(Path(config["store"]))
    cfg = validated(ClipsConfig, {"width": width, "height": height, "fps": fps})
    claim_out_dir(out / "clips", cfg.model_dump())
    try:
        todo = [r for r in replays["replays"] if "key" in r]
        with progress_bar("clips", len(todo), "clips") as bar:
            entries = render_clips(store, _render_model(), todo, out / "clips", width=width, height=height, fps=fps,
                                   on_done=bar.advance)
    finally:
        store.close()
    write_json(out / "clips" / "clips.json", entries)
    bad = [e["file"] for e in entries if not e["consistent"]]
    say(f"clips: {len(entries)} written; frames agree with the record's outcome in {len(entries) - len(bad)}")
    typer.echo(str(out / "clips" / "clips.json"))


def rrd(out: Path = typer.Option(..., help=OUT_HELP)) -> None:
    """Export every replay as a rerun .rrd (plus its qpos.npz) from the stored trajectory."""
    from policylab.studies.boundary.clips import slug
    from policylab.studies.boundary.rrd import export_rrd

    config = _need(out / "config.json", "out", "reduce")
    replays = _need(out / "replay" / "replays.json", "out", "replay")
    store = _open_store(Path(config["store"]))
    claim_out_dir(out / "rrd", {"format": "rerun-sdk .rrd"})
    try:
        todo = [r for r in replays["replays"] if "key" in r]
        model = _render_model()
        files = []
        with progress_bar("rrd", len(todo), "files") as bar:
            for r in todo:
                files.append(export_rrd(store, model, r["key"], out / "rrd" / f"{slug(r['cache_key'])}.rrd"))
                bar.advance()
    finally:
        store.close()
    write_json(out / "rrd" / "rrd.json", [{k: v for k, v in f.items() if k != "rrd_bytes"} for f in files])
    write_json(out / "rrd" / "rrd-files.json", {"note": "rerun writes ids into .rrd files: sizes vary run to run",
                                                "files": {f["rrd_file"]: f["rrd_bytes"] for f in files}})
    typer.echo(str(out / "rrd" / "rrd.json"))


def diff(
    store: Path = typer.Option(..., help=STORE_HELP + " Holds sweep A (and B unless --store-b is given)."),
    a: str = typer.Option(..., help="Checkpoint A (before), e.g. the original policy."),
    b: str = typer.Option(..., help="Checkpoint B (after the retrain)."),
    out: Path = typer.Option(..., help="Folder for diff.json (then `policylab boundary report --out` it)."),
    store_b: Path = typer.Option(None, help="Store holding sweep B, when it is not --store."),
    resamples: int = typer.Option(2000, help="Bootstrap resamples for each row's boundary interval."),
    seed: int = typer.Option(0, help="Seed of the bootstrap generator."),
    q: float = typer.Option(0.05, help="Benjamini-Hochberg false-discovery rate."),
) -> None:
    """Cell-by-cell diff of two checkpoints' sweeps: Fisher exact + BH, boundary shift, shrinkage census."""
    from policylab.studies.boundary.diff import diff_reductions

    _check_range("resamples", resamples, 100, 100_000)
    _check_range("q", q, 1e-6, 0.5)
    if a == b:
        raise BadInput("b", "checkpoints A and B are the same")
    sb = (store_b or store).resolve()
    cfg = validated(DiffConfig, {"store": str(store.resolve()), "store_b": str(sb), "a": a, "b": b,
                                 "resamples": resamples, "seed": seed, "q": q})
    ra = _reduce(store.resolve(), a, resamples, seed, False)
    rb = _reduce(sb, b, resamples, seed, False)
    result = diff_reductions(ra, rb, q=q)
    claim_out_dir(out, cfg.model_dump())
    write_json(out / "diff.json", result)
    s = result["summary"]
    say(f"diff {a} -> {b}: {s['safer']} cells safer, {s['worse']} worse (shrinkage), {s['unchanged']} unchanged")
    typer.echo(str(out / "diff.json"))


def report(out: Path = typer.Option(..., help="An analysis folder (after reduce) or a diff folder.")) -> None:
    """Write report.json and report.html (heatmaps, boundary curves, replays and clips) into OUT/report."""
    from policylab.studies.boundary.report import diff_report, sweep_report

    if (out / "diff.json").is_file():
        d = load_json_file(out / "diff.json", "out")
        claim_out_dir(out / "report", {"kind": "diff"})
        typer.echo(str(diff_report(out / "report", d)))
        return
    reduction = _need(out / "reduce.json", "out", "reduce")
    optional = {name: load_json_file(out / name, "out") if (out / name).is_file() else None
                for name in ("select/selection.json", "replay/replays.json", "clips/clips.json", "rrd/rrd.json")}
    claim_out_dir(out / "report", {"kind": "sweep"})
    typer.echo(str(sweep_report(out / "report", reduction, optional["select/selection.json"],
                                optional["replay/replays.json"], optional["clips/clips.json"],
                                optional["rrd/rrd.json"])))
