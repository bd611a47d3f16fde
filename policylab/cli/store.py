"""`policylab store check / pack` and `policylab export`: the store itself, whatever study wrote it
(docs/design.md, "The store")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import AfterValidator, Field

from policylab.cli.command import command
from policylab.config import Request, check_out_dir, resolved
from policylab.result import Result


def _is_store(path: Path) -> Path:
    from policylab.rollout.store import index_problem

    path = resolved(path)
    why = index_problem(path)
    if why is not None:
        raise ValueError(why)
    return path


def _parquet_file(path: Path) -> Path:
    path = resolved(path)
    if path.suffix != ".parquet":
        raise ValueError(f"{path} does not end in .parquet")
    if path.is_dir():
        raise ValueError(f"{path} is a folder")
    check_out_dir(path.parent)
    return path


def _checkable(path: Path) -> Path:
    """A store folder, its index perhaps damaged or lost (check says so; --repair rebuilds it from
    the unit files). A database that is not a store's is refused, untouched."""
    from policylab.rollout.store import index_problem
    from policylab.rollout.unit_file import UNITS

    if not (path / "index.sqlite").exists() and (path / UNITS).is_dir():
        return path
    why = index_problem(path, damaged_ok=True)
    if why is not None:
        raise ValueError(why)
    return path


StoreDir = Annotated[Path, AfterValidator(_is_store)]
STORE = Field(description="Store folder (holds index.sqlite).", json_schema_extra={"argument": True})


class CheckRequest(Request):
    """Verify a store: SQLite's integrity check of its index, every row against its unit file's
    record (so an edited row is damage), and every payload (exists, readable, sha256); list rollouts
    the unit files hold that the index lacks (an emptied or lost index, a deleted -wal), files
    nothing needs and temp files of killed writes. Exit status 1 when something is to repair.
    --repair rebuilds from the unit files first: a damaged index is replaced by one made of the rows
    that still read and the files' records (the damaged one is kept as index.damaged.sqlite), edited
    rows are put back and missing ones inserted. Only then does it remove rows no file holds intact,
    unit files nothing needs and stale temp files, so the next run of the command that made them plays
    exactly those rollouts again. It deletes nothing that can rebuild a row."""

    store: Annotated[Path, AfterValidator(_checkable)] = STORE
    repair: bool = Field(
        False,
        description="Rebuild from the unit files, then remove what is damaged (run it "
        "while nothing writes to the store).",
    )


class PackRequest(Request):
    """Move a version-1 store's payloads (one npz file per rollout) into unit files of 1,000 rollouts:
    same records and arrays, far fewer files, and each row's sha256 taken over its arrays."""

    store: StoreDir = STORE


class ExportRequest(Request):
    """Write a store as one table, one row per rollout: key, study, env, policy, seed, the world's
    fields (world_*), the outcome's (outcome_*) and the record's hashes (docs/design.md, "Store export")."""

    store: StoreDir = STORE
    format: Literal["parquet"] = Field("parquet", description="Table format.")
    out: Annotated[Path, AfterValidator(_parquet_file)] = Field(description="File to write (FILE.parquet).")
    study: str | None = Field(None, description="Only this study's rollouts (default: all).")


def check(req: CheckRequest) -> Result:
    from policylab.rollout.store_check import check_store

    found = check_store(req.store, repair=req.repair)
    stale = sum(t["writer_gone"] for t in found["temp_files"])
    damaged = found["damaged"]
    restored = sum(d["restorable"] for d in damaged)
    done = req.repair
    lines = [f"{found['rows']} rows, {found['payloads']} payloads read and verified"]
    lines += [f"damaged index: {line}" for line in found["index_damage"]]
    lines.append(
        f"{'repaired' if done else 'found'}: {len(found['index_damage'])} index problems"
        f"{' (index rebuilt)' if done and found['index_damage'] else ''}, "
        f"{len(found['unindexed'])} rollouts missing from the index "
        f"({'inserted' if done else 'their unit files hold them'}), "
        f"{len(damaged)} damaged rows ({restored} {'put back' if done else 'held intact'} "
        f"by their unit files, {len(damaged) - restored} {'removed' if done else 'to remove'}), "
        f"{len(found['bad_unit_files'])} bad unit files, {len(found['orphans'])} orphan files, "
        f"{stale} stale temp files{' removed' if done else ''}"
    )
    lines += [f"damaged: {d['key']}: {d['why']}" for d in damaged[:20]]
    if found["awaiting_rerun"]:
        lines.append(
            f"kept: {len(found['awaiting_rerun'])} unit files of an older layout hold rollouts the index "
            "lacks; the next run of the command that planned them commits them from the files"
        )
    bad = found["index_damage"] or found["unindexed"] or damaged or found["bad_unit_files"] or found["orphans"] or stale
    if bad and not done:
        lines.append(
            f"run `policylab store check {req.store} --repair`: it rebuilds what the unit files hold, then "
            "removes the rest; the next run plays the removed rollouts again"
        )
    return Result(req.store, tuple(lines), 1 if bad and not done else 0)


def pack(req: PackRequest) -> Result:
    from policylab.rollout.store_check import pack_store

    done = pack_store(req.store)
    return Result(req.store, (f"packed {done['packed']} payloads into {done['unit_files']} unit files",))


def export(req: ExportRequest) -> Result:
    from policylab.rollout.export import export as write

    done = write(req.store, req.out, req.format, req.study)
    return Result(req.out, (f"{done['rows']} rows x {len(done['columns'])} columns",))


app = typer.Typer(
    help="The rollout store itself: check and repair it, pack a version-1 store.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
command(app, "check", CheckRequest, "policylab.cli.store:check", index=None)  # a store, not a run folder
command(app, "pack", PackRequest, "policylab.cli.store:pack", index=None)


def register(top: typer.Typer) -> None:
    command(top, "export", ExportRequest, "policylab.cli.store:export", index=None)  # a file, not a run folder
