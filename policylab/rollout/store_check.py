"""`policylab store check` and `policylab store pack`: a store's every payload read and verified,
damage removed so the next run plays exactly the damaged rollouts again, and a version-1 store's
npz files moved into unit files.

A row is damaged when its payload's file is missing, unreadable, too short, or holds arrays whose
sha256 differs from the row's. Repair deletes damaged rows (a key that is absent is run again by
the command that planned it, and only that key), unit files no intact row points into, files no
row points into (orphans: a unit whose rows a kill kept from being committed) and temp files of
killed writers. Run it while no other command writes to the store: a unit file a running writer has
just renamed into place is an orphan until its rows are committed.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from policylab.fileio import atomic_write_bytes
from policylab.rollout import unit_file
from policylab.rollout.payloads import pack_arrays
from policylab.rollout.store import LEGACY_PAYLOADS, UNITS, Record, Store, canonical, read_payload, temp_files

PACK_UNIT = 1000  # rollouts per unit file when a version-1 store is packed


def check_store(root: Path, *, repair: bool = False) -> dict:
    """Verify every row and payload of the store at `root`; with `repair`, remove what is damaged.
    Returns the findings (sorted, so the same store gives the same report)."""
    temps = sorted((str(p.relative_to(root)), stale) for p, stale in temp_files(root))  # before an open removes them
    with Store(root, readonly=not repair) as store:
        records = list(store.records())
        damaged: dict[str, str] = {}
        by_file: dict[str, list[Record]] = defaultdict(list)
        for rec in records:
            if rec.payload_path is not None:
                by_file[rec.payload_path].append(rec)
        intact_files = set()
        for rel, recs in sorted(by_file.items()):
            blob = _read(root / rel) if recs[0].packed else None
            for rec in recs:
                if rec.packed and blob is None:
                    damaged[rec.key] = f"{rel} is missing"
                    continue
                _, why = read_payload(root, rec, blob=blob)
                if why is not None:
                    damaged[rec.key] = why
                else:
                    intact_files.add(rel)
        bad_files = sorted(rel for rel in by_file if rel not in intact_files and (root / rel).exists())
        orphans = sorted(rel for rel in _payload_files(root) if rel not in by_file)
        if repair:
            store.delete(sorted(damaged))
            for rel in bad_files + orphans:
                (root / rel).unlink(missing_ok=True)
            for rel, stale in temps:
                if stale:
                    (root / rel).unlink(missing_ok=True)
    return {
        "store": str(root),
        "rows": len(records),
        "payloads": sum(len(r) for r in by_file.values()),
        "damaged": [{"key": k, "why": damaged[k]} for k in sorted(damaged)],
        "bad_unit_files": bad_files,
        "orphans": orphans,
        "temp_files": [{"path": rel, "writer_gone": stale} for rel, stale in temps],
        "repaired": repair,
    }


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _payload_files(root: Path) -> list[str]:
    """Every payload file under the store (unit files and version-1 npz files), relative to it."""
    out = []
    units = root / UNITS
    if units.is_dir():
        out += [f"{UNITS}/{e.name}" for e in os.scandir(units) if e.name.endswith(".pack")]
    legacy = root / LEGACY_PAYLOADS
    if legacy.is_dir():
        for sub in sorted(p for p in legacy.iterdir() if p.is_dir()):
            out += [f"{LEGACY_PAYLOADS}/{sub.name}/{e.name}" for e in os.scandir(sub) if e.name.endswith(".npz")]
    return out


def pack_store(root: Path) -> dict:
    """Move every version-1 payload (one npz per rollout) into unit files of `PACK_UNIT` rollouts, in
    key order: each unit file is written, its rows repointed in one transaction, then its npz files
    removed, so a kill at any point leaves a readable store (rerun to finish). A row's sha256 becomes
    its arrays' digest; its arrays are checked against its old sha256 first, and a damaged one stops
    the pack with the check command named."""
    moved = 0
    with Store(root) as store:
        legacy = [r for r in store.records() if r.payload_path is not None and not r.packed]
        for i in range(0, len(legacy), PACK_UNIT):
            part = legacy[i : i + PACK_UNIT]
            arrays = [store.payload(r.key) for r in part]  # DamagedPayload (exit 2) names `store check`
            keys = [r.key for r in part]
            parts, places = unit_file.encode(keys, [canonical(r.outcome) for r in part],
                                            [pack_arrays(a) for a in arrays])
            rel = unit_file.name(keys)
            atomic_write_bytes(root / rel, parts)
            store.move_payloads([(key, rel, *place) for key, place in zip(keys, places)])
            for rec in part:
                (root / rec.payload_path).unlink(missing_ok=True)
            moved += len(part)
    legacy_dir = root / LEGACY_PAYLOADS
    if legacy_dir.is_dir():
        for sub in legacy_dir.iterdir():
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
        if not any(legacy_dir.iterdir()):
            legacy_dir.rmdir()
    return {"store": str(root), "packed": moved, "unit_files": -(-moved // PACK_UNIT)}
