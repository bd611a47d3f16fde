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

Keys and records are canonical JSON (`policylab.hashing.canonical_json`). A large part shared by
many records (a shadow Breakout world's physics: 3 KB of JSON in every key and record) can be
handed in as a `FrozenJSON`, which carries its canonical JSON, so it is serialized once rather
than per key and record; the bytes are the same either way (`canonical`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from policylab.fileio import EncodedArrays, arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.hashing import canonical_json, sha256_hex
from policylab.provenance import record as provenance_record

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


class FrozenJSON(dict):
    """A read-only dict that carries its canonical JSON (`.canonical`), computed once, here.

    `canonical` (and so `rollout_key` and `Store.put`) uses that text instead of serializing the
    dict again. Its values must not be changed after construction (the dict itself refuses).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.canonical = canonical_json(dict(self))

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError("FrozenJSON is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore

    def __reduce__(self):
        return FrozenJSON, (dict(self),)


def canonical(obj: Any) -> str:
    """`canonical_json(obj)`, byte for byte, serializing plain JSON values directly and splicing in
    the text every `FrozenJSON` carries.

    Plain means exact types: dict with str keys, list, tuple, str, int, float, bool, None. There
    `canonical_json` writes what this writes (sorted keys, "," and ":", ASCII-escaped strings, the
    repr of ints and finite floats, null for NaN and infinities); anything else (numpy values,
    subclasses, other keys) goes through `canonical_json` itself.
    """
    parts: list[str] = []
    _canonical(obj, parts)
    return "".join(parts)


_ENCODE_STR = json.encoder.encode_basestring_ascii


def _canonical(obj: Any, out: list) -> None:
    t = type(obj)
    if t is str:
        out.append(_ENCODE_STR(obj))
    elif t is FrozenJSON:
        out.append(obj.canonical)
    elif t is dict and all(type(k) is str for k in obj):
        out.append("{")
        for i, k in enumerate(sorted(obj)):
            out.append(("," if i else "") + _ENCODE_STR(k) + ":")
            _canonical(obj[k], out)
        out.append("}")
    elif t is list or t is tuple:
        out.append("[")
        for i, v in enumerate(obj):
            if i:
                out.append(",")
            _canonical(v, out)
        out.append("]")
    elif t is int:
        out.append(int.__repr__(obj))
    elif t is float:
        out.append(float.__repr__(obj) if math.isfinite(obj) else "null")
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    else:
        out.append(canonical_json(obj))


def _hash(obj: Any, length: int = 16) -> str:
    """`policylab.hashing.hash_obj`, through `canonical`."""
    return sha256_hex(canonical(obj).encode())[:length]


def _as_dict(obj: Mapping[str, Any]) -> dict:
    """A record's copy of a mapping (a `FrozenJSON` is kept: it is read-only and carries its JSON)."""
    return obj if isinstance(obj, FrozenJSON) else dict(obj)


def _provenance() -> FrozenJSON:
    """`provenance.record()`, frozen once per distinct value (it is cached, so once per process)."""
    current = provenance_record()
    global _PROVENANCE
    if _PROVENANCE is None or _PROVENANCE[0] is not current:
        _PROVENANCE = (current, FrozenJSON(current))
    return _PROVENANCE[1]


_PROVENANCE: tuple[dict, FrozenJSON] | None = None


def rollout_key(world: Mapping[str, Any], policy: Mapping[str, Any], protocol: Mapping[str, Any]) -> str:
    """Key of a rollout: a hash of what defines it, never of when or in which order it ran."""
    return _hash({"world": world, "policy": policy, "protocol": protocol}, length=32)


class Record:
    """One stored rollout: its full JSON record and where its trajectory lives. Read-only.

    `data` is parsed from the index row's text on first use (a shadow Breakout record carries 3 KB of
    physics), and `outcome` alone is read without parsing the rest: a record's canonical JSON starts
    with its two first keys in sorted order, ``{"key":...,"outcome":{...}``.
    """

    __slots__ = ("key", "payload_path", "payload_sha256", "_data", "_text", "_outcome")

    def __init__(self, key: str, data: dict[str, Any] | None = None, payload_path: str | None = None,
                 payload_sha256: str | None = None, *, text: str | None = None):
        if (data is None) == (text is None):
            raise TypeError("a Record needs its data or its JSON text")
        for name, value in (("key", key), ("payload_path", payload_path), ("payload_sha256", payload_sha256),
                            ("_data", data), ("_text", text), ("_outcome", None)):
            object.__setattr__(self, name, value)

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            object.__setattr__(self, "_data", json.loads(self._text))
        return self._data

    @property
    def outcome(self) -> dict[str, Any]:
        if self._data is not None:
            return self._data["outcome"]
        if self._outcome is None:
            object.__setattr__(self, "_outcome", _leading_outcome(self._text))
        return self._outcome if self._outcome is not None else self.data["outcome"]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Record is read-only (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.key, self.data, self.payload_path, self.payload_sha256) == \
            (other.key, other.data, other.payload_path, other.payload_sha256)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return _record, (self.key, self._data, self.payload_path, self.payload_sha256, self._text)

    def __repr__(self) -> str:
        return (f"Record(key={self.key!r}, data={self.data!r}, payload_path={self.payload_path!r}, "
                f"payload_sha256={self.payload_sha256!r})")


def _record(key, data, payload_path, payload_sha256, text) -> Record:
    return Record(key, data, payload_path, payload_sha256, text=None if data is not None else text)


_DECODER = json.JSONDecoder()


def _leading_outcome(text: str) -> dict | None:
    """The outcome of a record's canonical JSON text, parsed alone; None where the text does not start
    ``{"key":<string>,"outcome":`` (then the caller parses the whole record)."""
    head = '{"key":'
    if not text.startswith(head):
        return None
    try:
        _, end = _DECODER.raw_decode(text, len(head))
        if not text.startswith(',"outcome":', end):
            return None
        outcome, _ = _DECODER.raw_decode(text, end + len(',"outcome":'))
    except ValueError:
        return None
    return outcome if isinstance(outcome, dict) else None


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
            blob = payload.npz if isinstance(payload, EncodedArrays) else arrays_to_bytes(payload)
            payload_sha = sha256_hex(blob)
            payload_path = f"payloads/{key[:2]}/{key}.npz"
            atomic_write_bytes(self.root / payload_path, blob)
        data = {
            "key": key,
            "study": study,
            "world": dict(world),
            "world_hash": _hash(world),
            "policy": _as_dict(policy),
            "policy_hash": _hash(policy),
            "protocol": _as_dict(protocol),
            "outcome": dict(outcome),
            "provenance": _provenance(),
            "payload_path": payload_path,
            "payload_sha256": payload_sha,
        }
        text = canonical(data)
        self._db.execute(
            "INSERT OR IGNORE INTO rollouts VALUES (?,?,?,?,?,?,?,?)",
            (
                key,
                study,
                str(world.get("env", "")),
                str(policy.get("name", "")),
                int(world.get("seed", -1)),
                text,
                payload_path,
                payload_sha,
            ),
        )
        return Record(key, None, payload_path, payload_sha, text=text)

    def get(self, key: str) -> Record | None:
        row = self._db.execute(
            "SELECT key, record, payload_path, payload_sha256 FROM rollouts WHERE key=?", (key,)
        ).fetchone()
        return None if row is None else Record(row[0], None, row[2], row[3], text=row[1])

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
            yield Record(row[0], None, row[2], row[3], text=row[1])

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
