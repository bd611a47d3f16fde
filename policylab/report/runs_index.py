"""One page for every run under a folder: `write_runs_index(root)` writes index.json and index.html."""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from policylab.config import check_existing_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.report.html import Page, Table, fmt, render
from policylab.report.run_kinds import ANY, RunKind, get, read_json

COLUMNS = ["run", "modified", "study", "command", "config", "headline", "verdict", "error"]


def _kind_of(config: dict, kinds: Sequence[RunKind]) -> RunKind | None:
    for kind in kinds:
        key = kind.signature
        if config.get("command") == kind.command or (
            key is not None and key[0] in config and (key[1] is ANY or config[key[0]] == key[1])
        ):
            return kind
    return None


def _compact(value: Any) -> Any:
    """Scalars and short flat lists (an interval) as they are; anything bigger as its size."""
    if isinstance(value, (list, tuple)) and len(value) <= 3 and not any(isinstance(v, (list, dict)) for v in value):
        return list(value)
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return value


def _label(label: str, data: Any) -> str:
    """A headline label with each `{a.b}` replaced by that path's value in the data file (what the number
    was measured on, which only the run knows); "?" where the run does not record it."""
    return re.sub(
        r"\{([\w.]+)\}", lambda m: str(fmt(get(data, m.group(1))) if get(data, m.group(1)) is not None else "?"), label
    )


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _row(folder: Path, root: Path, out_dir: Path, kinds: Sequence[RunKind]) -> dict:
    cfg_path = folder / "config.json"
    try:
        mtime = cfg_path.stat().st_mtime
    except OSError:
        mtime = 0.0
    row = {
        "path": _relative(folder, root),
        "study": None,
        "command": None,
        "config_summary": "",
        "headline": [],
        "verdict": None,
        "report": None,
        "error": None,
        "modified": _dt.datetime.fromtimestamp(mtime, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mtime": mtime,
    }
    try:
        config = read_json(cfg_path)
        kind = _kind_of(config, kinds) if isinstance(config, dict) else None
        if kind is None:
            raise ValueError("config.json is not that of a policylab run this index knows")
        row.update(
            study=kind.study,
            command=kind.command,
            config_summary=", ".join(
                f"{p.split('.')[-1]}={fmt(_compact(get(config, p)))}"
                for p in kind.summary
                if get(config, p) is not None
            ),
        )
        page = next((folder / p for p in (*kind.pages, kind.data) if (folder / p).is_file()), None)
        row["report"] = None if page is None else _relative(page, out_dir)
        data = read_json(folder / kind.data)
        row["headline"] = [
            [_label(label, data), _compact(get(data, p))] for label, p in kind.headline if get(data, p) is not None
        ]
        row["verdict"] = kind.verdict(folder, data) if kind.verdict else None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # anything a broken file can cause
        row["error"] = str(exc) if isinstance(exc, ValueError) else f"unexpected content ({type(exc).__name__}: {exc})"
    return row


def find_runs(root: Path) -> list[Path]:
    """Every folder under `root` holding a config.json, not searching inside runs, stores or hidden folders."""
    runs = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "config.json" in filenames or "index.sqlite" in filenames:
            dirnames[:] = []
            if "config.json" in filenames:
                runs.append(Path(dirpath))
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return runs


class _Html(Markup):
    """Markup that stays markup through `html.fmt` (which passes table cells through str())."""

    def __str__(self) -> str:
        return self


def write_runs_index(root: Path, kinds: Sequence[RunKind], out: Path | None = None) -> Path:
    """Write index.json and index.html listing every run under `root`, newest first; return index.html.

    `kinds` are the commands' declared run kinds (`policylab.cli.run_kinds()`); `out` is the
    index.html to write, or a folder to write it into (default: `root/index.html`).
    """
    try:
        root = check_existing_dir(Path(root))
    except ValueError as exc:
        raise BadInput("root", str(exc)) from None
    out = Path(out) if out is not None else root
    html = out if out.suffix == ".html" else out / "index.html"
    out_dir = html.parent.resolve()
    runs = find_runs(root)
    for folder in (out_dir, *out_dir.parents):
        if (folder / "config.json").is_file():
            raise BadInput("out", f"{html} would be written inside the run folder {folder}; choose a folder outside it")
    rows = sorted((_row(run, root, out_dir, kinds) for run in runs), key=lambda r: r["path"])
    rows.sort(key=lambda r: r["mtime"], reverse=True)  # stable: ties stay in path order
    studies = sorted({r["study"] for r in rows if r["study"]})
    data = {
        "root": str(root.resolve()),
        "counts": {
            "runs": len(rows),
            "with_error": sum(1 for r in rows if r["error"]),
            **{s: sum(1 for r in rows if r["study"] == s) for s in studies},
        },
        "order": "newest first by the mtime of each run's config.json; ties by path",
        "rows": rows,
    }
    json_path = html.with_name("index.json")
    write_json(json_path, data)
    cells = [
        {
            "run": _Html('<a href="{}">{}</a>').format(quote(r["report"]), r["path"])
            if r["report"]
            else f"{r['path']} (no page)",
            "modified": r["modified"].replace("T", " ").rstrip("Z") + " UTC",
            "study": r["study"],
            "command": r["command"],
            "config": r["config_summary"],
            "headline": "; ".join(f"{k} {fmt(v)}" for k, v in r["headline"]),
            "verdict": r["verdict"],
            "error": r["error"],
        }
        for r in rows
    ]
    page = Page(
        title=f"Runs under {root.resolve().name or root.resolve()}",
        subtitle=f"{len(rows)} runs under {data['root']}, newest first",
        headline=[(k.replace("_", " "), v) for k, v in data["counts"].items()],
        notes=[f"{data['counts']['with_error']} folder(s) could not be read in full: see the error column."]
        if data["counts"]["with_error"]
        else [],
        tables=[Table("Runs, newest first", COLUMNS, cells)],
    )
    render(html, page, {k: v for k, v in data.items() if k != "rows"}, json_name=json_path.name)
    return html
