"""Every number the prose quotes with a source marker equals the figure in its results file, and the
front door says when and at which commit each was measured.

The marker syntax and the rules for a match are benchmarks/refresh_quotes.py's, which rewrites the
prose from the results files after a benchmark runs; the checks here use its functions, so a quote
cannot drift from its measurement, nor a date or commit from its run, without this test failing.
The front-door rules live here too: README.md stays short and nothing in README.md, BENCHMARKS.md
or docs/ cites a file outside the repository.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import date

import pytest

from benchmarks.refresh_quotes import (
    BLOCK,
    COMMIT,
    TREES,
    check_quote,
    dated_entry,
    documents,
    find_markers,
    last_change,
    load,
    refresh,
    resolve,
    sources,
)
from tests.support.paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"
README_MAX_LINES = 250
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


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
    assert (
        check_quote("[32.5", "benchmarks/results/train_loop.json", "before_halving.demo_pick.paired_delta.ci95.0")
        is None
    )


def test_every_results_file_names_its_date_commit_command_and_machine():
    files = sorted(RESULTS.glob("*.json"))
    assert files, "benchmarks/results/ holds no results files"
    for f in files:
        data = json.loads(f.read_text())
        for field in ("measured_on", "commit", "tree", "command", "machine"):
            assert data.get(field), f"{f.name}: no {field!r}"
        date.fromisoformat(data["measured_on"])


def _in_history(commit: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, "HEAD"]).returncode == 0


@pytest.mark.parametrize("file,entry_path", sources(ROOT / "README.md"), ids=lambda v: v or "(file)")
def test_every_readme_figure_was_measured_at_a_date_and_a_commit_of_this_history(file, entry_path):
    entry = resolve(load(file), entry_path)
    where = f"{file} {entry_path or '(file)'}"
    date.fromisoformat(entry.get("measured_on", "none"))
    assert COMMIT.fullmatch(str(entry.get("commit"))), (
        f"{where}: no commit (python -m benchmarks.refresh_quotes --backfill)"
    )
    assert entry.get("tree") in TREES, f"{where}: tree {entry.get('tree')!r} is none of {sorted(TREES)}"
    if (
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True, text=True
        ).stdout.strip()
        != "false"
    ):
        pytest.skip("no full git history to look the commit up in")
    assert _in_history(entry["commit"]), f"{where}: commit {entry['commit']} is not in this branch's history"


def test_readme_states_the_date_and_commit_of_every_figure():
    """The README's provenance block lists each entry its figures come from with that entry's date and
    commit (the page check below holds it equal to the files; this one that it is there and complete)."""
    readme = ROOT / "README.md"
    block = BLOCK.search(readme.read_text())
    assert block, "README.md has no provenance block (<!-- provenance: ... --> ... <!-- /provenance -->)"
    for file, entry_path in sources(readme):
        entry = resolve(load(file), entry_path)
        row = [
            line
            for line in block[2].splitlines()
            if line.startswith(f"| `{file.split('/')[-1]}`" + (f" `{entry_path}` |" if entry_path else " |"))
        ]
        assert row and entry["measured_on"] in row[0] and f"`{entry['commit'][:7]}`" in row[0], (file, entry_path, row)


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_is_what_refresh_quotes_writes(doc):
    """Running `python -m benchmarks.refresh_quotes` would change nothing: every figure, date and
    provenance table is the results files' (a failure here: run it, after checking the new figures)."""
    assert refresh(doc) == doc.read_text(), f"{doc.relative_to(ROOT)} differs from its results files"


def test_refresh_rewrites_stale_figures_in_the_writers_style():
    from benchmarks.refresh_quotes import MARKER, NUMBER_BEFORE, quote_text, refreshed

    assert quote_text("1.00", 14.965) == "14.97"  # half up at the written precision
    assert quote_text("+1,000", 52594.6) == "+52,595" and quote_text("+5.0", -3.25) == "-3.3"
    assert quote_text("0.950", 0.9504) == "0.950" and quote_text("200", 200) == "200"
    assert quote_text("2026-01-01", "2026-12-01") == "2026-12-01"
    assert quote_text("2026-01-01", 5) is None and quote_text("5", "2026-12-01") is None
    lava = "benchmarks/results/lava_leap.json"
    line = (
        f"took **1.00 s**<!-- src: {lava} warm_median_s --> (+1,000<!-- src: {lava} cold_cache_s -->), "
        f"measured 1999-01-01<!-- src: {lava} measured_on -->."
    )
    new = refreshed(line)
    assert new.startswith("took **") and " s**<!--" in new and "(+" in new
    assert f"measured {load(lava)['measured_on']}<!--" in new
    for m in MARKER.finditer(new):
        assert check_quote(new[: m.start()], m["file"], m["path"]) is None, m[0]
        assert NUMBER_BEFORE.search(new[: m.start()])
    assert refreshed(new) == new
    assert "is not a date" in check_quote("on 2026-12-01", lava, "warm_median_s")
    assert "is not a number" in check_quote("1", lava, "measured_on")
    assert "written 1999-01-01" in check_quote("on 1999-01-01", lava, "measured_on")


def test_a_figure_is_dated_by_the_nearest_entry_that_carries_a_date():
    data = {
        "measured_on": "2026-01-01",
        "a": {"measured_on": "2026-01-02", "b": {"x": [1, {"measured_on": "d", "y": 2}]}},
        "c": {"z": 1},
    }
    assert dated_entry(data, "a.b.x.0") == "a"
    assert dated_entry(data, "a.b.x.1.y") == "a.b.x.1"
    assert dated_entry(data, "c.z") == ""


def test_backfill_names_the_commit_that_last_changed_each_entry(tmp_path):
    """In a real repository: an entry's commit is the newest since which its figures are what they are;
    prose edits and changes to other entries do not count, and figures no commit holds get none."""

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    path, commits = tmp_path / "r.json", []

    def commit(data):
        path.write_text(json.dumps(data))
        git("add", "r.json")
        git("commit", "-qm", "x")
        commits.append(
            subprocess.run(
                ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
        )

    entry = {"measured_on": "2026-01-01", "v": 1}
    commit({"measured_on": "2026-01-01", "v": 1, "e": entry})
    commit({"measured_on": "2026-01-02", "v": 2, "e": entry})
    commit({"measured_on": "2026-01-02", "v": 2, "e": entry, "note": "reworded", "benchmark": "reworded"})
    commit({"measured_on": "2026-01-02", "v": 2, "e": {**entry, "v": 3}, "note": "reworded"})
    data = json.loads(path.read_text())
    assert last_change("r.json", "e", data, tmp_path) == commits[3]
    assert last_change("r.json", "", data, tmp_path) == commits[1]
    data["v"] = 4
    assert last_change("r.json", "", data, tmp_path) is None


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


def test_benchmarks_names_the_benchmark_that_re_measures_each_readme_file():
    """BENCHMARKS.md's owners table has a row, with a script that exists, for every results file the
    README quotes."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    owners = text[text.index("## Who owns the README's figures") : text.index("## Every benchmark")]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `(\S+\.json)` \|.*\| `(\S+\.py)[^`]*`[^|]*\|$", owners, re.M)}
    for file in {file for file, _ in sources(ROOT / "README.md")}:
        name = file.split("/")[-1]
        assert name in rows, f"BENCHMARKS.md names no benchmark for {name}"
        assert (ROOT / "benchmarks" / rows[name]).is_file(), f"BENCHMARKS.md: no benchmarks/{rows[name]}"


def test_a_run_stamps_the_commit_it_ran_at():
    from benchmarks.results_file import provenance, stamped

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    stamp = provenance()
    assert (stamp["commit"], date.fromisoformat(stamp["measured_on"])) == (head, date.today())
    assert stamp["tree"] in ("clean", "dirty")
    assert {k: v for k, v in stamped({"x": 1}).items() if k not in ("measured_on", "tree")} == {"x": 1, "commit": head}
