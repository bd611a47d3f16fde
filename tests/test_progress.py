"""Progress off a terminal (a log file, a pipe): one plain line per stage every few seconds with done/total,
rate and eta, and a last line when the stage ends; no bar, no cut-off columns. Run in this process with
stderr a non-tty stream, as under `cmd 2> log`."""

from __future__ import annotations

import contextlib
import io
import re
import time

from policylab.progress import progress_bar


def lines_of(every_s: float, total: int, steps: list[int], pause: float = 0.0) -> list[str]:
    err = io.StringIO()  # isatty() is False: what a redirected stderr is
    with contextlib.redirect_stderr(err):
        with progress_bar("search on shadow", total, "episodes", every_s=every_s) as bar:
            for n in steps:
                time.sleep(pause)
                bar.advance(n)
            bar.status("mean return 12.5")
    return err.getvalue().splitlines()


def test_a_plain_line_per_interval_and_one_at_the_end():
    lines = lines_of(0.0, 10, [4, 6])  # every advance is past the interval here
    assert len(lines) == 3
    assert re.fullmatch(r"search on shadow: 4/10 \(40%\), [\d,.]+ episodes/s, eta \d+:\d\d", lines[0]), lines
    assert re.fullmatch(r"search on shadow: 10/10 \(100%\), [\d,.]+ episodes/s, done in \d+:\d\d", lines[1]), lines
    assert lines[2].startswith("search on shadow: 10/10 (100%)") and lines[2].endswith(", mean return 12.5")
    assert not any("\x1b" in x or "━" in x or "…" in x for x in lines)  # no escape codes, bars or cut columns


def test_no_line_inside_the_interval_but_the_last_counts_every_unit():
    lines = lines_of(3600.0, 1_200, [100] * 12)
    assert len(lines) == 1 and lines[0].startswith("search on shadow: 1,200/1,200 (100%), ")


def test_the_rate_is_units_over_elapsed_time():
    (line,) = lines_of(3600.0, 4, [1, 1, 1, 1], pause=0.05)
    rate = float(re.search(r", ([\d.]+) episodes/s", line).group(1))
    assert 0 < rate <= 4 / 0.2  # 4 units in at least 0.2 s (four 0.05 s pauses)


def test_work_done_before_a_resume_is_shown_but_not_in_the_rate():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with progress_bar("learning", 1_000_000, "steps", every_s=3600.0) as bar:
            bar.already(990_000)
            time.sleep(0.05)
            bar.advance(10)
    (line,) = err.getvalue().splitlines()
    assert line.startswith("learning: 990,010/1,000,000 (99%), ")
    assert float(re.search(r", ([\d,.]+) steps/s", line).group(1).replace(",", "")) <= 10 / 0.05
