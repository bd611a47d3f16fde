"""Validated requests at the boundary, and output folders that refuse to mix runs.

An out folder is claimed (its config.json written) once the inputs are checked; `release_claims` undoes a
claim when bad input turns up later, removing only what came after it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import pydantic
from pydantic import AfterValidator

from policylab.errors import BadInput

M = TypeVar("M", bound=pydantic.BaseModel)


class StrictModel(pydantic.BaseModel):
    """Base for configs: unknown fields are errors, values are frozen, numbers finite."""

    model_config = pydantic.ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, validate_by_name=True, validate_by_alias=True
    )


class Request(StrictModel):
    """Base of every command's request. `needs()` estimates the run's peak memory and disk bytes
    so that a run the machine cannot hold is refused up front (see `check_resources`), naming the
    options that size it (`SIZE_FIELDS`); the disk is checked where the bytes go (the store if the
    command has one, else the out folder)."""

    SIZE_FIELDS: ClassVar[tuple[str, ...]] = ("out",)

    @pydantic.field_validator("*", mode="before")
    @classmethod
    def _no_blank_path(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        """A path option given as "" or blanks is bad input: as a path it means the current folder,
        which no one means by leaving the option empty."""
        if isinstance(value, str) and not value.strip() and _names_a_path(cls.model_fields[info.field_name].annotation):
            raise ValueError("is empty; give a path (. is the current folder)")
        return value

    def needs(self) -> tuple[int, int]:
        return 0, 0

    def check_resources(self) -> None:
        memory, disk = self.needs()
        where = getattr(self, "store", None) or getattr(self, "out", None) or Path(".")
        check_resources(memory, disk, Path(where), "/".join(self.SIZE_FIELDS))


def validated(model: type[M], data: Mapping[str, Any]) -> M:
    """Build `model` from `data`, turning the first validation error into a one-line `BadInput`."""
    try:
        return model.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or model.__name__
        msg = err.get("msg", "invalid value")
        if err.get("type") == "missing":
            msg = "is required"
        elif "input" in err and err.get("type") not in ("value_error", "assertion_error"):
            msg = f"{msg}, got {str(err['input'])[:60]!r}"
        raise BadInput(field, msg.removeprefix("Value error, ")) from None


# -- paths --------------------------------------------------------------------------------------
def _names_a_path(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return True
    return any(_names_a_path(a) for a in typing.get_args(annotation))


def resolved(path: str | os.PathLike) -> Path:
    """`path` as the file system reaches it: absolute, every symlink followed, and each `..` applied
    after the folder before it (`D/missing/..` is D, the folder a write through it lands in). Folders
    a command writes under are checked in this form, never as typed: as typed, `D/missing/..` does
    not exist, so it would pass as a new folder while the writes land in D."""
    return Path(os.path.realpath(path))


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists():
        p = p.parent
    return p


def check_out_dir(path: Path) -> Path:
    """An output folder this process can create or write into, returned resolved (`resolved`); probed
    with a temporary folder that is removed at once (root ignores permission bits, so asking
    `os.access` is not enough)."""
    path = resolved(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} exists and is not a folder")
    base = _nearest_existing(path)
    if not base.is_dir():
        raise ValueError(f"{base} is not a folder, so {path} cannot be created")
    try:
        os.rmdir(tempfile.mkdtemp(dir=base, prefix=".policylab-probe-"))
    except OSError as exc:
        raise ValueError(f"cannot write under {base} ({exc.strerror or exc})") from None
    return path


def check_input_file(path: Path) -> Path:
    """A file that exists and can be read (its content is checked by whoever parses it)."""
    if not path.is_file():
        raise ValueError(f"file not found: {path}" if not path.exists() else f"{path} is not a file")
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise ValueError(f"cannot read {path} ({exc.strerror or exc})") from None
    return path


def check_existing_dir(path: Path) -> Path:
    """A folder that exists (a command reads it; what it must hold is checked by whoever reads it)."""
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder" if path.exists() else f"folder not found: {path}")
    return path


OutDir = Annotated[Path, AfterValidator(check_out_dir)]
InputFile = Annotated[Path, AfterValidator(check_input_file)]
ExistingDir = Annotated[Path, AfterValidator(check_existing_dir)]


def load_json_file(path: str | Path, field: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    try:
        return json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" ({exc.msg} at line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise BadInput(field, f"{p} is not valid JSON{where}") from None
    except OSError as exc:
        raise BadInput(field, f"cannot read {p} ({exc.strerror or exc})") from None


# -- resources ----------------------------------------------------------------------------------
def available_memory() -> int:
    """Bytes the kernel says a new allocation can get without swapping (MemAvailable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def check_resources(memory: int, disk: int, where: Path, field: str) -> None:
    """Refuse a run whose estimated peak memory or disk use exceeds what this machine has now."""
    have = available_memory()
    if memory > have:
        raise BadInput(
            field,
            f"this run needs about {amount(memory)} of memory, but only {amount(have)} is "
            "available (make the run smaller)",
        )
    free = shutil.disk_usage(_nearest_existing(where)).free
    if disk > free:
        raise BadInput(
            field,
            f"this run writes about {amount(disk)}, but only {amount(free)} is free under "
            f"{_nearest_existing(where)} (free some space or make the run smaller)",
        )


def amount(n: int) -> str:
    """A byte count as a person reads it: GB, MB or kB (powers of ten), or bytes."""
    for size, unit in ((10**9, "GB"), (10**6, "MB"), (10**3, "kB")):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} byte" if n == 1 else f"{n} bytes"


# -- out folders --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Claim:
    out: Path  # resolved
    identity: tuple[int, int]  # (device, inode) of `out` just after the claim: the folder, not its name
    made: tuple[Path, ...]  # the folders the claim created, `out` first, then the missing parents it made
    fresh: bool  # the claim wrote config.json (not a resume of the same config)


_claims: list[_Claim] = []


def claim_out_dir(out: str | Path, config: Mapping[str, Any], name: str = "config.json") -> Path:
    """Check that `out` (resolved) is new, empty, or holds a run of this same config; then record the
    config. Returns the resolved folder.

    Call it after every other check passed: it is the first write a command makes.
    """
    from policylab.fileio import write_json  # numpy: not at import time, so `--help` stays light
    from policylab.hashing import canonical_json

    out = resolved(out)
    cfg_path = out / name
    fresh = True
    if out.exists():
        if not out.is_dir():
            raise BadInput("out", f"{out} exists and is not a folder")
        if cfg_path.exists():
            try:
                previous = json.loads(cfg_path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                previous = None
            if previous is None or canonical_json(previous) != canonical_json(config):
                raise BadInput("out", f"{out} holds a run made with a different config; choose a new --out")
            fresh = False
        elif any(out.iterdir()):
            raise BadInput("out", f"{out} is not empty and holds no {name}; choose a new --out")
    made = tuple(p for p in (out, *out.parents) if not p.exists())
    try:
        write_json(cfg_path, config)
        st = os.lstat(out)
    except OSError as exc:
        _remove_while_empty(made)
        raise BadInput("out", f"cannot write {cfg_path} ({exc.strerror or exc})") from None
    _claims.append(_Claim(out, (st.st_dev, st.st_ino), made, fresh))
    return out


def claimed_dirs() -> list[Path]:
    """Folders claimed by this process, newest last (where an internal error's log goes)."""
    return [c.out for c in _claims]


def release_claims() -> None:
    """Undo this process's fresh claims: a run rejected as bad input leaves its folder as it was.

    A fresh claim was made on a folder that was missing or empty, so what it holds now came after the
    claim: that is removed, then the folders the claim made. Nothing else: the folder is opened
    without following a link and emptied through that handle only while it is the folder claimed (a
    name that now leads elsewhere, moved or replaced by a symlink, is left alone), and a symlink
    inside is removed as a link, never followed."""
    while _claims:
        c = _claims.pop()
        if not c.fresh:
            continue
        try:
            fd = os.open(c.out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != c.identity:
                continue
            with os.scandir(fd) as entries:  # best effort: what cannot go stays, the bad input is still said
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.name, dir_fd=fd, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.name, dir_fd=fd)
        finally:
            os.close(fd)
        _remove_while_empty(c.made)


def _remove_while_empty(folders: tuple[Path, ...]) -> None:
    """Remove the folders a claim made, innermost first, stopping at the first that is not empty
    (something else went there since)."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            break


def forget_claims() -> None:
    _claims.clear()
