"""Executors: where a batch of independent tasks runs.

`run_tasks(fn, tasks, executor=...)` runs ``fn(task)`` for every task and yields
``(index, result)`` pairs as they finish. The driver (the caller) writes each result to the store
as it arrives, so the store has a single writer and a killed run keeps everything finished so far.
Results depend only on the task, never on the executor, the worker count or the completion order:
all three executors give identical stores and reports for the same config (tests check it).

- ``local``: in this process, in order.
- ``processes``: a process pool (spawned workers; `workers` defaults to the CPU count).
- ``ray``: Ray tasks; a local Ray is started and stopped around the call unless `ray_address`
  names an existing cluster.

An interrupt (`policylab.interrupts`) stops every executor the same way: queued tasks are
cancelled, running ones abandoned (pool workers killed, Ray tasks cancelled, a local Ray shut
down), the results that had already finished are still yielded, and `Interrupted` is raised on.
Pool workers ignore SIGINT: a Ctrl-C reaches the whole process group, and it is the driver that
decides what stops.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Sequence

from policylab.errors import BadInput
from policylab.interrupts import Interrupted, check, deferred, install, raise_if_signalled
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


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_processes(fn, tasks, workers, bar) -> Iterator[tuple[int, Any]]:
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_ignore_sigint)
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

    started_here = not ray.is_initialized()
    pending: dict[Any, int] = {}
    try:
        if started_here:
            _start_ray(ray, workers, ray_address)
        remote = ray.remote(fn)
        pending = {remote.remote(task): i for i, task in enumerate(tasks)}
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
                except Exception:  # noqa: BLE001 - a task stopped by the same signal; it reruns next time
                    pass
            finished.sort()
            for ref in pending:
                ray.cancel(ref, force=True)
        for i, result in finished:
            bar.advance()
            yield i, result
        raise
    finally:
        if started_here:
            with deferred():
                ray.shutdown()


def _start_ray(ray, workers: int, ray_address: str | None) -> None:
    """`ray.init`, with this command's signal handlers put back after it (Ray installs its own)."""
    try:
        if ray_address:
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
        else:
            with _ray_processes_in_own_groups():  # "local": a fresh Ray, whatever cluster `ray start` left here
                ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    except SystemExit as exc:  # Ray's own SIGTERM handler, in place while it starts
        if exc.code != signal.SIGTERM:
            raise
        raise Interrupted(signal.SIGTERM) from None
    finally:
        install()


@contextmanager
def _ray_processes_in_own_groups() -> Iterator[None]:
    """Start a local Ray's processes (GCS, raylet and the workers it forks) outside this command's
    process group, as Ray itself does on Windows: a Ctrl-C or SIGTERM sent to the group then reaches
    the driver alone, which shuts Ray down in order (when the same SIGTERM kills the raylet first,
    `ray.shutdown` waits about 8 s on it). Only where the kernel ties their lives to the driver's
    (Linux), so that none outlives it."""
    from ray._private import services, utils

    base = services.ConsolePopen
    if not utils.detect_fate_sharing_support():
        yield
        return

    class Popen(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, process_group=0, **kwargs)

    services.ConsolePopen = Popen
    try:
        yield
    finally:
        services.ConsolePopen = base
