"""The store: the canonical record of every rollout, an SQLite index plus one packed payload file per unit of work.

Layout, atomic writes, digests and versions: docs/design.md, "The store"."""

from __future__ import annotations

import gc
import json
import os
import re
import socket
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from policylab.errors import BadInput
from policylab.fileio import atomic_write_bytes, thread_pool
from policylab.hashing import FrozenJSON, canonical_json, hash_obj, json_string, sha256_hex
from policylab.provenance import record as provenance_record
from policylab.rollout import migrations, unit_file
from policylab.rollout.payloads import EncodedArrays, Packing, arrays_digest, unpack_arrays
from policylab.rollout.unit_file import UNITS

SCHEMA_VERSION = 2
SCHEMA_META = "store.schema_version"  # the meta row naming the layout's version

# One transaction: a kill leaves the index as it was (nothing, or a complete schema). No index beside
# the key's: a store holds one study or a few, so filtering by study reads the table either way, and an
# index on (study, env, policy) costs a third of each row's insert (an older index keeps the ones it has).
_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS rollouts (
    key TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    env TEXT NOT NULL,
    policy TEXT NOT NULL,
    seed INTEGER NOT NULL,
    record TEXT NOT NULL,
    payload_path TEXT,
    payload_sha256 TEXT,
    payload_offset INTEGER,
    payload_length INTEGER
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
{upgrade}
INSERT OR REPLACE INTO meta VALUES ('{meta}', '{version}');
COMMIT;
"""
_ROW = "key, record, payload_path, payload_sha256, payload_offset, payload_length"


def frozen_provenance() -> FrozenJSON:
    """`provenance.record()`, frozen once per distinct value (it is cached, so once per process)."""
    current = provenance_record()
    global _PROVENANCE
    if _PROVENANCE is None or _PROVENANCE[0] is not current:
        _PROVENANCE = (current, FrozenJSON(current))
    return _PROVENANCE[1]


_PROVENANCE: tuple[dict, FrozenJSON] | None = None


def rollout_key(world: Mapping[str, Any], policy: Mapping[str, Any], protocol: Mapping[str, Any]) -> str:
    """Key of a rollout: a hash of what defines it, never of when or in which order it ran."""
    return hash_obj({"world": world, "policy": policy, "protocol": protocol}, length=32)


class Record:
    """One stored rollout: its full JSON record and where its trajectory lives. Read-only.

    `data` is parsed from the index row's text on first use (a shadow Breakout record carries 3 KB of
    physics), and `outcome` alone is read without parsing the rest: a record's canonical JSON starts
    with its two first keys in sorted order, ``{"key":...,"outcome":{...}``. A packed payload is
    `payload_length` bytes at `payload_offset` in the unit file `payload_path`; a version-1 payload
    (no offset) is the whole npz file.
    """

    __slots__ = (
        "key",
        "payload_path",
        "payload_sha256",
        "payload_offset",
        "payload_length",
        "_data",
        "_text",
        "_outcome",
    )

    def __init__(
        self,
        key: str,
        data: dict[str, Any] | None = None,
        payload_path: str | None = None,
        payload_sha256: str | None = None,
        payload_offset: int | None = None,
        payload_length: int | None = None,
        *,
        text: str | None = None,
    ):
        if (data is None) == (text is None):
            raise TypeError("a Record needs its data or its JSON text")
        for name, value in (
            ("key", key),
            ("payload_path", payload_path),
            ("payload_sha256", payload_sha256),
            ("payload_offset", payload_offset),
            ("payload_length", payload_length),
            ("_data", data),
            ("_text", text),
            ("_outcome", None),
        ):
            object.__setattr__(self, name, value)

    @property
    def packed(self) -> bool:
        """Whether the payload sits in a unit file (its sha256 is then `arrays_digest`'s)."""
        return self.payload_offset is not None

    def digest_of(self, arrays: Mapping[str, np.ndarray]) -> str:
        """The sha256 this record's payload would have if it held `arrays` (for re-simulation checks)."""
        return arrays_digest(arrays) if self.packed else migrations.npz_digest(arrays)

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

    def _where(self) -> tuple:
        return (self.payload_path, self.payload_sha256, self.payload_offset, self.payload_length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.key, self.data, self._where()) == (other.key, other.data, other._where())

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return _record, (self.key, self._data, *self._where(), self._text)

    def __repr__(self) -> str:
        return (
            f"Record(key={self.key!r}, data={self.data!r}, payload_path={self.payload_path!r}, "
            f"payload_sha256={self.payload_sha256!r}, payload_offset={self.payload_offset!r}, "
            f"payload_length={self.payload_length!r})"
        )


def _record(key, data, payload_path, payload_sha256, offset, length, text) -> Record:
    return Record(key, data, payload_path, payload_sha256, offset, length, text=None if data is not None else text)


def _row_record(row) -> Record:
    return Record(row[0], None, row[2], row[3], row[4], row[5], text=row[1])


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


class DamagedPayload(BadInput):
    """A stored payload is missing, unreadable or not what its row's sha256 says: one line (exit 2)
    that names the command which finds every such row and repairs the store."""

    def __init__(self, root: Path, key: str, why: str):
        super().__init__(
            "store",
            f"the payload of {key} in {root} is damaged ({why}); run "
            f"`policylab store check {_quote(root)} --repair`, then the same command again",
        )
        self.key = key


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


class Put(NamedTuple):
    """One rollout handed to `Store.put_many`."""

    key: str
    study: str
    world: Mapping[str, Any]
    policy: Mapping[str, Any]
    protocol: Mapping[str, Any]
    outcome: Mapping[str, Any]
    payload: Mapping[str, np.ndarray] | None = None


class Store:
    """SQLite index + unit files. Writers hold SQLite's lock per transaction; readers anywhere.

    `readonly=True` never writes: the index is opened read-only where the folder cannot be written
    (an archived copy), and read without writing elsewhere.
    """

    def __init__(self, root: str | Path, *, readonly: bool = False):
        self.root = Path(root)
        self.readonly = readonly
        index = self.root / "index.sqlite"
        if readonly:
            self._db = _connect_for_reading(index)
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            if not writable(self.root) and (index.exists() or not os.access(self.root, os.W_OK)):
                raise BadInput(
                    "store",
                    f"the store {self.root} is read-only (this command writes to it: it needs "
                    f"write access to {index.name} and its folder)",
                )
            self._db = _connect(index, "rwc")
            _create(self._db)
            remove_stale_temps(self.root)
        cols = {r[1] for r in self._db.execute("PRAGMA table_info(rollouts)")}
        self._columns = migrations.row_select(cols, _ROW)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
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
        self.put_many([Put(key, study, world, policy, protocol, outcome, payload)])
        return self.require(key)

    def put_many(self, items: Sequence[Put]) -> int:
        """Write a unit's rollouts: their payloads into one unit file (`unit_file`), then their rows in
        one transaction. Keys already present (or repeated) are left untouched; returns how many were new.

        This thread shuffles and hashes the payloads while their frames are compressed on a background
        thread (`payloads.Packing`), then makes the rows' texts; the unit file is written on another
        thread while the rows are inserted, and the transaction commits once it is in place. Python's
        cycle collector waits meanwhile: a unit makes thousands of small objects, none in a cycle, and
        collections that walked the caller's whole heap took about 15% of the time (medians, measured on the
        batch path's benchmark)."""
        with _collector_paused():
            todo, seen = [], set()
            present = self._present([it.key for it in items])
            for it in items:
                if it.key not in present and it.key not in seen:
                    todo.append(it)
                    seen.add(it.key)
            if not todo:
                return 0
            blobs = encoded_payloads([it.payload for it in todo])
            rows = UnitRows(todo)
            keys = [it.key for it in todo]
            encoded = blobs()
            texts = rows.texts([None if b is None else b[1] for b in encoded])
            parts, places = unit_file.encode(keys, rows.outcomes, encoded, texts)
            path = unit_file.name(keys)
            written = thread_pool("unit-file", 1).submit(  # a write releases the GIL: rows insert meanwhile
                atomic_write_bytes, self.root / path, parts
            )
            try:
                return self._insert(rows.rows(texts, places, path), before_commit=written.result)
            finally:
                written.result()  # on an error, the file is in place or removed before it goes on up

    def commit_unit(
        self, items: Sequence[Put], places: Sequence[tuple[str, int, int] | None], path: str | None = None
    ) -> int:
        """Insert the rows of a unit whose file is in place (`path`, by default `unit_file.name` of the
        items' keys), each payload's (sha256, offset, length) in `places`, in one transaction; returns
        how many were new."""
        rows = UnitRows(items)
        texts = rows.texts([None if p is None else p[0] for p in places])
        return self._insert(rows.rows(texts, places, path or unit_file.name([it.key for it in items])))

    def commit_records(self, rows: Sequence[tuple], *, replace: bool = False) -> int:
        """Insert rows made from unit files' records (`record_row`) in one transaction; with `replace`,
        a present key's row is overwritten (`store check --repair`); returns how many rows changed."""
        return self._insert(list(rows), replace=replace)

    def _insert(
        self, rows: list[tuple], before_commit: Callable[[], Any] | None = None, *, replace: bool = False
    ) -> int:
        before = self._db.total_changes
        with self._transaction():
            self._db.executemany(
                f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO rollouts VALUES (?,?,?,?,?,?,?,?,?,?)", rows
            )
            if before_commit is not None:
                before_commit()
        return self._db.total_changes - before

    def _present(self, keys: Sequence[str]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(keys), 500):  # SQLite's bound on host parameters per statement
            part = keys[i : i + 500]
            sql = f"SELECT key FROM rollouts WHERE key IN ({','.join('?' * len(part))})"
            out.update(r[0] for r in self._db.execute(sql, part))
        return out

    def get(self, key: str) -> Record | None:
        row = self._db.execute(f"SELECT {self._columns} FROM rollouts WHERE key=?", (key,)).fetchone()
        return None if row is None else _row_record(row)

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
        sql = f"SELECT {self._columns} FROM rollouts"
        args: tuple = ()
        if study is not None:
            sql += " WHERE study=?"
            args = (study,)
        for row in self._db.execute(sql + " ORDER BY key", args):
            yield _row_record(row)

    def payload(self, key: str, *, verify: bool = True) -> dict[str, np.ndarray]:
        """The trajectory arrays of a record; with `verify`, its sha256 is checked first. A missing,
        unreadable or altered payload raises `DamagedPayload` (one line, exit 2)."""
        rec = self.require(key)
        if rec.payload_path is None:
            raise KeyError(f"record {key} has no payload")
        arrays, why = read_payload(self.root, rec, verify=verify)
        if why is not None:
            raise DamagedPayload(self.root, key, why)
        return arrays

    def fingerprint(self) -> dict[str, str | None]:
        """key -> payload sha256, for comparing two stores (resume tests, equivalence)."""
        return {r[0]: r[1] for r in self._db.execute("SELECT key, payload_sha256 FROM rollouts ORDER BY key")}

    def delete(self, keys: Sequence[str]) -> None:
        """Remove rows (`store check --repair`: the next run plays exactly these rollouts again)."""
        with self._transaction():
            self._db.executemany("DELETE FROM rollouts WHERE key=?", [(k,) for k in keys])

    def move_payloads(self, moves: Sequence[tuple[str, str, str, str, int, int]]) -> None:
        """Point rows at new payload places: (key, path, record text, sha256, offset, length) each, in one
        transaction, the text `moved_record`'s (`store pack`)."""
        with self._transaction():
            for key, path, text, sha, offset, length in moves:
                self._db.execute(
                    "UPDATE rollouts SET record=?, payload_path=?, payload_sha256=?, payload_offset=?, "
                    "payload_length=? WHERE key=?",
                    (text, path, sha, offset, length, key),
                )

    # -- run configs --------------------------------------------------------------------------
    def get_meta(self, name: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, name: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?,?)", (name, canonical_json(value)))

    @contextmanager
    def exclusive(self) -> Iterator[Store]:
        """Hold the store's write lock from a check of its meta to the write it decides, so two runs
        cannot both pass the check (the second waits, then sees what the first wrote)."""
        with self._transaction():
            yield self

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._db.in_transaction:  # inside `exclusive`: its transaction holds the lock already
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        return int(self.get_meta(SCHEMA_META) or 1)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block, if it was on (nested blocks leave it to the outer)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class UnitRows:
    """The index rows of a unit's rollouts. A record is the canonical JSON of `{key, outcome,
    payload_sha256, policy, policy_hash, protocol, provenance, study, world, world_hash}`, written
    field by field in that (sorted) order, each part's text made once and its hash taken from that
    text. The fields from policy to study are one text for all rollouts that share a policy and a
    protocol object and a study (a unit's rollouts mostly do), made once per unit; the outcome's
    text is made here once, for the unit file's trailer and the record alike; the outcomes' and
    worlds' texts are made while the payloads' frames are compressed, the digests only in `texts`.
    `provenance` is the writing driver's (`provenance.record`): a worker that writes a unit file
    for the driver is handed it, so the file's records are the rows the driver commits."""

    def __init__(self, items: Sequence[Put], provenance: FrozenJSON | None = None):
        self.items = items
        self.outcomes = [canonical_json(it.outcome if type(it.outcome) is dict else dict(it.outcome)) for it in items]
        self.worlds = [_spliced(it.world) for it in items]
        self.provenance = (provenance if provenance is not None else frozen_provenance()).canonical

    def texts(self, shas: Sequence[str | None]) -> list[str]:
        """The records' texts, each naming its payload's sha256 (None: no payload)."""
        middles: dict[tuple, str] = {}  # by the objects' ids: the items hold them, so no id is reused here
        out = []
        for it, outcome, world, sha in zip(self.items, self.outcomes, self.worlds, shas):
            middle = middles.get((id(it.policy), id(it.protocol), it.study))
            if middle is None:
                policy, protocol = _spliced(it.policy), _spliced(it.protocol)
                middle = middles[(id(it.policy), id(it.protocol), it.study)] = (
                    f',"policy":{policy.text},"policy_hash":"{policy.hash}","protocol":{protocol.text},'
                    f'"provenance":{self.provenance},"study":{json_string(it.study)}'
                )
            out.append(
                f'{{"key":{json_string(it.key)},"outcome":{outcome},'
                f'"payload_sha256":{"null" if sha is None else json_string(sha)}{middle},'
                f'"world":{world.text},"world_hash":"{world.hash}"}}'
            )
        return out

    def rows(self, texts: Sequence[str], places: Sequence[tuple[str, int, int] | None], path: str) -> list[tuple]:
        return [
            (*_columns(it.key, it.study, it.world, it.policy), text, *_where(place, path))
            for it, text, place in zip(self.items, texts, places)
        ]


def _columns(key: str, study: str, world: Mapping[str, Any], policy: Mapping[str, Any]) -> tuple:
    """A row's columns before its record: what reports filter by, taken from the record's parts."""
    return key, study, str(world.get("env", "")), str(policy.get("name", "")), int(world.get("seed", -1))


def _where(place: tuple[str, int, int] | None, path: str) -> tuple:
    """A row's payload columns: (path, sha256, offset, length), all None without a payload."""
    return (None, None, None, None) if place is None else (path, *place)


def record_row(text: str, place: tuple[str, int, int] | None, path: str) -> tuple:
    """The index row of a record's text (a unit file's, `unit_file.parse`) whose payload lies at
    `place` ((sha256, offset, length) in the unit file `path`, or None)."""
    data = json.loads(text)
    return (*_columns(data["key"], data["study"], data["world"], data["policy"]), text, *_where(place, path))


def places_of(entries: Sequence[list]) -> list[tuple[str, int, int] | None]:
    """Per entry of a unit file's trailer its payload's (sha256, offset, length), or None."""
    return [None if e[2] is None else (e[4], e[2], e[3]) for e in entries]


class _Spliced:
    """A part of a record with its canonical JSON, made once, and the hash of that text."""

    __slots__ = ("text", "hash")

    def __init__(self, text: str):
        self.text = text
        self.hash = sha256_hex(text.encode())[:16]


def _spliced(obj: Mapping[str, Any]) -> _Spliced:
    return _Spliced(obj.canonical if isinstance(obj, FrozenJSON) else canonical_json(obj))


def encoded_payloads(
    payloads: Sequence[Mapping[str, np.ndarray] | None],
) -> Callable[[], list[tuple[Any, str] | None]]:
    """Per payload (None for none) its (packed bytes or their parts, sha256), made once: an
    `EncodedArrays` carries them already, the rest are packed (`payloads.Packing`: shuffled and hashed
    now, their frames compressed on a background thread). Returns a function that waits for the
    frames, so the caller does its own work meanwhile."""
    todo = [i for i, p in enumerate(payloads) if p is not None and not isinstance(p, EncodedArrays)]
    packing = Packing([payloads[i] for i in todo])

    def wait() -> list[tuple[Any, str] | None]:
        out: list = [(p.packed, p.digest) if isinstance(p, EncodedArrays) else None for p in payloads]
        for i, packed in zip(todo, packing.result()):
            out[i] = packed
        return out

    return wait


def read_payload(
    root: Path, rec: Record, *, verify: bool = True, blob: bytes | None = None
) -> tuple[dict[str, np.ndarray] | None, str | None]:
    """(arrays, None) or (None, why the payload is damaged). `blob` is the unit file's bytes when the
    caller has read them already (`store check` reads each unit file once)."""
    path = root / rec.payload_path
    try:
        if not rec.packed:
            return migrations.npz_payload(path.read_bytes(), rec.payload_sha256, verify=verify)
        if blob is None:
            with open(path, "rb") as f:
                f.seek(rec.payload_offset)
                part = f.read(rec.payload_length)
        else:
            part = blob[rec.payload_offset : rec.payload_offset + rec.payload_length]
        if len(part) != rec.payload_length:
            return None, f"{rec.payload_path} is shorter than its index says"
        arrays = unpack_arrays(part)
    except FileNotFoundError:
        return None, f"{rec.payload_path} is missing"
    except (OSError, ValueError, KeyError, EOFError) as exc:
        return None, f"{rec.payload_path} is unreadable: {exc}"
    if verify and arrays_digest(arrays) != rec.payload_sha256:
        return None, "sha256 differs from its record"
    return arrays, None


# -- opening ------------------------------------------------------------------------------------
# Durability (docs/design.md, "The store"): WAL with synchronous=NORMAL, so a commit (one unit's
# rows) is atomic and survives a killed process; a power cut may lose the units committed since SQLite
# last synced its log (when it checkpoints it into the index), never part of one. Pages of 16 KB, not
# SQLite's 4 KB: a row is about 1 KB of record, so a 4 KB page holds three and a unit's rows split
# hundreds of pages; measured, 16 KB pages cut the insert, commit and checkpoint time per row by
# about 40% and read rows as fast (it applies to an index made now; an older one keeps its pages).
PAGE_SIZE = 16384


def _connect(index: Path, mode: str, extra: str = "") -> sqlite3.Connection:
    """A connection to a store's index; a database that is not a store's is refused before anything
    is written to it (`not_a_store`), a damaged one with SQLite's words (`IndexDamaged`)."""
    try:
        db = sqlite3.connect(
            f"{index.resolve().as_uri()}?mode={mode}{extra}", uri=True, isolation_level=None, timeout=120
        )
        why = not_a_store(db)
        if why is not None:
            db.close()
            raise BadInput("store", f"{index} is not a policylab store index ({why}); it was left as it is")
        if mode == "rwc":
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before WAL: a WAL index keeps its page size
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        raise IndexDamaged(index, str(exc)) from None
    return db


# A store's tables and the columns every schema version has (`migrations` reads what version 1 lacks).
_STORE_TABLES = {
    "rollouts": {"key", "study", "env", "policy", "seed", "record", "payload_path", "payload_sha256"},
    "meta": {"name", "value"},
}


def not_a_store(db: sqlite3.Connection) -> str | None:
    """Why an SQLite database is not a store's index (it holds another program's tables), or None: a
    store's, or empty (a creation that was killed, completed when opened)."""
    tables = sorted(t for t in _tables(db) if not t.startswith("sqlite_"))
    other = [t for t in tables if t not in _STORE_TABLES]
    if other:
        return f"it holds other tables: {', '.join(other[:5])}"
    for table in tables:
        columns = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        if not _STORE_TABLES[table] <= columns:
            return f"its {table} table lacks {', '.join(sorted(_STORE_TABLES[table] - columns))}"
    return None


class IndexDamaged(BadInput):
    """An index SQLite cannot read (not a database, or a damaged page): one line (exit 2) naming the
    command that rebuilds it from the store's unit files."""

    def __init__(self, index: Path, why: str):
        super().__init__(
            "store",
            f"{index} is not a store index or is damaged ({why}); run `policylab store "
            f"check {_quote(index.parent)} --repair` to rebuild it from the store's unit "
            "files, then the same command again",
        )
        self.why = why


def write_index(path: Path, rows: Sequence[tuple], meta: Sequence[tuple[str, str]]) -> None:
    """A complete index at `path` (a new file) holding `rows` (all ten columns) and `meta`, in one
    transaction after its schema (`store check --repair` rebuilding a damaged index)."""
    db = _connect(path, "rwc")
    try:
        _create(db)
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT OR IGNORE INTO rollouts VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        db.executemany("INSERT OR IGNORE INTO meta VALUES (?,?)", meta)
        db.execute("COMMIT")
    finally:
        db.close()


def _create(db: sqlite3.Connection) -> None:
    """The schema in one transaction, an older index brought up to it (`migrations.upgrade_sql`)."""
    upgrade = migrations.upgrade_sql({r[1] for r in db.execute("PRAGMA table_info(rollouts)")})
    version = (
        db.execute("SELECT value FROM meta WHERE name=?", (SCHEMA_META,)).fetchone() if "meta" in _tables(db) else None
    )
    if version is not None and not upgrade and "rollouts" in _tables(db):
        return
    try:
        db.executescript(_SCHEMA.format(upgrade=upgrade, meta=SCHEMA_META, version=SCHEMA_VERSION))
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _connect_for_reading(index: Path) -> sqlite3.Connection:
    """Read without writing: where the index and its folder can be written, opened read-write and only
    read (closing the last connection then removes the -wal/-shm files SQLite makes, which a
    read-only connection would leave behind); elsewhere read-only, or immutable where SQLite cannot
    even make its shared-memory file (a read-only folder)."""
    if not index.is_file():
        raise BadInput("store", f"no store at {index.parent} (expected {index})")
    if os.access(index, os.W_OK) and os.access(index.parent, os.W_OK):
        db = _connect(index, "rw")
        if not {"rollouts", "meta"} <= _tables(db):  # a creation that was killed: complete it
            _create(db)
        return db
    try:
        db = _connect(index, "ro")
    except BadInput:
        db = _connect(index, "ro", "&immutable=1")
    if not {"rollouts", "meta"} <= _tables(db):
        raise BadInput("store", f"{index} was never completed (its creation was killed) and is read-only")
    return db


def index_problem(root: Path, *, damaged_ok: bool = False) -> str | None:
    """Why `root` does not hold a store index, or None (a half-made index counts: it is completed on
    open; with `damaged_ok`, so does an index SQLite cannot read, for `store check`). For request
    validators, which name the field."""
    index = root / "index.sqlite"
    if not index.is_file():
        return f"no store at {root} (expected {index})"
    try:
        with Store(root, readonly=True):
            return None
    except IndexDamaged as exc:
        return None if damaged_ok else exc.message
    except BadInput as exc:
        return exc.message


# -- temp files of killed writers ----------------------------------------------------------------
_TEMP = re.compile(r"^\..+\.(\d+)-\d+-[0-9a-f]+(?:@(.+))?\.tmp$")


def temp_files(root: Path) -> Iterator[tuple[Path, bool]]:
    """(path, whether its writer is gone) for every temp file under the store's folders. A temp name
    carries its writer's pid (and host, for a worker's unit file), so a live writer's is kept. Only
    plain files count: a writer makes nothing else, so a folder or link that happens to match the
    name is someone else's."""
    folders = [root, root / UNITS, *migrations.npz_folders(root)]
    host = socket.gethostname()
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for entry in entries:
            m = _TEMP.match(entry.name)
            if m is None or not entry.is_file(follow_symlinks=False):
                continue
            same_host = m.group(2) is None or m.group(2) == host
            yield Path(entry.path), same_host and not _alive(int(m.group(1)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(root: Path) -> int:
    n = 0
    for path, stale in temp_files(root):
        if stale:
            path.unlink(missing_ok=True)
            n += 1
    return n


def writable(root: Path) -> bool:
    """Whether this process may write the store at `root` (its index and its folder)."""
    return os.access(root / "index.sqlite", os.W_OK) and os.access(root, os.W_OK)
