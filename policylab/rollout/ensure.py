"""The one loop that turns planned rollouts into store records: run only what is missing.

docs/design.md, "Vocabulary" (planned rollout) and "The store"; the writer and resumption: its "Module notes"."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from policylab.interrupts import check, deferred
from policylab.progress import say, tally
from policylab.rollout import migrations, unit_file
from policylab.rollout.executors import run_tasks
from policylab.rollout.payloads import EncodedArrays, arrays_digest, unpack_arrays
from policylab.rollout.store import (
    Put,
    Record,
    Store,
    UnitRows,
    encoded_payloads,
    frozen_provenance,
    places_of,
    record_row,
    remove_stale_temps,
    rollout_key,
)

Outcome = Mapping[str, Any]
Payload = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Planned:
    """A rollout before it runs: what its record will say it is.

    The key hashes `world`, `policy` and `protocol` only. `labels` are names a person gave the world
    (a preset's name): the record's world keeps them, the key does not, so equal physics under two
    names are one rollout. `detail` carries whatever the runner needs to simulate it (a task, a
    world) and is not part of the record. `former_worlds` is the same world as earlier key versions
    hash it (docs/design.md, "Key versions"): a record stored under one of their keys is this rollout's
    (`migrations.stored_under_former_keys`).
    """

    study: str
    world: Mapping[str, Any]
    policy: Mapping[str, Any]
    protocol: Mapping[str, Any]
    labels: Mapping[str, Any] = field(default_factory=dict)
    detail: Any = None
    former_worlds: tuple[Mapping[str, Any], ...] = ()

    @cached_property
    def key(self) -> str:  # hashed once: ensure, the writer and summaries all ask for it
        return rollout_key(self.world, self.policy, self.protocol)

    @property
    def former_keys(self) -> list[str]:
        return [rollout_key(w, self.policy, self.protocol) for w in self.former_worlds]

    def put(self, outcome: Outcome | None, payload: Payload | None = None) -> Put:
        """What the store is handed for this rollout: its record's world carries the labels."""
        return Put(self.key, self.study, {**self.world, **self.labels}, self.policy, self.protocol, outcome, payload)


class BatchRunner(Protocol):
    """How one environment family runs planned rollouts.

    `pack` groups the missing rollouts into units and returns, per unit, the picklable work that
    `run` (a module-level function, so process pools and Ray can ship it) turns into one
    (outcome, payload) per rollout of the unit, in the unit's order.
    """

    run: Callable[[Any], Sequence[tuple[Outcome, Payload | None]]]

    def pack(self, todo: Sequence[Planned]) -> list[tuple[list[Planned], Any]]: ...


@dataclass
class EnsureStats:
    """What one `ensure` call did (wall times live only in timing files, never in reports)."""

    planned: int = 0
    present: int = 0
    ran: int = 0
    units: int = 0
    adopted: int = 0  # rollouts committed from unit files found in the store, not run
    write_s: float = 0.0


@dataclass(frozen=True)
class WrittenUnit:
    """What a worker that wrote its unit's file hands back: per rollout its outcome and its payload's
    (sha256, offset, length) in the file (None without a payload)."""

    outcomes: list
    places: list

    def __len__(self) -> int:
        return len(self.outcomes)


def run_and_write(task: tuple) -> WrittenUnit:
    """Run a unit in a worker and write its unit file under the store root (`base`, a folder or an
    fsspec URL); module-level, so process pools and Ray can ship it. The task carries the unit's
    `Planned` rollouts and the driver's provenance, so the file's records are the rows the driver
    then commits (`Store.commit_unit`)."""
    run, work, base, unit, provenance = task
    results = run(work)
    if len(results) != len(unit):
        raise RuntimeError(f"a unit of {len(unit)} rollouts returned {len(results)} results")
    outcomes = [outcome for outcome, _ in results]
    rows = UnitRows([p.put(o) for p, o in zip(unit, outcomes)], provenance)
    blobs = encoded_payloads([payload for _, payload in results])()
    texts = rows.texts([None if b is None else b[1] for b in blobs])
    keys = [p.key for p in unit]
    parts, places = unit_file.encode(keys, rows.outcomes, blobs, texts)
    unit_file.write(base, unit_file.name(keys), parts)
    return WrittenUnit(outcomes, places)


def _encoding(results: Sequence[tuple[Outcome, Payload | None]]) -> list[tuple[Outcome, Payload | None]]:
    """A unit's payloads, their packing started on the encoder threads (`payloads.pack_in_background`):
    it overlaps the next unit's simulation instead of filling the writer's time."""
    todo = [i for i, (_, p) in enumerate(results) if p is not None and not isinstance(p, EncodedArrays)]
    encoded = dict(zip(todo, EncodedArrays.in_background([results[i][1] for i in todo])))
    return [(o, encoded.get(i, p)) for i, (o, p) in enumerate(results)]


def adopt_unit_files(store: Store, todo: Sequence[Planned]) -> set[str]:
    """Commit the rollouts of `todo` that a unit file in the store already holds (a worker wrote it,
    its rows were not committed): per file whose trailer names planned keys and whose payloads'
    digests check, their rows in one transaction, each the file's own record (a file of the first
    layout has none: the row is made from the plan). Returns the keys committed."""
    by_key = {p.key: p for p in todo}
    folder = store.root / unit_file.UNITS
    adopted: set[str] = set()
    if not by_key or not folder.is_dir():
        return adopted
    for rel in sorted(f"{unit_file.UNITS}/{e.name}" for e in os.scandir(folder) if e.name.endswith(".pack")):
        try:
            entries = unit_file.trailer_of(store.root / rel)
        except (OSError, ValueError):
            continue
        mine = [e for e in entries if e[0] in by_key and e[0] not in adopted]
        if not mine:
            continue
        data = (store.root / rel).read_bytes()
        if any(e[2] is not None and not digest_checks(data, e) for e in mine):
            continue
        try:
            unit = unit_file.parse(data)
        except ValueError:
            continue
        if unit.records is None:
            store.commit_unit([by_key[e[0]].put(e[1]) for e in mine], places_of(mine), path=rel)
        else:
            text = dict(zip((e[0] for e in unit.entries), unit.records))
            store.commit_records([record_row(text[e[0]], place, rel) for e, place in zip(mine, places_of(mine))])
        adopted.update(e[0] for e in mine)
    return adopted


def digest_checks(data: bytes, entry: list) -> bool:
    """Whether a unit file's payload (its trailer `entry`'s) holds arrays of the entry's sha256."""
    _, _, offset, length, sha = entry
    try:
        return arrays_digest(unpack_arrays(data[offset : offset + length])) == sha
    except ValueError:
        return False


FILE_ROLLOUTS = 1000  # the local writer gathers finished units into one unit file until it holds this many,
GATHER_S = 1.0  # or until its first unit has waited this long (or units come further apart: nothing to gather)


class _Writer:
    """One background thread that owns its own store connection and writes finished units.

    Units the driver ran itself are gathered until they hold `FILE_ROLLOUTS` rollouts (a shadow
    Breakout unit holds 256 and takes about 0.1 s) or the first has waited `GATHER_S`, then written
    as one file and one transaction, so a store holds about one payload file per thousand rollouts;
    a kill loses the gathered rollouts too (about a second of simulation), never part of a record.
    Slow units (a boundary chunk takes seconds) are written as they come, and units a worker wrote
    are committed as they come.
    """

    def __init__(self, root: Path):
        self._root = root
        self._pool = ThreadPoolExecutor(1)
        self._pending: Future | None = None
        self._local = threading.local()
        self._gathered: list[Put] = []
        self._file_rollouts = FILE_ROLLOUTS
        self._first_t = self._last_t = time.monotonic()
        self.busy_s = 0.0

    def _store(self) -> Store:
        if not hasattr(self._local, "store"):
            self._local.store = Store(self._root)
        return self._local.store

    def _write(self, unit: list[Planned], results: Sequence[tuple[Outcome, Payload | None]] | WrittenUnit) -> None:
        t0 = time.perf_counter()
        if len(results) != len(unit):
            raise RuntimeError(f"a unit of {len(unit)} rollouts returned {len(results)} results")
        if isinstance(results, WrittenUnit):  # the worker wrote the unit file: the rows alone
            self._store().commit_unit([p.put(outcome) for p, outcome in zip(unit, results.outcomes)], results.places)
            tally.add(len(unit))
        else:
            now = time.monotonic()
            if not self._gathered:
                self._first_t = now
            slow = now - self._last_t >= GATHER_S
            self._last_t = now
            self._gathered += [p.put(outcome, payload) for p, (outcome, payload) in zip(unit, results)]
            if slow or len(self._gathered) >= self._file_rollouts or now - self._first_t >= GATHER_S:
                self._flush()
        self.busy_s += time.perf_counter() - t0

    def _flush(self) -> None:
        if self._gathered:
            items, self._gathered = self._gathered, []
            self._store().put_many(items)
            tally.add(len(items))

    def submit(self, unit: list[Planned], results) -> None:
        self.wait()
        self._pending = self._pool.submit(self._write, unit, results)

    def wait(self) -> None:
        if self._pending is not None:
            self._pending.result()
            self._pending = None

    def close(self) -> None:
        try:
            self.wait()
        finally:
            try:
                self._pool.submit(self._timed_flush).result()
            finally:
                self._pool.submit(self._close_store).result()
                self._pool.shutdown()

    def _timed_flush(self) -> None:
        t0 = time.perf_counter()
        self._flush()
        self.busy_s += time.perf_counter() - t0

    def _close_store(self) -> None:
        if hasattr(self._local, "store"):
            self._local.store.close()


def ensure(
    store: Store,
    planned: Sequence[Planned],
    runner: BatchRunner,
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    label: str = "rollouts",
    unit: str = "batch",
    max_units: int | None = None,
    stats: EnsureStats | None = None,
) -> dict[str, Record]:
    """Run every planned rollout the store lacks; return {key: record} for all of them.

    `max_units` stops after that many units (a deliberate interruption, for resume tests); the
    records of rollouts not run are then missing from the result. A rollout whose record the store
    holds under a former key (`Planned.former_worlds`) is not run; the result maps its key to that record.
    """
    stats = stats if stats is not None else EnsureStats()
    keys = [p.key for p in planned]
    present = set(store.keys())
    todo, seen = [], set()
    for k, p in zip(keys, planned):
        if k not in present and k not in seen:
            todo.append(p)
            seen.add(k)
    stored_as = migrations.stored_under_former_keys({p.key: p.former_keys for p in todo if p.former_worlds}, present)
    todo = [p for p in todo if p.key not in stored_as]
    if todo:
        adopted = adopt_unit_files(store, todo)
        if adopted:
            stats.adopted = len(adopted)
            todo = [p for p in todo if p.key not in adopted]
    units = runner.pack(todo) if todo else []
    if max_units is not None:
        units = units[:max_units]
    stats.planned, stats.present, stats.units = len(planned), len(planned) - len(todo), len(units)
    adopted_note = f" ({stats.adopted} committed from unit files already written)" if stats.adopted else ""
    say(
        f"{label}: {len(planned)} planned, {stats.present} in the store{adopted_note}, "
        f"{sum(len(u) for u, _ in units)} to run"
    )
    tally.start(label, len(planned), stats.present)
    writer = _Writer(store.root)
    if executor == "local":
        fn, tasks = runner.run, [work for _, work in units]
    else:  # workers write their units' files; the driver commits rows
        base = str(store.root.resolve())
        provenance = frozen_provenance()
        fn, tasks = run_and_write, [(runner.run, work, base, u, provenance) for u, work in units]
    try:
        for i, results in run_tasks(
            fn, tasks, executor=executor, workers=workers, ray_address=ray_address, label=label, unit=unit
        ):
            with deferred():  # a finished unit always reaches the writer; run_tasks raises a signal noted here
                writer.submit(units[i][0], results if isinstance(results, WrittenUnit) else _encoding(results))
                stats.ran += len(results)
        check()
    finally:
        writer.close()
        if executor != "local":  # a worker stopped mid-write leaves its temp file; its process is gone now
            remove_stale_temps(store.root)
    stats.write_s = writer.busy_s
    out = {}
    for k in keys:
        rec = store.get(stored_as.get(k, k))
        if rec is not None:
            out[k] = rec
    return out
