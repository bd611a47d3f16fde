"""What a store keeps beside a sweep's records so the sweep outlives its input files (docs/boundary.md,
"Module notes")."""

from __future__ import annotations

from pathlib import Path

from policylab.envs.robots.robot import Robot, robot_from_copy
from policylab.errors import BadInput
from policylab.fileio import atomic_write_bytes
from policylab.hashing import sha256_hex
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import Checkpoint

KEPT_DIR = "kept"


def kept_name(checkpoint: str) -> str:
    return f"boundary/kept/{checkpoint}"


def keep(store: Store, ckpt: Checkpoint) -> None:
    """Copy the sweep's spec and policy files into the store and record them (same bytes, same copy)."""
    rob = ckpt.robot
    files = {}
    for kind, path, sha in (("spec", rob.spec_file, rob.identity["spec_sha256"]), ("policy", ckpt.path, ckpt.sha256)):
        rel = f"{KEPT_DIR}/{sha}{Path(path).suffix.lower()}"
        if not (store.root / rel).is_file():
            atomic_write_bytes(store.root / rel, Path(path).read_bytes())
        files[kind] = rel
    store.set_meta(
        kept_name(ckpt.name), {**files, "mjcf": str(rob.mjcf.resolve()), "mjcf_sha256": rob.identity["mjcf_sha256"]}
    )


def kept_robot(store: Store, checkpoint: str, ref: str, field: str = "store") -> Robot | None:
    """The sweep's robot from the store's copy of its spec (None when the store keeps none: a store
    swept before copies were kept). Bad input when the MJCF the spec named moved or changed."""
    kept = store.get_meta(kept_name(checkpoint))
    if kept is None:
        return None
    mjcf = Path(kept["mjcf"])
    if not mjcf.is_file() or sha256_hex(mjcf.read_bytes()) != kept["mjcf_sha256"]:
        raise BadInput(
            field,
            f"the MJCF {mjcf} of the sweep's robot {ref!r} is gone or changed since the sweep "
            "(the store keeps the spec, not the model); put it back or sweep again",
        )
    return robot_from_copy(ref, store.root / kept["spec"], mjcf)


def kept_policy(store: Store, checkpoint: str) -> Path | None:
    """The store's copy of the sweep's policy file (None when it keeps none)."""
    kept = store.get_meta(kept_name(checkpoint))
    return None if kept is None else store.root / kept["policy"]
