"""Executors (`local`, `processes`, `ray`): where a batch of independent tasks runs, results yielded as they finish.

docs/design.md, "Vocabulary" (executor) and "Module notes"."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from multiprocessing import get_context
from typing import Any

from policylab.errors import BadInput
from policylab.interrupts import Interrupted, check, deferred, raise_if_signalled
from policylab.progress import progress_bar

EXECUTORS = ("local", "processes", "ray")


def check_executor(executor: str, ray_address: str | None = None) -> None:
    """Validate executor arguments before any work or writing starts."""
    if executor not in EXECUTORS:
        raise BadInput("executor", f"unknown executor {executor!r}; expected one of {', '.join(EXECUTORS)}")
    if ray_address is not None and executor != "ray":
        raise BadInput("ray_address", "only valid with --executor ray")
    if executor == "ray" and ray_address:
        _check_ray_reachable(ray_address)


def _check_ray_reachable(address: str) -> None:
    """Fail fast (exit 2) on an address nobody listens on, instead of hanging in ray.init."""
    import socket

    if address == "auto":
        return
    host, _, port = address.replace("ray://", "").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3):
            pass
    except (OSError, ValueError):
        raise BadInput("ray_address", f"cannot reach a Ray cluster at {address!r}") from None


def default_workers() -> int:
    """The CPUs this process may use (its affinity): the default count of worker processes, and of the
    threads that pack payloads (`payloads`)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_tasks(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    label: str = "tasks",
    unit: str = "task",
) -> Iterator[tuple[int, Any]]:
    """Run `fn` over `tasks`, yielding (index, result) as each finishes, with a progress bar.

    A signal the caller noted while it handled a result (`interrupts.deferred()`) is raised here
    when it asks for the next one, after the results that had finished meanwhile."""
    check_executor(executor, ray_address)
    if not tasks:
        return
    workers = workers or default_workers()
    with progress_bar(label, len(tasks), unit) as bar:
        if executor == "local":
            for i, task in enumerate(tasks):
                result = fn(task)
                bar.advance()
                yield i, result
                check()
        elif executor == "processes":
            yield from _run_processes(fn, tasks, workers, bar)
        else:
            yield from _run_ray(fn, tasks, workers, ray_address, bar)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@functools.cache  # once per process and parent: a Ray worker runs many tasks
def _die_with(parent: int) -> None:
    """End this process when `parent`, its parent process, ends, however that ends (kill -9 included).

    On Linux the kernel does it (`prctl(PR_SET_PDEATHSIG, SIGKILL)`: at once, even in the middle of
    native code); a parent already gone before the call is caught by comparing `getppid()` after it.
    The kernel sends the signal when the *thread* that started this process ends: pool workers are
    started by the thread that submits to the pool (the driver's, for as long as it runs the tasks)
    and a Ray worker by the raylet's main thread. Elsewhere a daemon thread polls `getppid()`."""
    try:
        tied = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL) == 0
    except (OSError, AttributeError):  # no prctl: not Linux
        tied = False
    if not tied:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="die-with-parent").start()
    elif os.getppid() != parent:
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)


def _start_pool_worker(driver: int) -> None:
    """A pool worker's first act: ignore SIGINT (the driver decides what stops) and die with the driver."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(driver)


def _run_processes(fn, tasks, workers, bar) -> Iterator[tuple[int, Any]]:
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context("spawn"), initializer=_start_pool_worker, initargs=(os.getpid(),)
    )
    pending: dict[Future, int] = {}
    try:
        pending = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=pending.__getitem__):
                result = _result(fut.result)
                i = pending.pop(fut)
                bar.advance()
                yield i, result
                check()
    except Interrupted:
        for fut in pending:
            fut.cancel()  # the queued ones; those already handed to a worker cannot be
        _stop_pool(pool)
        wait([f for f in pending if not f.cancelled()], timeout=10)  # each running one finished or failed
        for fut in sorted(pending, key=pending.__getitem__):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                bar.advance()
                yield pending[fut], fut.result()
        raise
    finally:
        if pending:
            _stop_pool(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _result(get: Callable, *args):
    """A finished task's result; a task that failed because the same signal stopped its worker is
    an interrupt, not an error."""
    try:
        return get(*args)
    except Exception:
        raise_if_signalled()
        raise


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and kill the workers now, running tasks and all (the pool has no
    public way to stop a running task, hence its `_processes`)."""
    workers = list((pool._processes or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.kill()
    for proc in workers:
        proc.join()


def _run_ray(fn, tasks, workers, ray_address, bar) -> Iterator[tuple[int, Any]]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    pending: dict[Any, int] = {}
    with _ray_connected(ray, workers, ray_address) as local:
        try:
            remote = ray.remote(_in_ray_worker)
            pending = {remote.remote(fn, task, local): i for i, task in enumerate(tasks)}
            # Ray's blocking calls would hold an exception raised by a signal handler until they end and
            # turn it into a SystemError: a signal is only noted during them and raised between calls.
            while pending:
                with deferred():
                    done, _ = ray.wait(list(pending), num_returns=1, timeout=0.25)
                    finished = sorted((pending.pop(ref), _result(ray.get, ref)) for ref in done)
                for i, result in finished:
                    bar.advance()
                    yield i, result
                check()
        except Interrupted:
            with deferred():
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0) if pending else ([], [])
                finished = []
                for ref in ready:
                    try:
                        finished.append((pending.pop(ref), ray.get(ref)))
                    except Exception:
                        pass
                finished.sort()
                for ref in pending:
                    ray.cancel(ref, force=True)
            for i, result in finished:
                bar.advance()
                yield i, result
            raise


def _in_ray_worker(fn: Callable[[Any], Any], task: Any, local: bool) -> Any:
    """`fn(task)` in a Ray worker; in one of a local Ray this command started, the worker is first
    tied to its parent, the raylet (`RAY_RAYLET_PID`), which Ray ties to the driver: Ray's own check
    let a worker finish its task, and write its unit file, after a kill -9 of the driver."""
    if local:
        _die_with(int(os.environ["RAY_RAYLET_PID"]))
    return fn(task)


@contextmanager
def _ray_connected(ray, workers: int, ray_address: str | None) -> Iterator[bool]:
    """Ray for the block: the cluster at `ray_address`, or a fresh local Ray (whatever cluster `ray
    start` left here) in a process group of its own (`_local_ray_group`), shut down after the block;
    a Ray this process is already connected to is used as it is. Yields whether the block runs on a
    local Ray started here.

    A signal while Ray starts or stops is noted and acted on after (a half-started Ray is not
    stopped in order); this command's handlers stay in place throughout (`_without_ray_signal_handlers`)."""
    if ray.is_initialized():
        yield False
        return
    with contextlib.ExitStack() as stack:
        try:
            with deferred(), _without_ray_signal_handlers():
                if ray_address:
                    ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
                else:
                    stack.enter_context(_local_ray_group())
                    ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
            check()
            yield not ray_address
        finally:
            with deferred():
                ray.shutdown()


@contextmanager
def _without_ray_signal_handlers() -> Iterator[None]:
    """Keep Ray's start-up from installing signal handlers of its own, so that this command's stay in
    place from Ray's start to its stop: `ray.init`'s and a local node's SIGTERM handlers (one exits
    with status 15, the other kills the node's processes and exits with status 1, neither with the
    line), and the driver's native failure handler, which takes SIGTERM once Ray connects and which
    `ray.shutdown` uninstalls by setting SIGTERM back to its default, so that a signal after the
    shutdown ended the command silently (the flag is read when the driver connects; its variable,
    `RAY_DISABLE_FAILURE_SIGNAL_HANDLER`, only when Ray is imported)."""
    from ray._private import ray_constants, utils

    saved = utils.set_sigterm_handler, ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER
    utils.set_sigterm_handler = lambda handler: None
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    try:
        yield
    finally:
        utils.set_sigterm_handler, ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = saved


REAPER = "import os, sys; sys.stdin.buffer.read(); os.killpg(0, 9)"  # the group's last word


@contextmanager
def _local_ray_group() -> Iterator[None]:
    """Start a local Ray's processes (GCS, raylet, the agents and workers it forks) in one process
    group of their own, outside this command's, as Ray itself does on Windows: a Ctrl-C or SIGTERM
    sent to the command's group then reaches the driver alone, which shuts Ray down in order (when
    the same SIGTERM kills the raylet first, `ray.shutdown` waits about 8 s on it).

    The group is a reaper's, a child that reads its pipe from this process and kills the whole group,
    itself last, when the pipe closes: after `ray.shutdown` when the block ends, or when this process
    dies. The kernel ends the GCS and the raylet with the driver (Ray sets their parent-death signal)
    and workers that ran a task with the raylet (`_in_ray_worker`), but the raylet's agents
    outlived a kill -9 of the driver by about a minute without the reaper; workers make groups of
    their own and end within seconds of the raylet. Only where the kernel ties lives (Linux)."""
    from ray._private import services, utils

    if not utils.detect_fate_sharing_support():
        yield
        return
    reaper = subprocess.Popen([sys.executable, "-c", REAPER], stdin=subprocess.PIPE, process_group=0)
    base = services.ConsolePopen

    class Popen(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, process_group=reaper.pid, **kwargs)

    services.ConsolePopen = Popen
    try:
        yield
    finally:
        services.ConsolePopen = base
        reaper.stdin.close()
        reaper.wait()
