"""Ctrl-C and SIGTERM: stop soon, keep every finished result, leave no process behind.

Inside `deferred()` a signal is only noted, and raised by the next `check()`; docs/design.md, "Module notes"."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from policylab.progress import tally

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """A SIGINT or SIGTERM asked this command to stop. A BaseException, so that no `except Exception`
    turns an interrupt into an internal error."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    received: int | None = None  # the first signal's number
    pending = False  # received inside `deferred()`, not yet raised
    deferring = 0  # depth of `deferred()` blocks
    said = False  # the line is on stderr


_state = _State()


def _handle(signum: int, frame) -> None:
    if _state.received is not None:
        _exit_now(signum)
    _state.received = signum
    threading.excepthook = _torn_down
    if _state.deferring:
        _state.pending = True
        return
    raise Interrupted(signum)


def _torn_down(args) -> None:
    """A background thread's error once the command is interrupted: a consequence of the tear-down (a
    process pool's manager thread meeting a killed worker or resource tracker), not a fault of its own;
    the one line says what happened, so it is not printed."""


def _exit_now(signum: int) -> None:
    """The second signal: kill every descendant and exit, without unwinding (no joins, no atexit),
    with the line unless the first signal's was said already."""
    cursor = "\x1b[?25h" if sys.stderr.isatty() else ""  # a live progress bar hides the cursor
    stderr = _muted_stderr()
    _kill_descendants()
    if not _state.said:
        try:
            os.write(stderr, f"{cursor}\npolicylab: {line()}\n".encode())
        except OSError:
            pass
    os._exit(128 + signum)


def say() -> None:
    """Print the one line of an interrupted command (once: a second signal then does not repeat it)."""
    print(f"policylab: {line()}", file=sys.stderr, flush=True)
    _state.said = True


def leave(code: int) -> None:
    """End a command that an interrupt stopped, once its finished results are written and its line
    printed (inside `handled()`: a second signal meanwhile ends it the same way). The interpreter's
    exit hooks would join what the interrupt abandoned (a process pool's manager and feeder threads
    can wait forever on a killed worker's pipe), so whatever is left is killed and the process exits
    without them."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _muted_stderr()
    _kill_descendants()
    os._exit(code)


def _muted_stderr() -> int:
    """Point this process's stderr (fd 2) at /dev/null and return a descriptor of the former one.

    Killing the tree races the threads still running in this process: a process pool's manager
    thread that finds its resource tracker killed warns, starts another and sends it names it never
    registered, and that tracker prints a traceback for each (found by CI under load). After the
    interrupt that is tear-down, not news; from here on the one line is all the command says, and
    any child started meanwhile inherits the muted stderr."""
    try:
        saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        return 2
    return saved


def _kill_descendants() -> None:
    """Stop the whole tree below this process, then kill it. Stopping first matters: a process killed
    while its child is being started (Ray's raylet starting its agents) leaves that child to init,
    out of reach; a stopped parent stays in the tree, so its new child is found on the next pass."""
    stopped: list[int] = []
    for _ in range(100):  # a tree still growing after 100 passes is not one this command made
        new = [pid for pid in _descendants(os.getpid()) if pid not in stopped]
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        stopped += new
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _descendants(pid: int) -> list[int]:
    """Every living process below `pid` (children first), read from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


@contextmanager
def handled() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into `Interrupted` while the block runs (main thread only; the
    previous handlers come back after it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    hook = threading.excepthook
    _state.__dict__.clear()
    tally.reset()
    for s in SIGNALS:
        signal.signal(s, _handle)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        threading.excepthook = hook
        _state.__dict__.clear()


@contextmanager
def deferred() -> Iterator[None]:
    """Note a first signal inside the block instead of raising it there; `check()` raises it."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1


def check() -> None:
    """Raise the signal noted inside `deferred()`, if any."""
    if _state.pending and not _state.deferring:
        _state.pending = False
        raise Interrupted(_state.received)


def raise_if_signalled() -> None:
    """Raise `Interrupted` if a signal arrived: a worker that failed meanwhile (a pool worker ended
    by the same SIGTERM, sent to the whole process group) failed because of it."""
    if _state.received is not None:
        _state.pending = False
        raise Interrupted(_state.received)


def line() -> str:
    """The one line an interrupted command prints: how far its current stage got, from `ensure`'s tally."""
    t = tally
    done = f" after {t.finished:,} of {t.planned:,} ({t.label})" if t.label else ""
    return f"interrupted{done}; rerun the same command to resume"
