"""The runs index over one real run of every command (small configs): breakout eval, audit, train,
learn, transfer, trace, lockstep and calibrate, a Lava Leap run, the boundary commands (a checkpoint,
a robot card, calibrate, sweeps, verify, an analysis folder with its nested stage folders, a diff, a search), plus a corrupt
and an unfinished folder; rows, order, and the page (written by `policylab runs` itself) opened in
headless Chromium with every link resolving. Each command's row comes from the kind it declares
beside its `command(...)` line; `policylab demo` makes a `breakout train` run (the train run here
stands for it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from policylab.cli import invoke, run_kinds
from policylab.errors import BadInput
from policylab.report.browser import render_check
from policylab.report.run_kinds import RunKind
from policylab.report.runs_index import write_runs_index
from policylab.studies.breakout.fidelity.trace import TRACE_DIR
from tests.support.cli_commands import INDEX

pytestmark = pytest.mark.slow
RAN: set[str] = set()  # the commands the fixture ran
NOT_RUN = {
    "demo": "the whole training loop on its defaults: a `breakout train` run, as the small train here",
    "runs": "the index itself: test_page_in_browser_links_resolve runs it",
    "boundary probe": "a server that runs until Ctrl-C (its out folder holds no run): "
    "tests/studies/boundary/test_probe.py runs it",
}


def _cli(*argv) -> None:
    """Each run is made the way a user makes it: the real command, in this process."""
    assert invoke([str(a) for a in argv]) == 0, argv
    RAN.add(
        " ".join(str(a) for a in argv[:2])
        if argv[0] in ("breakout", "lava-leap", "boundary", "store")
        else str(argv[0])
    )


def _breakout(root: Path) -> None:
    b = root / "breakout"
    _cli(
        "breakout",
        "eval",
        "--env",
        "shadow",
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        2,
        "--max-steps",
        50,
        "--preset",
        "go-v1",
        "--out",
        b / "eval",
    )
    _cli(
        "breakout",
        "audit",
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        2,
        "--max-steps",
        50,
        "--preset",
        "go-v1",
        "--out",
        b / "audit",
    )
    _cli(
        "breakout",
        "train",
        "--space",
        "random",
        "--budget",
        2,
        "--search-seeds",
        2,
        "--rounds",
        1,
        "--validate-episodes",
        2,
        "--exact-episodes",
        4,
        "--max-steps",
        50,
        "--no-video",
        "--out",
        b / "train",
    )
    _cli(
        "breakout",
        "learn",
        "--steps",
        1024,
        "--envs",
        8,
        "--rollout",
        32,
        "--minibatch",
        64,
        "--epochs",
        2,
        "--hidden",
        16,
        "--max-steps",
        40,
        "--validate-episodes",
        2,
        "--gap-episodes",
        2,
        "--executor",
        "local",
        "--out",
        b / "learn",
    )
    _cli(
        "breakout",
        "transfer",
        "--policy",
        b / "learn" / "policy.onnx",
        "--episodes",
        1,
        "--gap-episodes",
        2,
        "--max-steps",
        50,
        "--out",
        b / "transfer",
    )
    _cli("breakout", "trace", "--scenario", "noop_serves", "--out", b / "trace")
    _cli(
        "breakout",
        "lockstep",
        "--episodes",
        1,
        "--max-steps",
        50,
        "--policy",
        "v3",
        "--strips",
        1,
        "--out",
        b / "lockstep",
    )
    # the fit on three of the committed traces (two scripted, one policy's): a third of the whole suite's time
    traces = root.parent / f"{root.name}-traces"
    traces.mkdir()
    for name in ("noop_serves", "paddle_holds", "policy_k0_sticky"):
        shutil.copy(TRACE_DIR / f"{name}.npz", traces)
    _cli("breakout", "calibrate", "--traces", traces, "--out", b / "calibrate")


def _lava(root: Path) -> None:
    _cli("lava-leap", "run", "--rounds", 140, "--seeds", 1, "--out", root / "lava")  # smallest allowed run


def _boundary(root: Path) -> None:
    store = root / "boundary" / "store"  # a store outside any run: searched by no one
    _cli("boundary", "train", "--iterations", 1, "--out", root / "boundary" / "checkpoint")  # no run folder
    _cli("boundary", "robot", "ant", "--zero-policy-worlds", 1, "--out", root / "boundary" / "robot-ant")
    _cli(
        "boundary",
        "learn",
        "--steps",
        64,
        "--envs",
        8,
        "--rollout",
        8,
        "--minibatch",
        32,
        "--hidden",
        "8",
        "--eval-worlds",
        1,
        "--out",
        root / "boundary" / "learn",
    )
    _cli(
        "boundary",
        "calibrate",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--n-nominal",
        2,
        "--n-pushed",
        1,
        "--out",
        root / "boundary" / "calibrate",
    )
    for name in ("ant_v0", "ant_v1"):
        _cli(
            "boundary",
            "sweep",
            "--checkpoint",
            name,
            "--mu-min",
            0.5,
            "--mu-max",
            1.0,
            "--n-mu",
            2,
            "--push-min",
            10,
            "--push-max",
            200,
            "--n-push",
            2,
            "--seeds-per-cell",
            1,
            "--chunk",
            16,
            "--store",
            store,
            "--out",
            root / "boundary" / f"sweep-{name}",
        )
        # the equivalence gate (diff and report refuse a sweep without it); one folder inside root
        _cli(
            "boundary",
            "verify",
            "--robot",
            "ant",
            "--checkpoint",
            name,
            "--store",
            store,
            "--sample",
            1,
            "--out",
            root / "boundary" / "verify" if name == "ant_v0" else root.parent / f"{root.name}-verify-{name}",
        )
    ana = root / "boundary" / "ana"
    _cli("boundary", "reduce", "--store", store, "--checkpoint", "ant_v0", "--resamples", 100, "--out", ana)
    _cli("boundary", "select", "--out", ana, "--n-boundary", 1, "--n-recoveries", 0)
    _cli("boundary", "replay", "--out", ana)
    _cli("boundary", "clips", "--out", ana, "--width", 48, "--height", 32, "--workers", 1)
    _cli("boundary", "rrd", "--out", ana)
    _cli("boundary", "report", "--out", ana)
    _cli(
        "boundary",
        "diff",
        "--store",
        store,
        "--a",
        "ant_v0",
        "--b",
        "ant_v1",
        "--resamples",
        100,
        "--out",
        root / "boundary" / "diff",
    )
    _cli(
        "boundary",
        "search",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--rows",
        "friction=0.5",
        "--budget",
        8,
        "--store",
        store,
        "--out",
        root / "boundary" / "search",
    )
    _cli("boundary", "report", "--out", root / "boundary" / "search")
    _cli("store", "check", store)  # a store and a table are no run folders: they add no row
    _cli("store", "pack", store)
    _cli("export", store, "--out", root / "boundary" / "rollouts.parquet")


EXPECTED = {  # run folder -> (study, command, page, a headline label, naming what it was measured on)
    "breakout/eval": ("breakout", "breakout eval", "report.html", "mean score on shadow Breakout (go-v1)"),
    "breakout/audit": ("breakout", "breakout audit", "audit.html", "ALE mean"),
    "breakout/train": ("breakout", "breakout train", "report.html", "pick mean on 4 exact shadow seeds"),
    "breakout/learn": ("breakout", "breakout learn", "report.html", "network mean on shadow (ale-exact, exact)"),
    "breakout/transfer": (
        "breakout",
        "breakout transfer",
        "transfer.html",
        "network mean on shadow (ale-exact, exact)",
    ),
    "breakout/trace": ("breakout", "breakout trace", "traces.json", "traces"),
    "breakout/lockstep": ("breakout", "breakout lockstep", "report.html", "identical to the end"),
    "breakout/calibrate": ("breakout", "breakout calibrate", "calibration.html", "objective after"),
    "boundary/robot-ant": ("boundary", "boundary robot", "robot.json", "zero policy survived"),
    "boundary/calibrate": ("boundary", "boundary calibrate", "calibration.json", "nominal survived"),
    "boundary/learn": ("boundary", "boundary learn", "report.html", "nominal survived"),
    "boundary/verify": ("boundary", "boundary verify", "equivalence.json", "identical"),
    "lava": ("lava_leap", "lava-leap run", "index.html", "GRPO final"),
    "boundary/sweep-ant_v0": ("boundary", "boundary sweep", "sweep.json", "failed"),
    "boundary/sweep-ant_v1": ("boundary", "boundary sweep", "sweep.json", "failed"),
    "boundary/ana": ("boundary", "boundary reduce", "report/report.html", "failed"),
    "boundary/diff": ("boundary", "boundary diff", "diff.json", "cells safer"),
    "boundary/search": ("boundary", "boundary search", "report/report.html", "rollouts"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _breakout(root)
    _lava(root)
    _boundary(root)
    (root / "broken").mkdir()
    (root / "broken" / "config.json").write_text('{"command": "breakout eval", ')  # cut short
    (root / "unfinished").mkdir()
    (root / "unfinished" / "config.json").write_text(json.dumps({"command": "breakout eval"}))
    # newest first: give every config.json its own mtime, two of them equal (ties go by path)
    names = sorted([*EXPECTED, "broken", "unfinished"])
    for i, name in enumerate(names):
        t = 1_700_000_000 + 100 * i
        os.utime(root / name / "config.json", (t, t))
    tie = 1_700_000_000 + 100 * len(names)
    for name in ("lava", "boundary/diff"):
        os.utime(root / name / "config.json", (tie, tie))
    return root


def test_rows(runs):
    html = write_runs_index(runs, run_kinds())
    assert html == runs / "index.html"
    rows = json.loads((runs / "index.json").read_text())["rows"]
    by_path = {r["path"]: r for r in rows}
    # nested stage folders (ana/select, ana/report) and stores (breakout/eval/store) are not runs of their own
    assert sorted(by_path) == sorted([*EXPECTED, "broken", "unfinished"])
    for path, (study, command, page, label) in EXPECTED.items():
        row = by_path[path]
        assert (row["study"], row["command"], row["error"]) == (study, command, None), row
        assert row["report"] == f"{path}/{page}" and (runs / row["report"]).is_file()
        headline = dict(row["headline"])
        assert isinstance(headline[label], (int, float)), row
        assert row["config_summary"]
    assert by_path["breakout/train"]["verdict"] == "pick vs baseline: too few seeds"  # 4 pairs
    assert dict(by_path["breakout/eval"]["headline"])["policy"] == "breakout_policy_v3 (defaults)"
    assert by_path["breakout/audit"]["verdict"].startswith("primary gap: ")
    assert re.fullmatch(
        r"GRPO vs PPO: too few seeds, all at lr 0\.5; too few seeds, each at its chosen lr \(GRPO "
        r"[\d.]+, PPO [\d.]+\) on fresh seeds; .*; (all \d+ checks hold|\d+ of \d+ checks fail)",
        by_path["lava"]["verdict"],
    )  # one seed: each pair's verdicts at equal and at chosen rates
    assert by_path["breakout/eval"]["verdict"] is None
    assert "max_steps=50" in by_path["breakout/eval"]["config_summary"]
    assert by_path["boundary/ana"]["headline"] and dict(by_path["boundary/ana"]["headline"])["rule agrees"] == 4
    robot = by_path["boundary/robot-ant"]
    assert dict(robot["headline"])["of nominal worlds"] == 1 and "robot=ant" in robot["config_summary"]
    assert robot["verdict"] == "spec checked, no warnings" or robot["verdict"].startswith("the zero policy survived 0")
    broken, unfinished = by_path["broken"], by_path["unfinished"]
    assert broken["study"] is None and "config.json is not valid JSON" in broken["error"]
    assert unfinished["command"] == "breakout eval" and "report.json is missing" in unfinished["error"]
    assert broken["report"] is None and unfinished["report"] is None


def test_every_command_declares_its_row(runs):
    """Every command ran once (but demo and runs, see NOT_RUN), and each shows as the kind it declares:
    its own row, the row of the run folder it writes into, or none (a checkpoint folder)."""
    write_runs_index(runs, run_kinds())
    rows = json.loads((runs / "index.json").read_text())["rows"]
    seen = {r["command"] for r in rows if r["error"] is None}
    assert RAN == set(INDEX) - set(NOT_RUN)
    for name, index in INDEX.items():
        hosts = [index.command] if isinstance(index, RunKind) else [index] if isinstance(index, str) else index or []
        assert hosts or name in ("boundary train", "boundary probe", "runs", "store check", "store pack", "export"), (
            name
        )
        assert all(host in seen for host in hosts), (name, hosts)
    assert {k.command for k in run_kinds()} == {i.command for i in INDEX.values() if isinstance(i, RunKind)}
    assert (runs / "boundary" / "checkpoint").is_dir() and "boundary/checkpoint" not in {r["path"] for r in rows}
    by_path = {r["path"]: r for r in rows}
    assert by_path["breakout/learn"]["verdict"] in ("vs v3: improved", "vs v3: worse", "vs v3: inconclusive")


def test_newest_first_ties_by_path(runs):
    write_runs_index(runs, run_kinds())
    paths = [r["path"] for r in json.loads((runs / "index.json").read_text())["rows"]]
    assert paths[:2] == ["boundary/diff", "lava"]  # the tie, in path order
    rest = sorted((set(EXPECTED) | {"broken", "unfinished"}) - {"boundary/diff", "lava"}, reverse=True)
    assert paths[2:] == rest  # mtimes were given in path order


def test_page_in_browser_links_resolve(runs, tmp_path):
    out = tmp_path / "elsewhere"  # index written outside root: links still relative, still resolve
    assert invoke(["runs", str(runs), "--out", str(out)]) == 0  # the command itself (not `_cli`: RAN is the fixture's)
    html = out / "index.html"
    assert html.is_file() and (out / "index.json").is_file()
    rows = json.loads((out / "index.json").read_text())["rows"]
    text = html.read_text()
    links = re.findall(r'<a href="([^"]+)"', text)
    assert links[0] == "index.json"
    assert sorted(links[1:]) == sorted(r["report"] for r in rows if r["report"])
    assert len(links) - 1 == len(EXPECTED)
    for link in links:
        assert (out / unquote(link)).is_file(), link
    assert "&lt;a" not in text  # the links are links, not escaped text
    seen = render_check(html)
    assert seen["title"] == f"Runs under {runs.name}"
    assert seen["images"] == 0 and seen["loaded"] == 0  # the page's script ran


def test_bad_input(runs, tmp_path):
    with pytest.raises(BadInput) as exc:
        write_runs_index(tmp_path / "missing", run_kinds())
    assert exc.value.field == "root"
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput) as exc:
        write_runs_index(tmp_path / "file", run_kinds())
    assert exc.value.field == "root"
    with pytest.raises(BadInput) as exc:  # the lava run's own index.html must not be overwritten
        write_runs_index(runs / "lava", run_kinds())
    assert exc.value.field == "out"
    assert "<title>Lava Leap" in (runs / "lava" / "index.html").read_text()
