"""A store's older forms, read in one place: schema version 1's index and payloads, and records under a former key.

docs/design.md, "The store" (Versions) and "Key versions". Nothing here imports the store: `store.py` calls it."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policylab.fileio import arrays_to_bytes, read_arrays
from policylab.hashing import canonical_json, sha256_hex

NPZ_PAYLOADS = "payloads"  # schema version 1: payloads/<two hex digits>/<key>.npz, one per rollout
_OFFSET_COLUMNS = ("payload_offset", "payload_length")  # what schema version 2 added to the rollouts table


def row_select(columns: set[str], select: str) -> str:
    """The SELECT list `select` (naming ``payload_offset, payload_length``) for a rollouts table with
    `columns`: a version-1 table lacks the two, read as NULL."""
    return select if _OFFSET_COLUMNS[0] in columns else select.replace(", ".join(_OFFSET_COLUMNS), "NULL, NULL")


def upgrade_sql(columns: set[str]) -> str:
    """The statements that bring a rollouts table with `columns` to the current schema: the offset
    columns for a version-1 table (its rows keep NULL there); none for a current or absent table."""
    if not columns or _OFFSET_COLUMNS[0] in columns:
        return ""
    return "\n".join(f"ALTER TABLE rollouts ADD COLUMN {c} INTEGER;" for c in _OFFSET_COLUMNS)


def npz_folders(root: Path) -> list[Path]:
    """The folders of a store's version-1 payloads, never reached through a link (a link is someone
    else's: nothing under it is the store's to count or remove)."""
    top = root / NPZ_PAYLOADS
    if not top.is_dir():
        return []
    return sorted(p for p in top.iterdir() if p.is_dir() and not p.is_symlink())


def npz_files(root: Path) -> list[str]:
    """Every version-1 payload file under the store, relative to it."""
    return [
        f"{NPZ_PAYLOADS}/{folder.name}/{e.name}"
        for folder in npz_folders(root)
        for e in os.scandir(folder)
        if e.name.endswith(".npz")
    ]


def npz_payload(raw: bytes, sha256: str, *, verify: bool) -> tuple[dict[str, np.ndarray] | None, str | None]:
    """(arrays, None) of a version-1 payload's file bytes, or (None, why): with `verify`, its sha256 is
    the file's."""
    if verify and sha256_hex(raw) != sha256:
        return None, "sha256 differs from its record"
    return read_arrays(io.BytesIO(raw)), None


def npz_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """The sha256 a version-1 row names for `arrays`: its npz file's."""
    return sha256_hex(arrays_to_bytes(arrays))


def npz_records(records: Iterable[Any]) -> list[Any]:
    """The store records (`store.Record`) whose payload is a version-1 npz file, in their order."""
    return [r for r in records if r.payload_path is not None and not r.packed]


def moved_record(rec: Any, sha: str) -> str:
    """The record text of a version-1 row (`store.Record`) whose payload moved into a unit file: it
    names the payload's sha256 as its arrays' digest, and not its path."""
    data = {k: v for k, v in rec.data.items() if k != "payload_path"}
    return canonical_json({**data, "payload_sha256": sha})


def remove_empty_npz_folders(root: Path) -> None:
    """Remove the version-1 payload folders that `store pack` emptied, then their parent once empty."""
    for folder in npz_folders(root):
        if not any(folder.iterdir()):
            folder.rmdir()
    top = root / NPZ_PAYLOADS
    if top.is_dir() and not any(top.iterdir()):
        top.rmdir()


def stored_under_former_keys(former: Mapping[str, Sequence[str]], present: set[str]) -> dict[str, str]:
    """key -> the first of its former keys (`former[key]`, in the order its world names its former
    forms) whose record the store holds (`present`), for the keys with one."""
    out = {}
    for key, keys in former.items():
        found = next((k for k in keys if k in present), None)
        if found is not None:
            out[key] = found
    return out
