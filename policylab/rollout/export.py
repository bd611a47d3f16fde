"""`policylab export STORE`: the store as one Parquet table, one row per rollout (docs/design.md, "Store export")."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from policylab.fileio import atomic_write_bytes
from policylab.rollout.store import Store

FORMATS = ("parquet",)
HEAD = ("key", "study", "env", "policy", "seed")
TAIL = ("policy_hash", "world_hash", "payload_sha256")


def _flat(prefix: str, obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for name in sorted(obj):
        value = obj[name]
        if isinstance(value, Mapping):
            yield from _flat(f"{prefix}_{name}", value)
        elif isinstance(value, (list, tuple)):
            yield f"{prefix}_{name}", json.dumps(value, sort_keys=True)
        else:
            yield f"{prefix}_{name}", value


def rows(store: Store, study: str | None = None) -> Iterator[dict[str, Any]]:
    for rec in store.records(study):
        d = rec.data
        row = {
            "key": rec.key,
            "study": d["study"],
            "env": str(d["world"].get("env", "")),
            "policy": str(d["policy"].get("name", "")),
            "seed": int(d["world"].get("seed", -1)),
        }
        row.update(_flat("world", d["world"]))
        row.update(_flat("outcome", d["outcome"]))
        row.update(policy_hash=d.get("policy_hash"), world_hash=d.get("world_hash"), payload_sha256=rec.payload_sha256)
        yield row


def table(store: Store, study: str | None = None):
    """The store as a `pyarrow.Table` (columns as the module says)."""
    import pyarrow as pa

    columns: dict[str, list] = {}
    n = 0
    for row in rows(store, study):
        for name, value in row.items():
            columns.setdefault(name, [None] * n).append(value)
        n += 1
        for values in columns.values():
            if len(values) < n:
                values.append(None)
    middle = sorted(c for c in columns if c not in HEAD and c not in TAIL)
    order = (
        [c for c in HEAD if c in columns]
        + [c for c in middle if c.startswith("world_")]
        + [c for c in middle if c.startswith("outcome_")]
        + [c for c in TAIL if c in columns]
    )
    arrays = []
    for name in order:
        values = columns[name]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else json.dumps(v) for v in values], pa.string()))
    return pa.table(arrays, names=order) if order else pa.table({name: pa.array([], pa.string()) for name in HEAD})


def export(store_root: Path, out: Path, fmt: str = "parquet", study: str | None = None) -> dict:
    """Write the store's table to `out` (atomically); returns its row and column counts."""
    import io

    import pyarrow.parquet as pq

    with Store(store_root, readonly=True) as store:
        t = table(store, study)
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    atomic_write_bytes(out, buf.getvalue())
    return {"rows": t.num_rows, "columns": t.column_names, "format": fmt}
