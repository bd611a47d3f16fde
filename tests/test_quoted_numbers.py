"""Every number the prose quotes with a source marker equals the figure in its results file.

A marker is an invisible HTML comment written right after the number it sources:

    Spearman 0.950<!-- src: benchmarks/results/breakout_fidelity.json pools.4242.presets.atari-cal.spearman_vs_ale_all -->

The number may carry a unit suffix (`x`, `%`, ` s`) and closing emphasis (`**`, `` ` ``) between it and
the marker. It must equal the JSON value at the dotted path (list items by index) rounded to the
written precision: "0.950" matches 0.95 and 0.9504, "1,684x" matches 1684.2. Percentages are compared
as written (the JSON holds 99.6, not 0.996).

The results files are written by the benchmark scripts that measure the figures, so a quote cannot
drift from its measurement without this test failing. The front-door rules live here too: README.md
stays short and nothing in README.md, BENCHMARKS.md or docs/ cites a file outside the repository.
"""

from __future__ import annotations

import json
import re
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from tests.support.paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"
README_MAX_LINES = 250

# Anything that opens like a marker; a malformed one must fail, not be skipped.
MARKER_START = re.compile(r"<!--\s*src\b")
MARKER = re.compile(r"<!-- src: (?P<file>\S+) (?P<path>\S+) -->")
# The number right before a marker: optional sign, digits with thousands commas, optional decimals,
# then an optional unit and closing emphasis.
NUMBER_BEFORE = re.compile(r"(?P<num>[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?)"
                           r"(?:x|%| s)?(?:\*\*|\*|`)?$")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


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
    for part in dotted.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise KeyError(part)
    return data


def check_quote(before: str, file: str, dotted: str) -> str | None:
    """None if the number at the end of `before` equals the sourced value at its precision, else why not."""
    if not file:
        return before
    m = NUMBER_BEFORE.search(before)
    if m is None:
        return f"no number right before the marker (text ends {before[-30:]!r})"
    source = ROOT / file
    if not file.startswith("benchmarks/results/") or not source.is_file():
        return f"{file}: no such results file under benchmarks/results/"
    try:
        value = resolve(json.loads(source.read_text()), dotted)
    except KeyError as exc:
        return f"{file}: no value at {dotted!r} (missing {exc.args[0]!r})"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{file} {dotted}: {value!r} is not a number"
    written = m["num"].replace(",", "")
    places = len(written.split(".")[1]) if "." in written else 0
    step = Decimal(1).scaleb(-places)
    sourced = Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_UP)
    if sourced != Decimal(written).quantize(step):
        return f"written {m['num']}, but {file} {dotted} is {value!r} (rounds to {sourced})"
    return None


ALL_MARKERS = [marker for doc in documents() for marker in find_markers(doc)]


@pytest.mark.parametrize("where,before,file,dotted", ALL_MARKERS, ids=[m[0] for m in ALL_MARKERS])
def test_quoted_number_equals_its_source(where, before, file, dotted):
    problem = check_quote(before, file, dotted)
    assert problem is None, f"{where}: {problem}"


def test_front_door_and_benchmarks_quote_sourced_numbers():
    """The check above must have something to check: the headline pages carry markers."""
    for name in ("README.md", "BENCHMARKS.md"):
        assert any(where.startswith(f"{name}:") for where, *_ in ALL_MARKERS), f"{name} has no source markers"


def test_checker_catches_wrong_missing_and_unsourced_quotes():
    """The checker fails on each kind of bad quote (so a green run above means something)."""
    fid = "benchmarks/results/breakout_fidelity.json"
    good = "pools.4242.presets.atari-cal.spearman_vs_ale_all"
    assert check_quote("Spearman 0.950", fid, good) is None
    assert check_quote("Spearman **0.95**", fid, good) is None
    assert "rounds to" in check_quote("Spearman 0.951", fid, good)
    assert "no such results file" in check_quote("0.950", "benchmarks/results/missing.json", good)
    assert "no such results file" in check_quote("0.950", "README.md", good)
    assert "no value at" in check_quote("0.950", fid, "pools.4242.presets.atari-cal.nope")
    assert "not a number" in check_quote("1", fid, "pools.4242.presets")
    assert "no number" in check_quote("Spearman high", fid, good)
    assert check_quote("1,684x", "benchmarks/results/shadow_throughput.json", "median_speedup_per_core") is None
    assert check_quote("[32.5", "benchmarks/results/train_loop.json", "before_halving.demo_pick.paired_delta.ci95.0") is None


def test_every_results_file_names_its_date_command_and_machine():
    files = sorted(RESULTS.glob("*.json"))
    assert files, "benchmarks/results/ holds no results files"
    for f in files:
        data = json.loads(f.read_text())
        for field in ("measured_on", "command", "machine"):
            assert data.get(field), f"{f.name}: no {field!r}"
        date.fromisoformat(data["measured_on"])


def test_readme_is_a_short_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_outside_the_repository_is_cited(doc):
    """A reader of the repository can open everything the docs point to."""
    text = doc.read_text()
    for outside in ("../shared", "/work/"):
        assert outside not in text, f"{doc.name} cites {outside!r}, which is outside the repository"
    for m in LINK.finditer(text):
        target = m["target"].split("#")[0]
        if not target or re.match(r"[a-z]+:", target):
            continue  # an anchor on the same page, or a URL
        resolved = (doc.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{doc.name} links {target}, outside the repository"
        assert resolved.exists(), f"{doc.name} links {target}, which does not exist"
