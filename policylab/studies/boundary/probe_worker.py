"""The probe's worker: one process beside the web server that simulates the worlds the page asks for and
renders their clips and .rrd files, one job at a time (why a process: docs/boundary.md, "Module notes")."""

from __future__ import annotations

import multiprocessing
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from policylab.errors import BadInput
from policylab.fileio import arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.rollout.payloads import arrays_digest

FPS = 20
WARM_TIMEOUT_S = 600.0  # a worker's warm-up: imports and a render context on a loaded machine, never a user's run
POLL_S = 0.1  # how often a waiting call looks whether its client is still there


class JobTimeout(Exception):
    """A job ran past its timeout; its worker was ended and a fresh one started."""


class JobCancelled(Exception):
    """A job's client went away: a job still queued never ran, a running one was stopped (its worker ended and
    a fresh one started)."""


class WorkerProcess:
    """One worker process and the pipe to it; `call` sends a job and waits for its answer (callers queue
    on a lock, so jobs run one at a time). `warm` is the job each new worker process starts with (the `warm`
    function's: robot, checkpoint_path, width, height and world)."""

    def __init__(self, warm: Mapping[str, Any]) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._warm = dict(warm)
        self.lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self.process = self._ctx.Process(
            target=exec,
            args=(_CHILD, {"conn": child, "warm": pickle.dumps(self._warm)}),
            daemon=True,
            name="policylab-probe-worker",
        )
        # The child inherits this thread's signal mask through fork and exec: with SIGINT blocked it cannot be
        # interrupted before its first line ignores SIGINT (a Ctrl-C during interpreter startup would otherwise
        # end it with a KeyboardInterrupt traceback). Here a SIGINT meanwhile waits and is then delivered. The
        # resource tracker is started first: starting it inside `start()` would unblock SIGINT on its way out.
        resource_tracker.ensure_running()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # as the thread had it
        child.close()
        self._warming = True  # the process's first answer is its warm-up's
        self._warm_deadline = time.monotonic() + WARM_TIMEOUT_S

    def ready(self, cancelled: threading.Event | None = None) -> None:
        """Wait for the worker's warm-up (BadInput or RuntimeError as it failed)."""
        with self.lock:
            self._await_warm(cancelled)

    def call(self, kind: str, job: Mapping[str, Any], timeout: float, cancelled: threading.Event | None = None) -> dict:
        """The worker's answer to one job; BadInput as the worker raised it; `JobTimeout` after `timeout` s;
        `JobCancelled` once `cancelled` is set, whether the job waits for its turn or runs."""
        while not self.lock.acquire(timeout=POLL_S):
            _check(cancelled, kind)
        try:
            self._await_warm(cancelled)
            _check(cancelled, kind)
            what = f"the {kind} job"
            try:
                self._conn.send((kind, dict(job)))
            except OSError:
                self._died(what)
            waited = self._poll(time.monotonic() + timeout, cancelled)
            if waited != "answer":
                self._restart()
                if waited == "cancelled":
                    raise JobCancelled(f"{what} was stopped: its client went away")
                raise JobTimeout(f"{what} took longer than {timeout:g} s and was stopped")
            return _result(*self._recv(what))
        finally:
            self.lock.release()

    def _await_warm(self, cancelled: threading.Event | None) -> None:
        """Wait for the warm-up of the worker started last, if it has not answered yet; a caller whose client
        goes away stops waiting, and the warm-up goes on for the next job."""
        if not self._warming:
            return
        waited = self._poll(self._warm_deadline, cancelled)
        if waited == "cancelled":
            raise JobCancelled("the job was dropped while the worker warmed up: its client went away")
        if waited == "timeout":
            self._restart()
            raise JobTimeout(f"the worker's warm-up took longer than {WARM_TIMEOUT_S:g} s and was stopped")
        answer = self._recv("the worker's warm-up")
        self._warming = False
        _result(*answer)

    def _poll(self, deadline: float, cancelled: threading.Event | None) -> str:
        """'answer' once the worker has answered (or died), else 'cancelled' or 'timeout', whichever comes first."""
        while not self._conn.poll(min(POLL_S, max(0.0, deadline - time.monotonic()))):
            if cancelled is not None and cancelled.is_set():
                return "cancelled"
            if time.monotonic() >= deadline:
                return "timeout"
        return "answer"

    def _recv(self, what: str) -> tuple[str, Any]:
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self._died(what)

    def _died(self, what: str) -> NoReturn:
        """The worker died (a crash in native code): a new one takes the next job."""
        self._restart()
        raise RuntimeError(f"the worker process ended during {what}") from None

    def _restart(self) -> None:
        self.process.kill()
        self.process.join()
        self._conn.close()
        self._start()

    def close(self) -> None:
        self._conn.close()  # the worker's recv ends and it returns; kill it if it is in a job
        self.process.join(2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _check(cancelled: threading.Event | None, kind: str) -> None:
    if cancelled is not None and cancelled.is_set():
        raise JobCancelled(f"the {kind} job was dropped before it ran: its client went away")


def _result(status: str, value: Any) -> dict:
    if status == "bad_input":
        raise BadInput(*value)
    if status == "error":
        raise RuntimeError(value)
    return value


# The worker process's first lines: SIGINT (blocked since the fork, see `WorkerProcess._start`) is ignored
# before anything is imported and only then unblocked, so a Ctrl-C that reaches the group while a new worker
# starts or imports (seconds, during its warm-up) leaves no KeyboardInterrupt traceback; the warm-up job is
# unpickled only then (unpickling it imports the simulator).
_CHILD = (
    "import signal\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
    "import pickle\n"
    "from policylab.studies.boundary.probe_worker import _serve\n"
    "_serve(conn, pickle.loads(warm))\n"
)


def _serve(conn, warm_job: Mapping) -> None:
    """The worker process (started by `_CHILD`): warm up, then answer jobs until the pipe closes."""
    handlers = {"simulate": simulate, "render": render, "rrd": recording}
    renderers: dict = {}
    try:
        conn.send(_answer(warm, warm_job, renderers))
        while True:
            kind, job = conn.recv()
            conn.send(_answer(handlers[kind], job, renderers))
    except (EOFError, OSError):  # the server closed the pipe (it is stopping, or gave up on this worker)
        return


def _answer(handler: Callable[[Mapping, dict], dict], job: Mapping, renderers: dict) -> tuple[str, Any]:
    try:
        return "ok", handler(job, renderers)
    except BadInput as exc:
        return "bad_input", (exc.field, exc.message)
    except Exception:
        return "error", traceback.format_exc()


def warm(job: Mapping, renderers: dict) -> dict:
    """A new worker's first work: import rerun, open the robot's render context, and play one world
    (`job`'s), so the simulator's compiled arithmetic is compiled; the result is dropped."""
    from policylab.studies.boundary import rrd  # noqa: F401
    from policylab.studies.boundary.simulation import simulate_worlds

    _renderer(renderers, job["robot"], job["width"], job["height"])
    simulate_worlds(job["checkpoint_path"], [job["world"]], job["robot"], nthread=1)
    return {}


@dataclass(frozen=True)
class _Computed:
    """`ensure`'s runner for a rollout simulated already: its one unit is that result."""

    result: tuple

    def pack(self, todo):
        return [(list(todo), [self.result])] if todo else []

    run = staticmethod(lambda work: work)  # ensure's local executor calls it here; nothing is shipped


def simulate(job: Mapping, renderers: dict) -> dict:
    """Play one world; compare with the store's record of it, if any; save its trajectory (.npz) in the out
    folder, and into the store through `ensure` when asked and absent."""
    from policylab.rollout.ensure import ensure
    from policylab.rollout.store import Store
    from policylab.studies.boundary.replay import compare
    from policylab.studies.boundary.simulation import simulate_worlds

    planned, rob = job["planned"], job["robot"]
    t0 = time.perf_counter()
    ((outcome, payload),) = simulate_worlds(job["checkpoint_path"], [job["world"]], rob, nthread=1)
    simulate_s = time.perf_counter() - t0
    blob = arrays_to_bytes(payload)
    sha = arrays_digest(payload)  # the store's digest: over the arrays, not the .npz container
    npz = Path(job["out"]) / f"{job['run_id']}.npz"
    atomic_write_bytes(npz, blob)
    stored, saved = None, False
    with Store(Path(job["store"])) as store:
        rec = store.get(planned.key)
        if rec is not None:
            same = compare(store.payload(planned.key), payload)
            stored = {
                "outcome": dict(rec.outcome),
                "payload_sha256": rec.payload_sha256,
                "bitwise_equal": rec.payload_sha256 == sha and same["equal"],
                "qpos_max_abs_diff": _finite_or_none(same["qpos_max_abs_diff"]),
                "same_outcome": dict(rec.outcome) == outcome,
            }
        elif job["save"]:
            ensure(store, [planned], _Computed((outcome, payload)), label="probe", unit="rollout")
            saved = store.has(planned.key)
    return {
        "run_id": job["run_id"],
        "key": planned.key,
        "outcome": outcome,
        "payload_sha256": sha,
        "stored": stored,
        "saved": saved,
        "npz": npz.name,
        "simulate_s": simulate_s,
        "tracks": {
            name: [float(v) if np.isfinite(v) else None for v in payload[name]]  # JSON has no NaN
            for name in ("time", "torso_z", "uprightness")
        },
    }


def render(job: Mapping, renderers: dict) -> dict:
    """The clip (mp4) of a run's trajectory, read back from its .npz in the out folder."""
    from policylab.studies.boundary.clips import render_payload

    rob, out = job["robot"], Path(job["out"])
    t0 = time.perf_counter()
    renderer = _renderer(renderers, rob, job["width"], job["height"])
    clip = render_payload(
        renderer,
        job["world"],
        job["outcome"],
        read_arrays(out / f"{job['run_id']}.npz"),
        out / f"{job['run_id']}.mp4",
        FPS,
        rob,
    )
    return {"clip": clip["file"], "clip_consistent": clip["consistent"], "clip_s": time.perf_counter() - t0}


def recording(job: Mapping, renderers: dict) -> dict:
    """The .rrd of a run's trajectory (made when first downloaded: most runs are only looked at)."""
    from policylab.studies.boundary.rrd import export_payload

    rob, out = job["robot"], Path(job["out"])
    rrd = export_payload(
        rob,
        rob.render_model(),
        job["world"],
        job["outcome"],
        read_arrays(out / f"{job['run_id']}.npz"),
        out / f"{job['run_id']}.rrd",
    )
    return {"rrd": rrd["rrd_file"]}


def _renderer(renderers: dict, rob, width: int, height: int):
    """One render context per (robot, size) for the worker's life (opening one costs more than a clip)."""
    from policylab.studies.boundary.clips import renderer_for

    key = (rob.ref, rob.identity["spec_sha256"], width, height)
    if key not in renderers:
        renderers[key] = renderer_for(rob, width, height)[0]
    return renderers[key]


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and np.isfinite(x) else None
