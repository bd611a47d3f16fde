"""Ctrl-C and SIGTERM on a real command, with each executor: one line, exit 130/143, no traceback,
no process left, only whole records, and a rerun that ends as an uninterrupted run ends.

Each test starts a small Ant boundary sweep (128 worlds in chunks of 2) in a session of its own,
signals it once the store holds its first records, and checks what is left.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policylab.cli import invoke
from policylab.rollout.store import Store
from tests.support import signal_at
from tests.support.paths import ROOT

POLICYLAB = str(Path(sys.executable).with_name("policylab"))
GRID = [
    "boundary",
    "sweep",
    "--robot",
    "ant",
    "--n-mu",
    "8",
    "--n-push",
    "8",
    "--seeds-per-cell",
    "2",
    "--chunk",
    "2",
    "--store",
    "S",
    "--out",
    "O",
]
PLANNED = 128
LINE = re.compile(r"^policylab: interrupted after ([\d,]+) of 128 \(sweep ant_v0\); rerun the same command to resume$")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """The folder of the same sweep run without interruption."""
    folder = tmp_path_factory.mktemp("whole")
    _sweep_in(folder)
    return folder


def _sweep_in(folder: Path) -> None:
    """The whole sweep, uninterrupted, in-process, from `folder` (its paths are relative)."""
    with contextlib.chdir(folder):
        assert invoke(GRID + ["--executor", "local"]) == 0


def _session(sid: int) -> list[str]:
    """The living (not zombie) processes of session `sid`, as 'pid comm'."""
    left = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            left.append(f"{stat.parent.name} {comm}")
    return left


def _rows(folder: Path) -> int:
    index = folder / "S" / "index.sqlite"
    if not index.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM rollouts").fetchone()[0]
    except sqlite3.Error:
        return 0


def _interrupt(folder: Path, executor: str, sig: int, *, group: bool = True, again_after: float | None = None):
    """Run the sweep, send `sig` once its first records exist (and again after `again_after` s);
    return (exit status, stderr, seconds from the last signal to the exit)."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}  # this checkout's code
    proc = subprocess.Popen(
        [POLICYLAB, *GRID, "--executor", executor, "--workers", "2"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600  # a guard, not a speed check: a loaded machine runs the first chunk slowly
        while _rows(folder) == 0:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        send = (lambda s: os.killpg(proc.pid, s)) if group else (lambda s: os.kill(proc.pid, s))
        send(sig)
        if again_after is not None:
            time.sleep(again_after)
            send(sig)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _none_left(proc.pid)
    return proc.returncode, err, took


def _none_left(pid: int) -> None:
    """No process of the command's session is left. Children that outlive the driver are re-parented and
    end on their own (a resource tracker reads its pipe's end): they get a moment before they count."""
    deadline = time.monotonic() + 10
    while _session(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session(pid) == [], "processes left behind"


def _check_stopped(folder: Path, code: int, err: str, expected: int) -> int:
    """Exit status, one line, no traceback, whole records only; returns N of the line."""
    assert code == expected, err
    assert "Traceback" not in err and "***" not in err and "SIGTERM received" not in err, err
    lines = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(lines) == 1, err
    match = LINE.match(lines[0].strip())
    assert match, lines
    finished = int(match.group(1).replace(",", ""))
    with Store(folder / "S") as store:
        keys = store.keys()
        for key in keys:  # every indexed record has its whole payload (sha256 checked)
            store.payload(key)
    assert 0 < len(keys) < PLANNED and finished == len(keys), (finished, len(keys))
    assert not list((folder / "S").rglob("*.tmp"))
    return finished


def _resume_matches(folder: Path, uninterrupted: Path) -> None:
    _sweep_in(folder)
    assert (folder / "O" / "sweep.json").read_bytes() == (uninterrupted / "O" / "sweep.json").read_bytes()
    with Store(folder / "S") as a, Store(uninterrupted / "S") as b:
        assert a.fingerprint() == b.fingerprint()


def test_ctrl_c_with_processes_keeps_finished_results_and_resumes(tmp_path, uninterrupted):
    code, err, took = _interrupt(tmp_path, "processes", signal.SIGINT)
    _check_stopped(tmp_path, code, err, 130)
    assert took < 10  # queued chunks were cancelled, not run
    _resume_matches(tmp_path, uninterrupted)


def test_sigterm_to_the_driver_alone_stops_its_pool_workers(tmp_path):
    code, err, _ = _interrupt(tmp_path, "processes", signal.SIGTERM, group=False)
    _check_stopped(tmp_path, code, err, 143)


def test_sigterm_with_the_local_executor(tmp_path):
    code, err, _ = _interrupt(tmp_path, "local", signal.SIGTERM)
    _check_stopped(tmp_path, code, err, 143)


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    code, err, took = _interrupt(tmp_path, "processes", signal.SIGINT, again_after=0.01)
    _check_stopped(tmp_path, code, err, 130)
    assert took < 5


@pytest.mark.usefixtures("one_local_ray")
def test_sigterm_twice_with_a_local_ray(tmp_path, uninterrupted):
    """No Ray stack dump on SIGTERM; the second signal, while Ray shuts down, ends the command at once
    and takes the local Ray's processes with it."""
    code, err, took = _interrupt(tmp_path, "ray", signal.SIGTERM, again_after=0.2)
    _check_stopped(tmp_path, code, err, 143)
    assert took < 5
    _resume_matches(tmp_path, uninterrupted)


def _units(folder: Path) -> set[str]:
    return {p.name for p in (folder / "S").glob("units/*.pack")}


@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_workers_die_with_a_driver_killed_by_sigkill(tmp_path, request, executor):
    """kill -9 of the driver alone: its workers (and a local Ray's processes) end with it, within
    seconds, and write no unit file after it."""
    if executor == "ray":
        request.getfixturevalue("one_local_ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}  # this checkout's code
    proc = subprocess.Popen(
        [POLICYLAB, *GRID, "--executor", executor, "--workers", "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600  # a guard, not a speed check: a loaded machine starts workers slowly
        while not _units(tmp_path):  # workers are running tasks
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert len(_session(proc.pid)) > 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        written = _units(tmp_path)
        deadline = time.monotonic() + 5
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _session(proc.pid)
    finally:
        for entry in _session(proc.pid):  # what the old code left behind
            os.kill(int(entry.split()[0]), signal.SIGKILL)
    assert left == [], "processes outlived their driver"
    time.sleep(1)
    assert _units(tmp_path) == written, "unit files written after the driver died"


SMALL = [
    "boundary",
    "sweep",
    "--robot",
    "ant",
    "--n-mu",
    "2",
    "--n-push",
    "2",
    "--seeds-per-cell",
    "2",
    "--chunk",
    "2",
    "--store",
    "S",
    "--out",
    "O",
    "--workers",
    "2",
]
ANY_LINE = re.compile(
    r"^policylab: interrupted after ([\d,]+) of 8 \(sweep ant_v0\); rerun the same command to resume$"
)
RAY_START = "ray._private.services:start_raylet"  # Ray starts its processes
RAY_CONNECT = "ray._private.worker:connect"  # the driver has connected (Ray's native handler was in place)


def _signalled_at(folder: Path, executor: str, *points: str) -> tuple[int, str]:
    """The small sweep, run by `tests.support.signal_at` with signals at `points`; (status, stderr),
    once no process of its session is left."""
    proc = subprocess.Popen(
        signal_at.argv(points, [*SMALL, "--executor", executor]),
        cwd=folder,
        env=signal_at.env(RAY_AUTH_MODE="disabled"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _none_left(proc.pid)
    return proc.returncode, err


@pytest.mark.parametrize(
    "executor, points, status",
    [
        ("processes", ["concurrent.futures:ProcessPoolExecutor.submit,before,SIGINT"], 130),  # the pool starts
        (
            "processes",
            [
                "policylab.rollout.executors:wait,before,SIGTERM",  # running, then as the pool stops
                "policylab.rollout.executors:_stop_pool,before,SIGTERM",
            ],
            143,
        ),
        ("processes", ["concurrent.futures:ProcessPoolExecutor.shutdown,after,SIGINT"], 130),  # once it stopped
        ("ray", [f"{RAY_START},before,SIGINT"] * 2, 130),  # while Ray starts
        ("ray", [f"{RAY_CONNECT},after,SIGTERM"], 143),
        ("ray", ["ray:wait,before,SIGTERM", "ray:shutdown,after,SIGTERM"], 143),  # running, then as Ray stops
        ("ray", ["ray:shutdown,after,SIGTERM"], 143),  # once it stopped
    ],
    ids=[
        "pool-start",
        "pool-stop-second",
        "pool-stopped-first",
        "ray-start-twice",
        "ray-connected",
        "ray-stop-second",
        "ray-stopped-first",
    ],
)
def test_each_phase_first_and_second_signals_say_the_one_line(tmp_path, request, executor, points, status):
    """A first or second SIGINT/SIGTERM while the executor starts, runs or stops, or once it has
    stopped: the one line, the documented status, no traceback and no process left."""
    if executor == "ray":
        request.getfixturevalue("one_local_ray")
    code, err = _signalled_at(tmp_path, executor, *points)
    assert code == status, err
    assert "Traceback" not in err and "***" not in err, err
    lines = [ln.strip() for ln in err.splitlines() if "interrupted" in ln]
    assert len(lines) == 1 and ANY_LINE.match(lines[0]), err
