"""The probe's web server: a Starlette app served by uvicorn on a socket bound before it starts.

Routes, the `Guard` and the HTTP statuses: docs/boundary.md, "Probing worlds live"."""

from __future__ import annotations

import asyncio
import errno
import json
import secrets
import socket
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect
from starlette.requests import Request as HttpRequest
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from policylab.config import validated
from policylab.errors import BadInput
from policylab.studies.boundary.clips import slug
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.probe_view import StoreView
from policylab.studies.boundary.probe_worker import JobCancelled, JobTimeout, WorkerProcess
from policylab.studies.boundary.requests import ProbeRunForm

PAGE_DIR = Path(__file__).parent / "probe_page"
MEDIA = {".npz": "application/octet-stream", ".rrd": "application/octet-stream", ".mp4": "video/mp4"}
TOKEN_HEADER = "x-probe-token"
TOKEN_SLOT = "PROBE_TOKEN"  # in index.html's <meta name="probe-token">, replaced by the server's token
PAGE_HEADERS = {  # the page runs its own script only, in no other site's frame, and is never cached (its token)
    "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}
MAX_BODY = 64 * 1024  # bytes of a request body: a run's form is under 1 KiB
MAX_DEPTH = 8  # JSON nesting of a body: a run's form has 2 (the form, its world)
MAX_JOBS = 8  # worker jobs queued or running at once; a page has a run and its clip in flight per click


class Probe:
    """The server's state: the store's view, the worker, the out folder, the runs made so far, the jobs
    queued, and the token its page carries."""

    def __init__(self, view: StoreView, worker: WorkerProcess, out: Path, *, timeout: float, width: int, height: int):
        self.view, self.worker, self.out = view, worker, out
        self.timeout, self.width, self.height = timeout, width, height
        self.runs: dict[str, dict] = {}  # run id -> what its render job needs
        self.files: set[str] = set()  # names under out that runs wrote, the only ones served
        self.log = out / "probe.log"
        self.token = secrets.token_urlsafe(32)
        self.page = (PAGE_DIR / "index.html").read_text().replace(TOKEN_SLOT, self.token)
        self.jobs: set[threading.Event] = set()  # the `gone` events of the jobs queued or running for clients
        # still there (changed on the event loop's thread only)
        self.turn = asyncio.Lock()  # wakes its waiters first come, first served

    def app(self, port: int) -> ASGIApp:
        """The routes behind the `Guard` of this server's port and token."""
        return Guard(
            Starlette(
                routes=[
                    Route("/", self._page),
                    Route("/probe.js", self._script),
                    Route("/api/maps", self._maps),
                    Route("/api/run", self._run, methods=["POST"]),
                    Route("/api/render/{run_id}", self._render, methods=["POST"]),
                    Route("/rrd/{run_id}", self._rrd),
                    Route("/files/{name}", self._file),
                ]
            ),
            port,
            self.token,
        )

    async def _page(self, request: HttpRequest) -> Response:
        return HTMLResponse(self.page, headers=PAGE_HEADERS)

    async def _script(self, request: HttpRequest) -> Response:
        return FileResponse(PAGE_DIR / "probe.js", media_type="text/javascript", headers=PAGE_HEADERS)

    async def _maps(self, request: HttpRequest) -> Response:
        return await self._answer(lambda: self.view.maps())

    async def _run(self, request: HttpRequest) -> Response:
        try:
            body = _parse_body(await _body(request))
        except BadInput as exc:
            return _bad(exc)
        except ClientDisconnect:
            return _refuse(499, "cancelled: the client went away before its request was read")
        return await self._job(request, lambda gone: self.simulate(body, gone))

    async def _render(self, request: HttpRequest) -> Response:
        run_id = request.path_params["run_id"]
        return await self._job(request, lambda gone: self.render(run_id, gone))

    async def _rrd(self, request: HttpRequest) -> Response:
        run_id = request.path_params["run_id"]
        answer = await self._job(request, lambda gone: self.recording(run_id, gone))
        if answer.status_code != 200:
            return answer
        return FileResponse(self.out / f"{run_id}.rrd", media_type=MEDIA[".rrd"], filename=f"{run_id}.rrd")

    async def _file(self, request: HttpRequest) -> Response:
        name = request.path_params["name"]
        if name not in self.files:
            return JSONResponse({"error": f"no file {name!r} made by this probe"}, status_code=404)
        return FileResponse(self.out / name, media_type=MEDIA[Path(name).suffix], filename=name)

    async def _job(self, request: HttpRequest, work: Callable[[threading.Event], dict]) -> Response:
        """`work` (a worker job) in its turn: 503 when `MAX_JOBS` are queued or running for clients still
        there; the event it is given is set when the request's client goes away, which drops the job or
        stops it, and frees its place at once."""
        if len(self.jobs) >= MAX_JOBS:
            return _refuse(503, f"busy: {MAX_JOBS} runs and clips are queued or running; try again when one has ended")
        gone = threading.Event()
        self.jobs.add(gone)
        watch = asyncio.create_task(self._watch(request, gone))
        try:
            async with self.turn:
                return await self._answer(lambda: work(gone))
        finally:
            watch.cancel()
            self.jobs.discard(gone)

    async def _watch(self, request: HttpRequest, gone: threading.Event) -> None:
        """Set `gone` and free the job's place when the request's client goes away (read after the body: the
        server's next message for this request is its disconnection; the rest of a body no route reads is
        read and dropped)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone.set()
        self.jobs.discard(gone)

    async def _answer(self, work: Callable[[], dict]) -> Response:
        """`work` on a worker thread: its JSON, or the one-line error with its status."""
        try:
            return JSONResponse(await run_in_threadpool(work))
        except BadInput as exc:
            return _bad(exc)
        except JobTimeout as exc:
            return _refuse(504, str(exc))
        except JobCancelled as exc:
            return _refuse(499, str(exc))  # nobody reads it: the client has gone
        except Exception:
            with self.log.open("a") as log:
                log.write(traceback.format_exc() + "\n")
            return _refuse(500, f"internal error; see {self.log}")

    def simulate(self, body: object, gone: threading.Event | None = None) -> dict:
        """Plan the world the page asks for, play it in the worker, and say what the page shows of it."""
        if not isinstance(body, dict):
            raise BadInput("body", "must be a JSON object")
        req = validated(ProbeRunForm, body)
        p = self.view.plan(req)
        planned, ckpt, world = p.planned, p.ckpt, p.world
        run_id = f"{ckpt.name}-{ckpt.sha256[:8]}_{slug(world.key)}"
        job = {
            "planned": planned,
            "checkpoint_path": str(ckpt.path),
            "robot": ckpt.robot,
            "world": world,
            "store": str(self.view.root),
            "out": str(self.out),
            "save": req.save,
            "run_id": run_id,
        }
        result = self.worker.call("simulate", job, self.timeout, gone)
        self.runs[run_id] = {"robot": ckpt.robot, "world": dict(planned.world), "outcome": result["outcome"]}
        self.files.add(result["npz"])
        return {
            **result,
            "checkpoint": ckpt.name,
            "world": dict(planned.world),
            "npz_url": f"/files/{quote(result['npz'], safe='')}",
            "rrd_url": f"/rrd/{quote(run_id, safe='')}",
            "thresholds": ckpt.robot.thresholds(),
            "push_window_s": [world.push_t0, world.push_t0 + PUSH_DURATION_S],
        }

    def _job_of(self, run_id: str) -> dict:
        if run_id not in self.runs:
            raise BadInput("run", f"no run {run_id!r} on this page; run the world first")
        return {**self.runs[run_id], "run_id": run_id, "out": str(self.out), "width": self.width, "height": self.height}

    def render(self, run_id: str, gone: threading.Event | None = None) -> dict:
        result = self.worker.call("render", self._job_of(run_id), self.timeout, gone)
        self.files.add(result["clip"])
        return {**result, "clip_url": f"/files/{quote(result['clip'], safe='')}"}

    def recording(self, run_id: str, gone: threading.Event | None = None) -> dict:
        """The run's .rrd, exported once, when first asked for."""
        if f"{run_id}.rrd" not in self.files:  # a run id names its checkpoint and world: one trajectory
            self.files.add(self.worker.call("rrd", self._job_of(run_id), self.timeout, gone)["rrd"])
        return {}


class Guard:
    """The server's door (ASGI middleware): a request whose Host is not this server's loopback address, or
    whose Origin is another one, is refused; so is one that may change anything (any method but GET and
    HEAD) without the server's token. Each refusal is 403 with one line."""

    def __init__(self, app: ASGIApp, port: int, token: str):
        self.app, self.port, self.token = app, port, token
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope["method"], Headers(scope=scope))
            if refusal is not None:
                await _refuse(403, refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, method: str, headers: Headers) -> str | None:
        """Why a request is refused, or None."""
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return f"host: {host!r} is not this probe's address; open http://127.0.0.1:{self.port}/"
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host}":
            return f"origin: {origin!r} is not this page's own address (http://{host})"
        token = headers.get(TOKEN_HEADER, "")
        if method not in ("GET", "HEAD") and not secrets.compare_digest(token.encode(), self.token.encode()):
            return (
                "token: a request that changes anything must carry this probe's token (X-Probe-Token), which "
                "its own page holds"
            )
        return None


async def _body(request: HttpRequest) -> bytes:
    """The request's body, refused past `MAX_BODY` bytes as it arrives (so a large one is never held)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise BadInput("body", f"is larger than {MAX_BODY:,} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BadInput("body", f"is larger than {MAX_BODY:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_body(raw: bytes) -> object:
    """A request body's JSON; bad input when it is not JSON or nests deeper than `MAX_DEPTH` (a body deeper
    than the parser itself can go ends its recursion, which is refused the same way)."""
    try:
        value = json.loads(raw)
        deep = _nests_deeper(value, MAX_DEPTH)
    except RecursionError:
        deep = True
    except ValueError:
        raise BadInput("body", "is not JSON") from None
    if deep:
        raise BadInput("body", f"is nested deeper than {MAX_DEPTH} levels")
    return value


def _nests_deeper(value: object, levels: int) -> bool:
    """Whether `value` holds lists and objects more than `levels` deep (looking no deeper than that)."""
    if not isinstance(value, (list, dict)):
        return False
    return levels == 0 or any(
        _nests_deeper(v, levels - 1) for v in (value.values() if isinstance(value, dict) else value)
    )


def _refuse(status: int, line: str) -> Response:
    return JSONResponse({"error": line}, status_code=status)


def _bad(exc: BadInput) -> Response:
    return JSONResponse({"error": str(exc), "field": exc.field}, status_code=400)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); port 0 takes a free one. Bad input when it cannot be had."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        raise BadInput(
            "port" if isinstance(exc, PermissionError) or exc.errno == errno.EADDRINUSE else "host",
            f"cannot listen on {host}:{port} ({exc.strerror or exc})",
        ) from None
    return sock


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(probe: Probe, sock: socket.socket) -> None:
    """Serve until Ctrl-C (uvicorn finishes the requests in flight, then the signal goes on up)."""
    config = uvicorn.Config(probe.app(sock.getsockname()[1]), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
