"""Progress on stderr: rich bars on a terminal, one plain line per stage every few seconds elsewhere,
status lines, and the tally of results the current stage has in the store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

_console = Console(stderr=True)
LINE_EVERY_S = 5.0  # off a terminal: the least time between two progress lines of a stage


@contextmanager
def progress_bar(label: str, total: int, unit: str = "it", every_s: float = LINE_EVERY_S) -> Iterator[Bar | Lines]:
    """A bar on a terminal; elsewhere `Lines`, a plain line at most every `every_s` seconds and one at the end."""
    if not _console.is_terminal:
        lines = Lines(label, total, unit, every_s)
        yield lines
        lines.line()
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=_console,
        transient=False,
        refresh_per_second=4,
    )
    with progress:
        task_id = progress.add_task(label, total=total, rate="", status="")
        yield Bar(progress, task_id, unit)


class Bar:
    """A handle on one progress bar; `advance(n)` after each finished unit of work."""

    def __init__(self, progress: Progress, task_id: int, unit: str):
        self._progress = progress
        self._task = task_id
        self._unit = unit

    def already(self, n: int) -> None:
        """Count `n` units done before this process started (a resumed run): shown, not in the rate."""
        self._progress.reset(self._task, completed=n)

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)
        task = self._progress.tasks[self._task]
        speed = task.speed or 0.0
        self._progress.update(self._task, rate=f"{speed:,.1f} {self._unit}/s")

    def status(self, text: str) -> None:
        """Show `text` after the rate (a learner's latest mean return, say)."""
        self._progress.update(self._task, status=text)


class Lines:
    """Progress off a terminal: "label: done/total (pct), rate unit/s, eta m:ss, status", printed when at
    least `every_s` seconds passed since the last line, and once when the stage ends (with its elapsed time)."""

    def __init__(self, label: str, total: int, unit: str, every_s: float):
        self.label, self.total, self.unit, self.every_s = label, total, unit, every_s
        self.done, self._before, self._status = 0, 0, ""
        self._start = self._last = time.monotonic()

    def already(self, n: int) -> None:
        """Count `n` units done before this process started (a resumed run): shown, not in the rate."""
        self.done += n
        self._before += n

    def advance(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self._last >= self.every_s:
            self.line()

    def status(self, text: str) -> None:
        self._status = text

    def line(self) -> None:
        now = time.monotonic()
        self._last, elapsed = now, now - self._start
        rate = (self.done - self._before) / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        when = (
            f"eta {_clock(left / rate)}"
            if left > 0 and rate > 0
            else "eta unknown"
            if left > 0
            else f"done in {_clock(elapsed)}"
        )
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        _console.print(
            f"{self.label}: {self.done:,}/{self.total:,}{pct}, {rate:,.1f} {self.unit}/s, {when}"
            + (f", {self._status}" if self._status else ""),
            highlight=False,
            soft_wrap=True,
        )


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def say(message: str) -> None:
    """One status line on stderr (stdout stays for results such as report paths)."""
    _console.print(message, highlight=False)


class Tally:
    """How far the current stage got: `finished` of its `planned` results are in the store. `ensure`
    keeps it (the writer thread counts each record it writes); the line of an interrupted command
    reads it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.label: str | None = None
        self.planned = 0
        self.finished = 0

    def start(self, label: str, planned: int, present: int) -> None:
        self.label, self.planned, self.finished = label, planned, present

    def add(self, n: int) -> None:
        self.finished += n


tally = Tally()
