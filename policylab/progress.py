"""Progress on stderr: bars for long stages (rich: description, count, rate and ETA), status lines,
and the tally of results the current stage has in the store (what an interrupted command reports)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

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


@contextmanager
def progress_bar(label: str, total: int, unit: str = "it") -> Iterator[Bar]:
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

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)
        task = self._progress.tasks[self._task]
        speed = task.speed or 0.0
        self._progress.update(self._task, rate=f"{speed:,.1f} {self._unit}/s")

    def status(self, text: str) -> None:
        """Show `text` after the rate (a learner's latest mean return, say)."""
        self._progress.update(self._task, status=text)


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
