"""What the probe page shows of a store, and how a world asked for in the page becomes a planned rollout.

Reads the store, never writes it; a world of a stored sweep's grid gets that sweep's record and key."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from policylab.errors import BadInput
from policylab.policies.files import SUFFIXES
from policylab.rollout.ensure import Planned
from policylab.rollout.seeds import named_range
from policylab.rollout.store import Store
from policylab.studies.boundary import gate
from policylab.studies.boundary.axes import CATALOGUE
from policylab.studies.boundary.checkpoint import Checkpoint, checkpoint_on, policy_record
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.kept_files import kept_policy
from policylab.studies.boundary.protocol import protocol
from policylab.studies.boundary.records import (
    STUDY,
    grid_from_meta,
    meta_name,
    planned_sweep,
    robot_from_meta,
    world_record,
)
from policylab.studies.boundary.requests import ProbeRunForm
from policylab.studies.boundary.world import Grid, GridWorld, World, grid_axes, world_from

PROBE_SEEDS = named_range("boundary", "probe")
SWEEP_SEEDS = named_range("boundary", "sweep")
FDR_Q = 0.05  # the diff's Benjamini-Hochberg rate, as `policylab boundary diff` defaults to


@dataclass
class Sweep:
    """One sweep of the store as the page knows it: its meta, and (once asked) its reduction."""

    name: str
    meta: dict
    store_root: Path

    @cached_property
    def planned(self) -> dict[str, Planned]:
        """cache key (the world's name) -> the sweep's planned rollout of that world."""
        ckpt = self.checkpoint
        return {p.world["cache_key"]: p for p in planned_sweep(grid_from_meta(self.meta), ckpt)}

    @cached_property
    def checkpoint(self) -> Checkpoint:
        """The sweep's checkpoint played from the store's copy of its policy file (the file the sweep used
        may have moved), under the sweep's name; a store without a copy falls back to a committed name."""
        with Store(self.store_root) as store:
            rob = robot_from_meta(self.meta, "checkpoint", store)
            kept = kept_policy(store, self.name)
        ckpt = replace(checkpoint_on(str(kept) if kept is not None else self.name, rob), name=self.name)
        if ckpt.as_dict() != self.meta["checkpoint"]:  # a normalisation file beside the policy is not kept
            raise BadInput(
                "checkpoint",
                f"the policy of {self.name!r} cannot be played as it was swept (its file or "
                "its normalisation file differs or is gone)",
            )
        return ckpt


@dataclass(frozen=True)
class RunPlan:
    """A run the page asks for, resolved once (`StoreView.plan`): what the worker plays and the page shows."""

    planned: Planned  # a stored sweep's planned rollout of the world, or one named by its probe seed
    ckpt: Checkpoint  # the policy on the map's robot
    world: World


class StoreView:
    """The sweeps of one store, their maps and their gate verdicts, and the planning of live worlds."""

    def __init__(self, root: Path, resamples: int):
        self.root, self.resamples = root, resamples
        with Store(root) as store:
            names = sorted({str(r.data["world"]["checkpoint"]["name"]) for r in store.records(STUDY)})
            metas = {n: store.get_meta(meta_name(n)) for n in names}
        self.sweeps = {n: Sweep(n, m, root) for n, m in metas.items() if m is not None}
        self._maps: dict | None = None

    def sweep(self, name: str, field: str = "map") -> Sweep:
        if name not in self.sweeps:
            raise BadInput(field, f"no sweep of {name!r} in {self.root}; stored: {', '.join(self.sweeps) or 'none'}")
        return self.sweeps[name]

    def maps(self) -> dict:
        """{sweeps: [{name, reduction | error, gate_warning}], diffs: [...], axes, seed ranges} for the page."""
        if self._maps is None:
            self._maps = self._compute_maps()
        return self._maps

    def _compute_maps(self) -> dict:
        from policylab.studies.boundary.diff import diff_reductions
        from policylab.studies.boundary.reduce import load_sweep, reduce_sweep

        entries, reductions = [], {}
        with Store(self.root) as store:
            for name in self.sweeps:
                entry: dict = {"name": name, "robot": self.sweeps[name].meta.get("robot", {}).get("ref")}
                try:
                    red = reduce_sweep(
                        store, load_sweep(store, name), resamples=self.resamples, seed=0, check_rule=False
                    )
                except BadInput as exc:
                    entry["error"] = exc.message
                else:
                    for c in red["cells"]:  # what the page lists of a cell (the whole reduction is megabytes)
                        c.pop("km_curve", None)
                        c["rollouts"] = [
                            {k: r[k] for k in ("seed_idx", "seed", "status", "t_fail")} for r in c["rollouts"]
                        ]
                    reductions[name] = entry["reduction"] = red
                    entry["axes"] = map_axes(red["sweep"]["grid"])
                try:
                    gate.require(store, name, "gate")
                    entry["gate_warning"] = None
                except BadInput as exc:
                    entry["gate_warning"] = exc.message
                entries.append(entry)
        diffs = []
        names = list(reductions)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                try:
                    d = diff_reductions(reductions[a], reductions[b], q=FDR_Q)
                except BadInput as exc:
                    diffs.append({"a": a, "b": b, "error": exc.message})
                    continue
                diffs.append(
                    {
                        "a": a,
                        "b": b,
                        "summary": d["summary"],
                        "grid": d["grid"],
                        "axes": map_axes(d["grid"]),
                        "cells": [
                            {
                                k: c[k]
                                for k in (
                                    "row_idx",
                                    "col_idx",
                                    "survival_a",
                                    "survival_b",
                                    "delta_survival",
                                    "q_fisher",
                                    "change",
                                )
                            }
                            for c in d["cells"]
                        ],
                        "shrinkage_census": d["shrinkage_census"],
                    }
                )
        return {
            "store": str(self.root),
            "sweeps": entries,
            "diffs": diffs,
            "axes": [form_field(a) for a in CATALOGUE],
            "probe_seeds": {"range": "boundary.probe", "base": PROBE_SEEDS.base, "size": PROBE_SEEDS.size},
        }

    @property
    def policy_folders(self) -> tuple[Path, Path]:
        """Where the page's policy files may be: under the folder that holds the store (``runs/boundary/`` for
        ``runs/boundary/store``), or among the committed checkpoints."""
        return self.root.resolve().parent, CHECKPOINT_DIR.resolve()

    def policy_file(self, given: str) -> Path:
        """The policy file the page names, resolved (links followed), if it is a .npz or .onnx file in
        `policy_folders`; every other path, there or not, is refused with one same line, so the page tells
        nothing of the files elsewhere on this machine."""
        try:
            path = Path(given).resolve()
            allowed = (
                path.suffix.lower() in SUFFIXES
                and any(path.is_relative_to(f) for f in self.policy_folders)
                and path.is_file()
            )
        except (OSError, ValueError, RuntimeError):  # a name the system refuses (a NUL byte, too long, a link loop)
            allowed = False
        if not allowed:
            folder, committed = self.policy_folders
            raise BadInput("policy_file", f"not a .npz or .onnx file under {folder} or {committed}")
        return path

    def plan(self, req: ProbeRunForm) -> RunPlan:
        """The world `req` asks for, resolved once (bad input names the field)."""
        sweep = self.sweep(req.map)
        if req.checkpoint is not None:
            ckpt = self.sweep(req.checkpoint, "checkpoint").checkpoint
            if ckpt.robot.identity != sweep.checkpoint.robot.identity:
                raise BadInput("checkpoint", f"{req.checkpoint!r} was swept on another robot than {req.map!r}")
        else:
            try:
                ckpt = checkpoint_on(str(self.policy_file(req.policy_file)), sweep.checkpoint.robot)
            except BadInput as exc:
                raise BadInput("policy_file", exc.message) from None
        seed = req.sweep_seed if req.sweep_seed is not None else PROBE_SEEDS.base + req.seed_index
        world = world_from(req.world, seed)
        stored = self.sweeps.get(ckpt.name)
        if stored is not None and stored.meta["checkpoint"] == ckpt.as_dict() and world.key in stored.planned:
            return RunPlan(stored.planned[world.key], ckpt, world)
        rng = PROBE_SEEDS if req.sweep_seed is None else SWEEP_SEEDS
        rec = probe_world_record(world, ckpt, rng.purpose, seed - rng.base)
        return RunPlan(Planned(STUDY, rec, policy_record(ckpt), protocol(ckpt.robot)), ckpt, world)


def probe_world_record(world: World, ckpt: Checkpoint, seed_range: str, index: int) -> dict:
    """The record of a world off every stored grid: a sweep's world part with the seed's origin (the
    `boundary.<seed_range>` range and the index in it) where a grid world has its grid indices."""
    rec = world_record(GridWorld(world, -1, -1, -1, -1), ckpt, ckpt.robot.spec.env, None)
    for k in ("mu_idx", "push_idx", "seed_idx", "rollout_index"):
        del rec[k]
    return {**rec, "probe": {"seed_range": f"boundary.{seed_range}", "index": index}}


def map_axes(grid: dict) -> dict:
    """How the page draws and loads a map of `grid` (a reduction's): its row and column axes as form fields,
    and the world every cell shares (`world`: each World field but the seed, the row and column fields to
    be set from the cell), so "Load + run" sets every field of the form, never leaving one from before."""
    row, col = grid_axes(grid)
    g = Grid.recorded(grid["rows"], grid["cols"], grid)
    world = g.world(g.rows[0], g.cols[0], 0).as_dict()
    del world["seed"]
    return {"row": form_field(row), "col": form_field(col), "world": world}


def form_field(a) -> dict:
    """One input of the page's world form: named by the World field (as records name it), with the
    axis's label, unit, range, resolution and default."""
    return {
        "name": a.field,
        "label": a.label,
        "unit": a.unit,
        "min": a.lo,
        "max": a.hi,
        "step": a.resolution,
        "default": a.default,
    }
