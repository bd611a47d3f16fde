"""The replay batch: the selected worlds, read from the store, with the recovery search recorded.

Replays never decide an outcome by simulating again; `resimulate` re-runs all worlds in one batch, as the sweep did."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from policylab.config import claim_out_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.result import Result
from policylab.rollout.store import Store
from policylab.studies.boundary.analysis_folder import read_stage, recorded_store, reduced_config, stage_path
from policylab.studies.boundary.older_records import ANALYSIS_FORMAT
from policylab.studies.boundary.requests import ReplayRequest

if TYPE_CHECKING:
    from policylab.envs.robots.robot import Robot
    from policylab.studies.boundary.checkpoint import Checkpoint

# records -> payloads, simulated together as one batch
Resimulate = Callable[[Sequence[Mapping]], Sequence[Mapping[str, np.ndarray]]]
NOT_CHECKED = {"checked": False}


def compare(stored: Mapping[str, np.ndarray], fresh: Mapping[str, np.ndarray]) -> dict:
    """Bitwise comparison of a fresh simulation with the stored trajectory (qpos and qvel)."""
    out: dict = {"checked": True}
    for name in ("qpos", "qvel"):
        a, b = np.asarray(stored[name]), np.asarray(fresh[name])
        same_shape = a.shape == b.shape
        out[f"{name}_bitwise_equal"] = bool(same_shape and a.tobytes() == b.tobytes())
        out[f"{name}_max_abs_diff"] = float(np.max(np.abs(a - b))) if same_shape else None
    out["equal"] = out["qpos_bitwise_equal"] and out["qvel_bitwise_equal"]
    return out


def keys_to_check(store: Store, selection: Mapping) -> list[str]:
    """Every record the batch may show: boundary and divergence picks, and each recovery cell's
    recorded survivors (only a survivor can be chosen)."""
    keys = [w["key"] for w in selection["boundary_cells"]] + [w["key"] for w in selection["divergences"]]
    for rec in selection["recoveries"]:
        keys += [c["key"] for c in rec["search_order"] if store.require(c["key"]).outcome["status"] == "survived"]
    return list(dict.fromkeys(keys))


def equivalences(store: Store, keys: Sequence[str], resimulate: Resimulate | None) -> dict[str, dict]:
    if resimulate is None or not keys:
        return {}
    fresh = resimulate([store.require(k).data for k in keys])
    return {k: compare(store.payload(k), f) for k, f in zip(keys, fresh)}


def _entry(store: Store, kind: str, world: Mapping, eq: Mapping[str, dict]) -> dict:
    rec = store.require(world["key"])
    o = rec.outcome
    return {
        "kind": kind,
        "row": world["row"],
        "col": world["col"],
        "cell": world["cell"],
        "seed_idx": world["seed_idx"],
        "seed": world["seed"],
        "key": rec.key,
        "cache_key": rec.data["world"].get("cache_key"),
        "outcome": o["status"],
        "t_fail": o.get("t_fail"),
        "payload_sha256": rec.payload_sha256,
        "equivalence": eq.get(rec.key, NOT_CHECKED),
    }


def search_recovery(store: Store, recovery: Mapping, eq: Mapping[str, dict], checking: bool) -> dict:
    """Walk the cell's search order; take the first survivor (reproduced, when checking)."""
    attempts = []
    for cand in recovery["search_order"]:
        status = store.require(cand["key"]).outcome["status"]
        check = eq.get(cand["key"], NOT_CHECKED)
        usable = status == "survived" and (not checking or check["equal"])
        attempts.append(
            {
                "seed_idx": cand["seed_idx"],
                "seed": cand["seed"],
                "record_status": status,
                "equivalence": check,
                "usable": usable,
            }
        )
        if usable:
            entry = _entry(store, "recovery", {**recovery, **cand}, eq)
            entry.update(
                recovery_attempts=len(attempts),
                matched_recorded_survivor=cand["seed_idx"] == recovery["seed_idx"],
                search=attempts,
            )
            return entry
    return {
        "kind": "recovery",
        "row": recovery["row"],
        "col": recovery["col"],
        "cell": recovery["cell"],
        "recovery_search": "no survivor in re-simulation" if checking else "no survivor in the record",
        "recovery_attempts": len(attempts),
        "search": attempts,
    }


def replay_batch(store: Store, selection: Mapping, resimulate: Resimulate | None = None) -> dict:
    """The replays.json document: one entry per selected world, in selection order."""
    eq = equivalences(store, keys_to_check(store, selection), resimulate)
    entries = [_entry(store, "boundary", w, eq) for w in selection["boundary_cells"]]
    entries += [search_recovery(store, w, eq, resimulate is not None) for w in selection["recoveries"]]
    entries += [_entry(store, "divergence", w, eq) for w in selection["divergences"]]
    return {
        "format": ANALYSIS_FORMAT,
        "checkpoint": selection["checkpoint"],
        "replays": entries,
        "equivalence_summary": {
            "checked": len(eq),
            "bitwise_equal": sum(1 for c in eq.values() if c["equal"]),
            "batch": "all checked worlds re-simulated together in one batch",
        },
        "rule": "outcomes come from the store records; re-simulation (when asked) only compares with them",
    }


def resimulate_with(checkpoint_path: Path, rob: Robot) -> Resimulate:
    """Re-simulation of records' worlds with the checkpoint at `checkpoint_path` on `rob`, through the
    sweep's simulator (`simulation.simulate_worlds`), all worlds in one batch."""
    from policylab.studies.boundary.simulation import simulate_worlds
    from policylab.studies.boundary.world import World

    def resimulate(records: Sequence[Mapping]) -> list[Mapping[str, np.ndarray]]:
        worlds = [World.from_record(r["world"]) for r in records]
        return [payload for _, payload in simulate_worlds(str(checkpoint_path), worlds, rob, nthread=2)]

    return resimulate


@dataclass(frozen=True)
class Plan:
    """A replay batch, resolved once (`plan`): the folder's reduction and selection, and with --verify the
    checkpoint the records were made with, on the sweep's robot."""

    req: ReplayRequest
    reduction: dict
    selection: dict
    ckpt: Checkpoint | None  # None without --verify

    @property
    def config(self) -> dict:
        """What OUT/replay/config.json records."""
        return self.req.config(self.reduction["sweep"]["checkpoint_sha256"])


def plan(req: ReplayRequest) -> Plan:
    """Read the folder's stages and, with --verify, resolve the checkpoint once: `--checkpoint`, else the
    store's copy of the sweep's policy file (else its committed name), on the robot the sweep recorded,
    refused unless its sha256 is the sweep's. `BadInput` naming the field, nothing written."""
    from policylab.studies.boundary.checkpoint import checkpoint_on
    from policylab.studies.boundary.kept_files import kept_policy
    from policylab.studies.boundary.records import stored_robot

    reduction, selection = read_stage(req.out, "reduce"), read_stage(req.out, "select")
    if not req.verify:
        return Plan(req, reduction, selection, None)
    sha = reduction["sweep"]["checkpoint_sha256"]
    name = reduced_config(req.out)["checkpoint"]
    with recorded_store(req.out) as store:
        rob = stored_robot(store, name)
        kept = kept_policy(store, name)
    given = None if req.checkpoint == name else req.checkpoint  # the sweep's stored name: its kept file
    spec = given or (str(kept) if kept is not None else name)
    ckpt = checkpoint_on(spec, rob)
    if ckpt.sha256 != sha:
        raise BadInput(
            "checkpoint",
            f"{spec} (sha256 {ckpt.sha256[:12]}) is not the checkpoint of this sweep (sha256 {sha[:12]})",
        )
    return Plan(req, reduction, selection, ckpt)


def run(req: ReplayRequest) -> Result:
    """`policylab boundary replay`: OUT/replay/replays.json from the selection and the store; with --verify,
    re-simulated with the checkpoint the records were made with (its sha256 must be the sweep's)."""
    p = plan(req)
    resimulate = None if p.ckpt is None else resimulate_with(p.ckpt.path, p.ckpt.robot)
    with recorded_store(req.out) as store:
        claim_out_dir(req.out / "replay", p.config)
        result = replay_batch(store, p.selection, resimulate)
    path = stage_path(req.out, "replay")
    write_json(path, result)
    eq = result["equivalence_summary"]
    check = f"; equivalence {eq['bitwise_equal']}/{eq['checked']} bitwise equal" if req.verify else ""
    return Result(path, headlines=(f"replays: {len(result['replays'])}{check}",))
