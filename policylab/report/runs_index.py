"""One page for every run under a folder: `write_runs_index(root)` writes index.json and index.html.

A run is a folder holding a config.json (every command claims its out folder by writing one
first). Its kind comes from the config (`"command"`, or the study's own keys where a command
records none); the kind says which JSON file holds the headline numbers and the verdict, and which
page to link. Nothing under a run folder is searched again (a store, the analysis stages'
sub-folders), nor is a rollout store. A folder whose files cannot be read, or hold something else
than expected, still gets a row, with the problem in `error`.

JSON first, as everywhere in the project: index.json holds the rows; index.html is rendered from
them with `policylab.report.html`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from markupsafe import Markup

from policylab.config import check_existing_dir
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.report.html import Page, Table, fmt, render

ANY = object()  # a signature value: the key only has to be present


@dataclass(frozen=True)
class Kind:
    """How to recognise one command's run folder and where its headline lives."""

    study: str
    command: str
    signature: tuple[str, Any] | None  # config key (and value, or ANY) for configs that record no "command"
    data: str  # JSON file with the headline numbers, relative to the run folder
    pages: tuple[str, ...]  # report pages, the first present one is linked (else the data file)
    summary: tuple[str, ...]  # config paths shown as name=value
    headline: tuple[tuple[str, str], ...]  # (label, path in the data file; "" is the whole file)
    verdict: Callable[[Path, Any], Any] | None = None  # (run folder, data) -> verdict


def _get(obj: Any, path: str) -> Any:
    """obj["a"]["b"] for path "a.b"; None where the path does not exist."""
    for part in filter(None, path.split(".")):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _at(path: str, template: str = "{}") -> Callable[[Path, Any], Any]:
    return lambda folder, data: None if _get(data, path) is None else template.format(fmt(_get(data, path)))


def _lava_checks(folder: Path, data: Any) -> str:
    checks = _read_json(folder / "results" / "checks.json")
    failed = sum(1 for c in checks if not c["holds"])
    return f"all {len(checks)} checks hold" if not failed else f"{failed} of {len(checks)} checks fail"


KINDS: tuple[Kind, ...] = (
    Kind("breakout", "breakout eval", None, "report.json", ("report.html",),
         ("env", "policy", "episodes", "seed", "protocol.max_steps", "preset"),
         (("mean score", "distribution.mean"), ("95% CI", "distribution.mean_ci95"),
          ("low scores", "distribution.low_score_count"))),
    Kind("breakout", "breakout audit", None, "audit.json", ("audit.html",),
         ("policy", "episodes", "seed", "protocol.max_steps", "preset", "candidates"),
         (("shadow mean", "comparison.shadow.score.mean"), ("ALE mean", "comparison.ale.score.mean"),
          ("Spearman shadow vs ALE", "rank_correlation.spearman")),
         _at("decision.primary_failure_class", "primary gap: {}")),
    Kind("breakout", "breakout train", None, "report.json", ("report.html",),  # `policylab demo` too
         ("space", "search_env", "preset", "screen_top", "validate_episodes", "protocol.max_steps"),
         (("pick ALE mean", "evaluation.new_policy.mean"), ("baseline ALE mean", "evaluation.baseline_policy.mean"),
          ("paired delta", "evaluation.paired_delta.mean_delta"), ("delta 95% CI", "evaluation.paired_delta.ci95")),
         _at("decision.verdict")),
    Kind("breakout", "breakout transfer", None, "transfer.json", ("transfer.html",),
         ("policy", "episodes", "gap_episodes", "preset", "protocol.max_steps"),
         (("network ALE mean", "validation.distributions.network.mean"),
          ("95% CI", "validation.distributions.network.mean_ci95"),
          ("vs search pick", "validation.comparisons.pick.verdict"), ("shadow/ALE", "goals.ratio")),
         _at("validation.comparisons.v3.verdict", "vs v3: {}")),
    Kind("breakout", "breakout calibrate", None, "calibration.json", ("calibration.html",),
         ("base", "traces"),
         (("objective before", "before.objective"), ("objective after", "after.objective"),
          ("changes kept", "accepted"), ("changes rejected", "rejected"))),
    Kind("breakout", "breakout trace", None, "traces.json", (), ("scenarios",), (("traces", ""),)),
    Kind("lava_leap", "lava-leap run", ("study", "lava_leap"), "results/summary.json", ("index.html",),
         ("rounds", "n_seeds", "G", "lr", "eps"),
         (("best possible score", "ceiling.score"), ("GRPO final", "final.grpo.score_mean"),
          ("PPO final", "final.ppo.score_mean"), ("REINFORCE final", "final.reinforce.score_mean")),
         _lava_checks),
    Kind("boundary", "boundary sweep", ("grid", ANY), "sweep.json", (),
         ("checkpoint.name", "grid.total_rollouts", "grid.seeds_per_cell"),
         (("survived", "counts.survived"), ("failed", "counts.failed"), ("diverged", "counts.diverged"),
          ("missing", "counts.missing"))),
    Kind("boundary", "boundary verify", ("sample", ANY), "equivalence.json", (), ("checkpoint.name", "sample"),
         (("identical", "agreement.identical"), ("re-simulated", "agreement.n")),
         lambda folder, data: "PASS" if data["passed"] else "FAIL"),
    Kind("boundary", "boundary calibrate", ("n_nominal", ANY), "calibration.json", (),
         ("checkpoint.name", "n_nominal", "n_pushed"),
         (("nominal survived", "nominal.status.survived"), ("nominal failed", "nominal.status.failed"))),
    Kind("boundary", "boundary reduce", ("rule_check", ANY), "reduce.json", ("report/report.html",),
         ("checkpoint", "resamples", "seed"),
         (("failed", "totals.failed"), ("censored", "totals.censored"), ("diverged", "totals.diverged"),
          ("rule agrees", "rule_check.agree"), ("rule checked", "rule_check.checked"))),
    Kind("boundary", "boundary diff", ("store_b", ANY), "diff.json", ("report/report.html",), ("a", "b", "q"),
         (("cells safer", "summary.safer"), ("cells worse", "summary.worse"),
          ("unchanged", "summary.unchanged"))),
)

COLUMNS = ["run", "modified", "study", "command", "config", "headline", "verdict", "error"]


def _kind_of(config: dict) -> Kind | None:
    for kind in KINDS:
        key = kind.signature
        if config.get("command") == kind.command or (
                key is not None and key[0] in config and (key[1] is ANY or config[key[0]] == key[1])):
            return kind
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path.name} is missing (an unfinished run?)") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path.name} ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON ({getattr(exc, 'msg', exc)})") from None


def _compact(value: Any) -> Any:
    """Scalars and short flat lists (an interval) as they are; anything bigger as its size."""
    if isinstance(value, (list, tuple)) and len(value) <= 3 and not any(isinstance(v, (list, dict)) for v in value):
        return list(value)
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return value


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _row(folder: Path, root: Path, out_dir: Path) -> dict:
    cfg_path = folder / "config.json"
    try:
        mtime = cfg_path.stat().st_mtime
    except OSError:
        mtime = 0.0
    row = {"path": _relative(folder, root), "study": None, "command": None, "config_summary": "",
           "headline": [], "verdict": None, "report": None, "error": None,
           "modified": _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "mtime": mtime}
    try:
        config = _read_json(cfg_path)
        kind = _kind_of(config) if isinstance(config, dict) else None
        if kind is None:
            raise ValueError("config.json is not that of a policylab run this index knows")
        row.update(study=kind.study, command=kind.command, config_summary=", ".join(
            f"{p.split('.')[-1]}={fmt(_compact(_get(config, p)))}" for p in kind.summary
            if _get(config, p) is not None))
        page = next((folder / p for p in (*kind.pages, kind.data) if (folder / p).is_file()), None)
        row["report"] = None if page is None else _relative(page, out_dir)
        data = _read_json(folder / kind.data)
        row["headline"] = [[label, _compact(_get(data, p))] for label, p in kind.headline
                           if _get(data, p) is not None]
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


def write_runs_index(root: Path, out: Path | None = None) -> Path:
    """Write index.json and index.html listing every run under `root`, newest first; return index.html.

    `out` is the index.html to write, or a folder to write it into (default: `root/index.html`).
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
            raise BadInput("out", f"{html} would be written inside the run folder {folder}; choose a folder "
                                  "outside it")
    rows = sorted((_row(run, root, out_dir) for run in runs), key=lambda r: r["path"])
    rows.sort(key=lambda r: r["mtime"], reverse=True)  # stable: ties stay in path order
    studies = sorted({r["study"] for r in rows if r["study"]})
    data = {
        "root": str(root.resolve()),
        "counts": {"runs": len(rows), "with_error": sum(1 for r in rows if r["error"]),
                   **{s: sum(1 for r in rows if r["study"] == s) for s in studies}},
        "order": "newest first by the mtime of each run's config.json; ties by path",
        "rows": rows,
    }
    json_path = html.with_name("index.json")
    write_json(json_path, data)
    cells = [{"run": _Html('<a href="{}">{}</a>').format(quote(r["report"]), r["path"]) if r["report"]
              else f"{r['path']} (no page)",
              "modified": r["modified"].replace("T", " ").rstrip("Z") + " UTC", "study": r["study"],
              "command": r["command"], "config": r["config_summary"],
              "headline": "; ".join(f"{k} {fmt(v)}" for k, v in r["headline"]), "verdict": r["verdict"],
              "error": r["error"]} for r in rows]
    page = Page(
        title=f"Runs under {root.resolve().name or root.resolve()}",
        subtitle=f"{len(rows)} runs under {data['root']}, newest first",
        headline=[(k.replace("_", " "), v) for k, v in data["counts"].items()],
        notes=[f"{data['counts']['with_error']} folder(s) could not be read in full: see the error column."]
        if data["counts"]["with_error"] else [],
        tables=[Table("Runs, newest first", COLUMNS, cells)],
    )
    render(html, page, {k: v for k, v in data.items() if k != "rows"}, json_name=json_path.name)
    return html
