"""The equivalence gate, enforced: diff and report refuse a sweep whose gate never passed.

`verify` writes the meta record ``boundary/gate/<checkpoint name>``; `require` checks it (docs/boundary.md)."""

from __future__ import annotations

import shlex
from importlib import metadata
from pathlib import Path

from policylab.errors import BadInput
from policylab.hashing import hash_obj
from policylab.rollout.store import Store
from policylab.studies.boundary.older_records import recorded_robot
from policylab.studies.boundary.records import meta_name


def gate_name(checkpoint: str) -> str:
    return f"boundary/gate/{checkpoint}"


def library_versions() -> dict[str, str]:
    out = {}
    for dist in ("mujoco", "numpy", "onnxruntime"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def record(sweep_meta: dict, report: dict) -> dict:
    """The gate record of a verify run over the sweep whose store meta is `sweep_meta`."""
    a = report["agreement"]
    return {
        "passed": bool(report["passed"]),
        "checkpoint": sweep_meta["checkpoint"],
        "robot": recorded_robot(sweep_meta),
        "protocol_hash": hash_obj(sweep_meta["protocol"]),
        "libraries": library_versions(),
        "sampled": a["n"],
        "identical": a["identical"],
    }


def verify_command(store_root: Path, checkpoint: str, robot_ref: str) -> str:
    return shlex.join(
        [
            "policylab",
            "boundary",
            "verify",
            "--robot",
            robot_ref,
            "--checkpoint",
            checkpoint,
            "--store",
            str(store_root),
        ]
    )


def require(store: Store, checkpoint: str, field: str) -> dict:
    """The passing gate record of the sweep of `checkpoint` in `store`, or BadInput naming the command."""
    meta = store.get_meta(meta_name(checkpoint))
    if meta is None:
        raise BadInput(field, f"no sweep of checkpoint {checkpoint!r} in {store.root}")
    cmd = verify_command(store.root, checkpoint, recorded_robot(meta)["ref"])
    gate = store.get_meta(gate_name(checkpoint))
    if gate is None:
        raise BadInput(
            field, f"the sweep of {checkpoint!r} has no equivalence record (the gate never ran); run `{cmd}` first"
        )
    if not gate.get("passed"):
        raise BadInput(
            field,
            f"the equivalence gate of {checkpoint!r} failed ({gate.get('identical')}/"
            f"{gate.get('sampled')} identical); the sweep cannot be trusted: sweep again and run `{cmd}`",
        )
    why = []
    if gate.get("checkpoint") != meta["checkpoint"]:
        why.append("checkpoint")
    if gate.get("robot") != recorded_robot(meta):
        why.append("robot")
    if gate.get("protocol_hash") != hash_obj(meta["protocol"]):
        why.append("physics settings")
    if gate.get("libraries") != library_versions():
        why.append("library versions")
    if why:
        raise BadInput(
            field, f"the equivalence record of {checkpoint!r} was made for another {', '.join(why)}; run `{cmd}` again"
        )
    return gate
