"""`policylab store check` and `policylab store pack`: verify and repair a store from its unit files; pack npz stores.

What is checked and repaired: docs/design.md, "The store" (Damage, Versions). Run it while nothing writes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import NamedTuple

from policylab.fileio import atomic_write_bytes
from policylab.hashing import canonical_json
from policylab.rollout import migrations, unit_file
from policylab.rollout.ensure import digest_checks
from policylab.rollout.payloads import pack_arrays
from policylab.rollout.store import (
    UNITS,
    IndexDamaged,
    Record,
    Store,
    places_of,
    read_payload,
    record_row,
    temp_files,
    write_index,
)

PACK_UNIT = 1000  # rollouts per unit file when a version-1 store is packed
INDEX = "index.sqlite"
DAMAGED_INDEX = "index.damaged.sqlite"  # where repair keeps an index it replaced (and its -wal, -shm)
_ROW_SQL = "key, study, env, policy, seed, record, payload_path, payload_sha256, payload_offset, payload_length"


class _Read(NamedTuple):
    """What the index holds: its rows (all ten columns) and meta, as far as they read, and its damage."""

    rows: dict[str, tuple]
    meta: list[tuple]
    damage: list[str]


def check_store(root: Path, *, repair: bool = False) -> dict:
    """Verify the index, every row and every payload of the store at `root`; with `repair`, rebuild
    from the unit files what they hold and remove what is damaged beyond that. Returns the findings
    (sorted, so the same store gives the same report)."""
    temps = sorted((str(p.relative_to(root)), stale) for p, stale in temp_files(root))  # before an open removes them
    index = _read_index(root)
    blobs, units = _read_units(root)
    checked: dict[tuple, str | None] = {}  # (path, offset, length, sha256) -> why its payload is damaged, or None

    def payload_why(rec: Record) -> str | None:
        place = (rec.payload_path, rec.payload_offset, rec.payload_length, rec.payload_sha256)
        if place not in checked:
            blob = blobs.get(rec.payload_path)
            checked[place] = (
                f"{rec.payload_path} is missing"
                if rec.packed and blob is None
                else read_payload(root, rec, blob=blob)[1]
            )
        return checked[place]

    # every intact rollout a unit file holds, by key: (path, entry, record text or None), the first file by name
    held: dict[str, tuple[str, list, str | None]] = {}
    for rel, unit in sorted(units.items()):
        for entry, text in zip(unit.entries, unit.records or [None] * len(unit.entries)):
            if entry[0] in held:
                continue
            if entry[2] is not None:
                place = (rel, entry[2], entry[3], entry[4])
                if place not in checked:
                    checked[place] = None if digest_checks(blobs[rel], entry) else "sha256 differs from its trailer"
                if checked[place] is not None:
                    continue
            held[entry[0]] = (rel, entry, text)

    damaged: dict[str, str] = {}
    for key, row in index.rows.items():
        rec = Record(row[0], None, *row[6:], text=row[5])
        why = payload_why(rec) if rec.payload_path is not None else None
        damaged_why = why or _row_differs(row, rec, units, held)
        if damaged_why is not None:
            damaged[key] = damaged_why
    # what a unit file's record puts back: damaged rows and rollouts the index lacks
    restore = {
        k: record_row(text, places_of([e])[0], rel)
        for k, (rel, e, text) in held.items()
        if text is not None and (k in damaged or k not in index.rows)
    }
    kept = {k: row for k, row in index.rows.items() if k not in damaged}
    final = {**kept, **restore}
    awaiting = sorted({rel for k, (rel, _, text) in held.items() if text is None and k not in final})
    needed = {row[6] for row in final.values() if row[6] is not None}
    needed |= {held[k][0] for k in final if k in held and final[k][6] is None}  # a payload-less rollout's record
    needed |= set(awaiting)
    pointed = {row[6] for row in index.rows.values()}
    unneeded = [rel for rel in _payload_files(root) if rel not in needed]
    bad_files = [rel for rel in unneeded if rel in pointed]  # every row in it is damaged
    orphans = [rel for rel in unneeded if rel not in pointed]
    if repair:
        if index.damage:
            _rebuild(root, sorted(final.values()), index.meta)
        else:
            with Store(root) as store:
                store.delete(sorted(k for k in damaged if k not in restore))
                store.commit_records([restore[k] for k in sorted(restore)], replace=True)
        for rel in bad_files + orphans:
            (root / rel).unlink(missing_ok=True)
        for rel, stale in temps:
            if stale:
                (root / rel).unlink(missing_ok=True)
    return {
        "store": str(root),
        "rows": len(index.rows),
        "payloads": sum(1 for row in index.rows.values() if row[6] is not None),
        "index_damage": index.damage,
        "damaged": [{"key": k, "why": damaged[k], "restorable": k in restore} for k in sorted(damaged)],
        "unindexed": sorted(k for k in restore if k not in index.rows),
        "awaiting_rerun": awaiting,
        "bad_unit_files": bad_files,
        "orphans": orphans,
        "temp_files": [{"path": rel, "writer_gone": stale} for rel, stale in temps],
        "repaired": repair,
    }


def _row_differs(row: tuple, rec: Record, units: dict, held: dict) -> str | None:
    """Why a row is not what its unit file and its own record say, or None (its unit file holds it
    alike, or no unit file names it: a version-1 row, checked by its payload's sha256 alone)."""
    try:
        data = rec.data
        columns = (
            data["key"],
            data["study"],
            str(data["world"].get("env", "")),
            str(data["policy"].get("name", "")),
            int(data["world"].get("seed", -1)),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return "its record is not a record's JSON"
    if columns != tuple(row[:5]):
        return "its columns differ from its record"
    if rec.payload_path is not None and rec.payload_path in units:
        unit = units[rec.payload_path]
        found = next((i for i, e in enumerate(unit.entries) if e[0] == rec.key), None)
        if found is None:
            return f"{rec.payload_path} does not name it"
        entry, text = unit.entries[found], None if unit.records is None else unit.records[found]
    elif rec.payload_path is None and rec.key in held:
        rel, entry, text = held[rec.key]
    else:
        return None
    if places_of([entry])[0] != (
        None if rec.payload_path is None else (rec.payload_sha256, rec.payload_offset, rec.payload_length)
    ):
        return "its payload's place differs from its unit file's"
    if text is not None:
        return None if text == row[5] else "its record differs from its unit file's"
    return (
        None
        if canonical_json(entry[1]) == canonical_json(data.get("outcome"))
        else "its outcome differs from its unit file's"
    )


def _read_units(root: Path) -> tuple[dict[str, bytes], dict[str, unit_file.Unit]]:
    """Every unit file under the store, read once: ({path: its bytes}, {path: its trailer and records}
    for those whose trailer and records read)."""
    blobs, units = {}, {}
    for rel in _payload_files(root):
        if rel.startswith(f"{UNITS}/"):
            blobs[rel] = (root / rel).read_bytes()
            try:
                units[rel] = unit_file.parse(blobs[rel])
            except (ValueError, UnicodeDecodeError):
                pass
    return blobs, units


def _read_index(root: Path) -> _Read:
    """The index's rows and meta as far as SQLite reads them, and what is wrong with it (one line each)."""
    if not (root / INDEX).is_file():
        return _Read({}, [], [f"{INDEX} is missing"])
    try:
        with Store(root, readonly=True) as store:
            db = store._db
            try:
                damage = [f"{INDEX}: {r[0]}" for r in db.execute("PRAGMA integrity_check(20)") if r[0] != "ok"]
            except sqlite3.DatabaseError as exc:
                damage = [f"{INDEX}: {exc}"]
            try:
                cols = {r[1] for r in db.execute("PRAGMA table_info(rollouts)")}
            except sqlite3.DatabaseError:
                cols = set()
            sql = migrations.row_select(cols, _ROW_SQL)
            rows, lost = _salvage(db, f"SELECT rowid, {sql} FROM rollouts NOT INDEXED")
            meta, lost_meta = _salvage(db, "SELECT rowid, name, value FROM meta NOT INDEXED")
            if (lost or lost_meta) and not damage:
                damage = [f"{INDEX}: rows do not read"]
            return _Read({r[0]: r for r in rows}, meta, damage)
    except IndexDamaged as exc:
        return _Read({}, [], [f"{INDEX}: {exc.why}"])


def _salvage(db: sqlite3.Connection, select: str) -> tuple[list[tuple], bool]:
    """The rows of a `SELECT rowid, ...` that read, in rowid order, stepping over unreadable pages, and
    whether any did not read."""
    out: list[tuple] = []
    start, lost = -(2**63), False
    while start is not None:
        try:
            for row in db.execute(f"{select} WHERE rowid >= ? ORDER BY rowid", (start,)):
                out.append(row[1:])
                start = row[0] + 1
            return out, lost
        except sqlite3.DatabaseError:
            lost = True
            start = _next_readable(db, select, start)
    return out, lost


def _next_readable(db: sqlite3.Connection, select: str, start: int) -> int | None:
    """The least rowid from which a scan starts without error, past `start` (where one failed): probes
    at doubling distances, then halves back to the first start that reads; None past the last row."""

    def reads(at: int) -> bool:
        try:
            db.execute(f"{select} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (at,)).fetchall()
            return True
        except sqlite3.DatabaseError:
            return False

    failed, step = start, 1
    while not reads(failed + step):
        failed += step
        step *= 2
        if failed + step >= 2**63:
            return None
    ok = failed + step
    while ok - failed > 1:
        mid = (failed + ok) // 2
        failed, ok = (failed, mid) if reads(mid) else (mid, ok)
    return ok


def _rebuild(root: Path, rows: list[tuple], meta: list[tuple]) -> None:
    """A new index of `rows` and `meta`, written under a temp name and renamed into the damaged one's
    place once complete; the damaged index (and its -wal and -shm) is kept as `DAMAGED_INDEX`."""
    import uuid

    tmp = root / f".{INDEX}.{os.getpid()}-0-{uuid.uuid4().hex}.tmp"  # a temp name: removed if this is killed
    try:
        write_index(tmp, rows, meta)
        for suffix in ("-wal", "-shm", ""):
            if (root / f"{INDEX}{suffix}").exists():
                os.replace(root / f"{INDEX}{suffix}", root / f"{DAMAGED_INDEX}{suffix}")
        os.replace(tmp, root / INDEX)
    finally:
        tmp.unlink(missing_ok=True)


def _payload_files(root: Path) -> list[str]:
    """Every payload file under the store (unit files and version-1 npz files), relative to it."""
    out = []
    units = root / UNITS
    if units.is_dir():
        out += [f"{UNITS}/{e.name}" for e in os.scandir(units) if e.name.endswith(".pack")]
    return sorted(out + migrations.npz_files(root))


def pack_store(root: Path) -> dict:
    """Move every version-1 payload (one npz per rollout) into unit files of `PACK_UNIT` rollouts, in
    key order: each unit file is written, its rows repointed in one transaction, then its npz files
    removed, so a kill at any point leaves a readable store (rerun to finish). A row's sha256 becomes
    its arrays' digest; its arrays are checked against its old sha256 first, and a damaged one stops
    the pack with the check command named."""
    moved = 0
    with Store(root) as store:
        npz = migrations.npz_records(store.records())
        for i in range(0, len(npz), PACK_UNIT):
            part = npz[i : i + PACK_UNIT]
            arrays = [store.payload(r.key) for r in part]  # DamagedPayload (exit 2) names `store check`
            keys = [r.key for r in part]
            blobs = [pack_arrays(a) for a in arrays]
            texts = [migrations.moved_record(r, sha) for r, (_, sha) in zip(part, blobs)]
            parts, places = unit_file.encode(keys, [canonical_json(r.outcome) for r in part], blobs, texts)
            rel = unit_file.name(keys)
            atomic_write_bytes(root / rel, parts)
            store.move_payloads([(key, rel, text, *place) for key, text, place in zip(keys, texts, places)])
            for rec in part:
                (root / rec.payload_path).unlink(missing_ok=True)
            moved += len(part)
    migrations.remove_empty_npz_folders(root)
    return {"store": str(root), "packed": moved, "unit_files": -(-moved // PACK_UNIT)}
