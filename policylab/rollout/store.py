"""The store: the canonical record of every rollout.

An embedded SQLite index (WAL mode) plus one payload file per rollout. A rollout's key is derived
from its world, policy and protocol only (`rollout_key`); its outcome is decided once, when it is
first run, and written together with its trajectory. Replays, clips, charts and reports read the
store; a key that is present is never run again.

Layout under the store root::

    index.sqlite              one row per rollout (+ a small `meta` table for run configs)
    payloads/ab/<key>.npz     trajectory arrays, byte-deterministic (fixed zip timestamps)

Writes are atomic: the payload is written to a temp file and renamed, then the index row is
inserted in one transaction, so a killed run leaves either a full record or none.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from policylab.fileio import arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.hashing import canonical_json, hash_obj, sha256_hex
from policylab.provenance import versions

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rollouts (
    key TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    env TEXT NOT NULL,
    policy TEXT NOT NULL,
    seed INTEGER NOT NULL,
    record TEXT NOT NULL,
    payload_path TEXT,
    payload_sha256 TEXT
);
CREATE INDEX IF NOT EXISTS rollouts_study ON rollouts(study, env, policy);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def rollout_key(world: Mapping[str, Any], policy: Mapping[str, Any], protocol: Mapping[str, Any]) -> str:
    """Key of a rollout: a hash of what defines it, never of when or in which order it ran."""
    return hash_obj({"world": world, "policy": policy, "protocol": protocol}, length=32)


@dataclass(frozen=True)
class Record:
    """One stored rollout: its full JSON record and where its trajectory lives."""

    key: str
    data: dict[str, Any]
    payload_path: str | None
    payload_sha256: str | None

    @property
    def outcome(self) -> dict[str, Any]:
        return self.data["outcome"]


class Store:
    """SQLite index + payload files. One writer (the driver process); readers anywhere."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.root / "index.sqlite", isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- rollouts -----------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM rollouts WHERE key=?", (key,)).fetchone() is not None

    def put(
        self,
        key: str,
        *,
        study: str,
        world: Mapping[str, Any],
        policy: Mapping[str, Any],
        protocol: Mapping[str, Any],
        outcome: Mapping[str, Any],
        payload: Mapping[str, np.ndarray] | None = None,
    ) -> Record:
        """Write a rollout's record (and trajectory) once; a present key is left untouched."""
        existing = self.get(key)
        if existing is not None:
            return existing
        payload_path = payload_sha = None
        if payload is not None:
            blob = arrays_to_bytes(payload)
            payload_sha = sha256_hex(blob)
            payload_path = f"payloads/{key[:2]}/{key}.npz"
            atomic_write_bytes(self.root / payload_path, blob)
        data = {
            "key": key,
            "study": study,
            "world": dict(world),
            "world_hash": hash_obj(world),
            "policy": dict(policy),
            "policy_hash": hash_obj(policy),
            "protocol": dict(protocol),
            "outcome": dict(outcome),
            "provenance": versions(),
            "payload_path": payload_path,
            "payload_sha256": payload_sha,
        }
        self._db.execute(
            "INSERT OR IGNORE INTO rollouts VALUES (?,?,?,?,?,?,?,?)",
            (
                key,
                study,
                str(world.get("env", "")),
                str(policy.get("name", "")),
                int(world.get("seed", -1)),
                canonical_json(data),
                payload_path,
                payload_sha,
            ),
        )
        return Record(key, json.loads(canonical_json(data)), payload_path, payload_sha)

    def get(self, key: str) -> Record | None:
        row = self._db.execute(
            "SELECT key, record, payload_path, payload_sha256 FROM rollouts WHERE key=?", (key,)
        ).fetchone()
        return None if row is None else Record(row[0], json.loads(row[1]), row[2], row[3])

    def require(self, key: str) -> Record:
        rec = self.get(key)
        if rec is None:
            raise KeyError(f"no record for key {key}")
        return rec

    def keys(self, study: str | None = None) -> list[str]:
        if study is None:
            rows = self._db.execute("SELECT key FROM rollouts ORDER BY key")
        else:
            rows = self._db.execute("SELECT key FROM rollouts WHERE study=? ORDER BY key", (study,))
        return [r[0] for r in rows]

    def records(self, study: str | None = None) -> Iterator[Record]:
        sql = "SELECT key, record, payload_path, payload_sha256 FROM rollouts"
        args: tuple = ()
        if study is not None:
            sql += " WHERE study=?"
            args = (study,)
        for row in self._db.execute(sql + " ORDER BY key", args):
            yield Record(row[0], json.loads(row[1]), row[2], row[3])

    def payload(self, key: str, *, verify: bool = True) -> dict[str, np.ndarray]:
        """The trajectory arrays of a record; with `verify`, its sha256 is checked first."""
        rec = self.require(key)
        if rec.payload_path is None:
            raise KeyError(f"record {key} has no payload")
        path = self.root / rec.payload_path
        if verify and sha256_hex(path.read_bytes()) != rec.payload_sha256:
            raise ValueError(f"payload of {key} does not match its recorded sha256")
        return read_arrays(path)

    def fingerprint(self) -> dict[str, str | None]:
        """key -> payload sha256, for comparing two stores (resume tests, equivalence)."""
        return {r[0]: r[1] for r in self._db.execute("SELECT key, payload_sha256 FROM rollouts ORDER BY key")}

    # -- run configs --------------------------------------------------------------------------
    def get_meta(self, name: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, name: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?,?)", (name, canonical_json(value)))
