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
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Sequence

from policylab.errors import BadInput
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
    """Run `fn` over `tasks`, yielding (index, result) as each finishes, with a progress bar."""
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
        elif executor == "processes":
            yield from _run_processes(fn, tasks, workers, bar)
        else:
            yield from _run_ray(fn, tasks, workers, ray_address, bar)


def _run_processes(fn, tasks, workers, bar) -> Iterator[tuple[int, Any]]:
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        pending = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f]):
                i = pending.pop(fut)
                bar.advance()
                yield i, fut.result()


def _run_ray(fn, tasks, workers, ray_address, bar) -> Iterator[tuple[int, Any]]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        if ray_address:
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(fn)
        pending = {remote.remote(task): i for i, task in enumerate(tasks)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                bar.advance()
                yield i, ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()
