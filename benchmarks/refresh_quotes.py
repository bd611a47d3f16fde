"""The prose's quoted figures, read from and rewritten to match benchmarks/results/*.json.

A figure in README.md, BENCHMARKS.md or docs/*.md carries an invisible marker naming its source:

    Spearman 0.950<!-- src: benchmarks/results/breakout_fidelity.json pools.4242.presets.atari-cal.spearman_vs_ale_all -->

The number may carry a unit suffix (`x`, `%`, ` s`) and closing emphasis (`**`, `` ` ``) between it and
the marker. It equals the JSON value at the dotted path (list items by index) rounded to the written
precision: "0.950" matches 0.95 and 0.9504, "1,684x" matches 1684.2; percentages are compared as
written (the JSON holds 99.6, not 0.996). A date (2026-12-01) may be quoted the same way from a
`measured_on`.

Every figure was measured at a date and a commit: those of the nearest entry on its path that carries
`measured_on` (an entry of a file that keeps several runs, else the file itself; see
benchmarks/results_file.py). A page that quotes figures can hold a provenance block, a table of the
entries its figures come from with their dates and commits, written here from the files.

    .venv/bin/python -m benchmarks.refresh_quotes              # after a benchmark ran: rewrite the prose
    .venv/bin/python -m benchmarks.refresh_quotes --backfill   # first stamp entries that have no commit

rewrites every quoted figure at its written precision and style, and every provenance block; it
writes nothing if a marker cannot be resolved. tests/test_quoted_numbers.py checks the pages with the
same functions, so the prose this writes is the prose the test accepts.

`--backfill` stamps an entry measured before runs recorded their commit (or by a branch that did not
yet) with the commit that last changed it in `git log`, and `tree: "recorded"`: results are committed
with, or right after, the code that measured them, so that commit's tree holds that code (its parent
may not). (The entries of a file that kept several runs under one date were given their own, once,
the same way: the date of that commit.)
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from benchmarks.results_file import RESULTS, ROOT, git, write

# Anything that opens like a marker; a malformed one must fail, not be skipped.
MARKER_START = re.compile(r"<!--\s*src\b")
MARKER = re.compile(r"<!-- src: (?P<file>\S+) (?P<path>\S+) -->")
DATE = r"\d{4}-\d{2}-\d{2}"
# The figure right before a marker: a date, or an optional sign, digits with thousands commas,
# optional decimals; then an optional unit and closing emphasis.
NUMBER_BEFORE = re.compile(
    rf"(?P<num>{DATE}|[-+]?\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?)"
    r"(?:x|%| s)?(?:\*\*|\*|`)?$"
)
BLOCK = re.compile(r"(<!-- provenance: [^\n]*-->\n)(.*?)(<!-- /provenance -->)", re.S)
STAMP = ("commit", "tree")  # written by a run (benchmarks/results_file.py) or by --backfill
PROSE = ("benchmark", "study", "script", "note")  # what a file says it holds; an edit there measures nothing
COMMIT = re.compile(r"[0-9a-f]{40}")
TREES = {"clean": "", "dirty": " + uncommitted changes", "recorded": " (recorded)"}


def documents() -> list[Path]:
    """The prose that quotes numbers: the front door, the benchmark record and every docs page."""
    return [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]


def fenced_lines(text: str) -> set[int]:
    """1-based numbers of the lines inside fenced code blocks (a comment there would show verbatim)."""
    inside, out = False, set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside:
            out.add(n)
    return out


def find_markers(path: Path) -> list[tuple[str, str, str, str]]:
    """(location, text before the marker on its line, or a syntax error, file, dotted path) per marker."""
    text = path.read_text()
    fenced = fenced_lines(text)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{path.relative_to(ROOT)}:{n}"
        for start in MARKER_START.finditer(line):
            m = MARKER.match(line, start.start())
            if m is None:
                found.append((where, "malformed marker (expected '<!-- src: FILE DOTTED.PATH -->')", "", ""))
            elif n in fenced:
                found.append((where, "marker inside a fenced code block (it would show verbatim)", "", ""))
            else:
                found.append((where, line[: start.start()], m["file"], m["path"]))
    return found


def resolve(data, dotted: str):
    """The value at a dotted path; dict keys by name, list items by index. Raises KeyError if absent."""
    for part in dotted.split(".") if dotted else ():
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise KeyError(part)
    return data


def load(file: str) -> dict:
    return json.loads((ROOT / file).read_text())


def dated_entry(data: dict, dotted: str) -> str:
    """The dotted path of the entry that dates the value at `dotted`: the nearest dict on the way to it
    that carries `measured_on` ("" for the file itself)."""
    entry, node, walked = "", data, []
    for part in dotted.split("."):
        if isinstance(node, dict) and "measured_on" in node:
            entry = ".".join(walked)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            break
        walked.append(part)
    return entry


def dated_entries(data, prefix: str = "") -> list[str]:
    """The dotted paths of every dict in `data` that carries `measured_on`, outermost first."""
    out = [prefix] if isinstance(data, dict) and "measured_on" in data else []
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in children:
        out += dated_entries(value, f"{prefix}.{key}" if prefix else str(key))
    return out


def quote_text(written: str, value: Any) -> str | None:
    """`value` as the prose writes `written`: a number at the written precision, with thousands commas
    and a sign if the written number has them, or the date itself; None if `value` cannot be written so."""
    if re.fullmatch(DATE, written):
        return value if isinstance(value, str) and re.fullmatch(DATE, value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    digits = written.lstrip("+-").replace(",", "")
    places = len(digits.split(".")[1]) if "." in digits else 0
    sourced = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{sourced:,f}" if "," in written else f"{sourced:f}"
    return f"+{text}" if written.startswith("+") and sourced >= 0 else text


def check_quote(before: str, file: str, dotted: str) -> str | None:
    """None if the figure at the end of `before` is the sourced value as written, else why not."""
    if not file:
        return before
    m = NUMBER_BEFORE.search(before)
    if m is None:
        return f"no number right before the marker (text ends {before[-30:]!r})"
    if not file.startswith("benchmarks/results/") or not (ROOT / file).is_file():
        return f"{file}: no such results file under benchmarks/results/"
    try:
        value = resolve(load(file), dotted)
    except KeyError as exc:
        return f"{file}: no value at {dotted!r} (missing {exc.args[0]!r})"
    sourced = quote_text(m["num"], value)
    if sourced is None:
        return f"{file} {dotted}: {value!r} is not a {'date' if re.fullmatch(DATE, m['num']) else 'number'}"
    if not same(m["num"], sourced):
        return f"written {m['num']}, but {file} {dotted} is {value!r} (rounds to {sourced})"
    return None


def same(written: str, sourced: str) -> bool:
    """The same date, or the same number ("1,684" is "1684", "+5" is "5"): the writer's style stays."""
    if re.fullmatch(DATE, written):
        return written == sourced
    return Decimal(written.replace(",", "")) == Decimal(sourced.replace(",", ""))


def refreshed(line: str) -> str:
    """`line` with each figure before a marker that differs from its source rewritten (the markers of
    the line resolve: `main` checks them first)."""
    for start in reversed([s.start() for s in MARKER_START.finditer(line)]):
        m, n = MARKER.match(line, start), NUMBER_BEFORE.search(line[:start])
        text = quote_text(n["num"], resolve(load(m["file"]), m["path"]))
        if not same(n["num"], text):
            line = line[: n.start("num")] + text + line[n.end("num") :]
    return line


def sources(path: Path) -> list[tuple[str, str]]:
    """(results file, dated entry) of every figure `path` quotes, sorted."""
    return sorted({(file, dated_entry(load(file), dotted)) for _, _, file, dotted in find_markers(path) if file})


def commit_text(entry: dict) -> str:
    if not COMMIT.fullmatch(str(entry.get("commit"))) or entry.get("tree") not in TREES:
        return "no commit recorded"
    return f"`{entry['commit'][:7]}`{TREES[entry['tree']]}"


def provenance_table(path: Path) -> str:
    """The table of a page's provenance block: each entry its figures come from, when and at which
    commit it was measured."""
    rows = ["| figures from | measured | at commit |", "|---|---|---|"]
    for file, entry_path in sources(path):
        entry = resolve(load(file), entry_path)
        where = f"`{Path(file).name}`" + (f" `{entry_path}`" if entry_path else "")
        rows.append(f"| {where} | {entry.get('measured_on', 'no date recorded')} | {commit_text(entry)} |")
    return "\n".join(rows) + "\n"


def refresh(path: Path) -> str:
    """The page with every quoted figure and its provenance block rewritten from the results files."""
    text = path.read_text()
    fenced = fenced_lines(text)
    lines = [line if n in fenced else refreshed(line) for n, line in enumerate(text.split("\n"), 1)]
    return BLOCK.sub(lambda m: m[1] + provenance_table(path) + m[3], "\n".join(lines))


def _figures(value, drop: list[str]):
    """`value` without its stamp, its prose and the nested entries at the dotted paths `drop` (dated on
    their own), so an entry counts as changed only when its own figures changed."""
    value = copy.deepcopy(value)
    if isinstance(value, dict):
        for key in STAMP + PROSE:
            value.pop(key, None)
    for dotted in drop:
        *parents, last = dotted.split(".")
        try:
            parent = resolve(value, ".".join(parents))
        except KeyError:
            continue
        if isinstance(parent, dict):
            parent.pop(last, None)
    return value


def last_change(file: str, entry_path: str, data: dict, root: Path = ROOT) -> str | None:
    """The newest commit since which the entry at `entry_path` of results file `file` (now `data`)
    holds its present figures, in the repository at `root`; None if no commit holds them (they are
    not committed)."""
    nested = [
        p[len(entry_path) + 1 :] if entry_path else p
        for p in dated_entries(data)
        if p != entry_path and (not entry_path or p.startswith(entry_path + "."))
    ]
    present = _figures(resolve(data, entry_path), nested)
    found = None
    for commit in git("log", "--format=%H", "--", file, root=root).split():
        try:
            old = resolve(json.loads(git("show", f"{commit}:{file}", root=root)), entry_path)
        except KeyError:
            break
        if _figures(old, nested) != present:
            break
        found = commit
    return found


def backfill(path: Path) -> list[str]:
    """Stamp every dated entry of a results file that has no commit with `last_change`; what was done."""
    file = str(path.relative_to(ROOT))
    data = json.loads(path.read_text())
    done = []
    for entry_path in dated_entries(data):
        entry = resolve(data, entry_path)
        if "commit" in entry:
            continue
        commit = last_change(file, entry_path, data)
        if commit:
            entry.update(commit=commit, tree="recorded")
        done.append(
            f"{file} {entry_path or '(file)'}: "
            + (commit[:7] if commit else "not stamped: its figures are in no commit yet (commit them first)")
        )
    write(path, data)
    return done


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--backfill", action="store_true", help="first stamp entries without a commit from git log")
    args = ap.parse_args()
    if args.backfill:
        for path in sorted(RESULTS.glob("*.json")):
            for line in backfill(path):
                print(line)
    problems = [
        f"{where}: {problem}"
        for doc in documents()
        for where, before, file, dotted in find_markers(doc)
        if (problem := check_quote(before, file, dotted)) and not problem.startswith("written ")
    ]
    if problems:
        sys.exit("cannot refresh, nothing written:\n" + "\n".join(problems))
    for doc in documents():
        text = refresh(doc)
        if text != doc.read_text():
            doc.write_text(text)
            print(f"rewrote {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
