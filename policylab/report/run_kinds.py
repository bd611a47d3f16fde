"""What each command's run folder holds, declared by the command beside its `command(...)` line.

Light on purpose (no numpy, no jinja2): the command modules import it for `--help`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ANY = object()  # a signature value: the key only has to be present


@dataclass(frozen=True)
class RunKind:
    """How to recognise one command's run folder and where its headline lives."""

    study: str
    command: str  # as the run's config.json records it under "command"
    data: str  # JSON file with the headline numbers, relative to the run folder
    pages: tuple[str, ...]  # report pages, the first present one is linked (else the data file)
    summary: tuple[str, ...]  # config paths shown as name=value
    # (label, path in the data file; "" is the whole file); a label's `{a.b}` is that path's value in the data
    # file, so a number says what it was measured on (`runs_index._label`)
    headline: tuple[tuple[str, str], ...]
    verdict: Callable[[Path, Any], Any] | None = None  # (run folder, data) -> verdict
    signature: tuple[str, Any] | None = None  # config key (and value, or ANY) for configs that record no "command"


def get(obj: Any, path: str) -> Any:
    """obj["a"]["b"] for path "a.b"; None where the path does not exist."""
    for part in filter(None, path.split(".")):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def at(path: str, template: str = "{}") -> Callable[[Path, Any], Any]:
    """A verdict read from `path` in the data file, set into `template`."""

    def verdict(folder: Path, data: Any) -> Any:
        from policylab.report.html import fmt  # jinja2: only when an index is written

        value = get(data, path)
        return None if value is None else template.format(fmt(value))

    return verdict


def checks(name: str) -> Callable[[Path, Any], str]:
    """A verdict counted from a checks file of the run (a JSON list of rows with "holds")."""

    def verdict(folder: Path, data: Any) -> str:
        rows = read_json(folder / name)
        failed = sum(1 for c in rows if not c["holds"])
        return f"all {len(rows)} checks hold" if not failed else f"{failed} of {len(rows)} checks fail"

    return verdict


def read_json(path: Path) -> Any:
    """The JSON in `path`; a ValueError saying what is wrong (the index shows it in the row's error)."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path.name} is missing (an unfinished run?)") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path.name} ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON ({getattr(exc, 'msg', exc)})") from None


_REGISTERED: dict[str, RunKind] = {}


def register(kind: RunKind) -> None:
    """Record `kind` (the same declaration twice is one; two different ones for a command are a bug)."""
    if _REGISTERED.setdefault(kind.command, kind) != kind:
        raise ValueError(f"two declarations of the run kind of {kind.command!r}")


def registered() -> tuple[RunKind, ...]:
    """Every kind declared so far, in declaration order."""
    return tuple(_REGISTERED.values())
