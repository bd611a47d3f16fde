"""The probe's web server: a Starlette app served by uvicorn on a socket bound before it starts.

Routes: ``/`` the page and ``/probe.js`` its script (shipped in `probe_page/`; nothing is fetched from
elsewhere), ``GET /api/maps`` the store's maps (`probe_view.StoreView.maps`), ``POST /api/run`` one world
simulated (a `ProbeRunForm` as JSON), ``POST /api/render/<run>`` that run's clip, ``/rrd/<run>`` its .rrd
(exported on the first download), and ``/files/<name>`` the files runs wrote into the out folder (only
those: a name is served only if a run of this server wrote it).

Bad input (a body that is not JSON, a field out of range, an unknown checkpoint, a policy file that does
not load) is HTTP 400 with the one-line message a command would print; a run past the timeout is 504; any
other failure is 500 with one line naming the log, where the traceback goes. Simulation and rendering run
in the worker process (`probe_worker.py`), awaited on a thread, so the page and other requests never
wait on the event loop; jobs queue on the worker's lock and run one at a time.
"""

from __future__ import annotations

import errno
import json
import socket
import traceback
from pathlib import Path
from typing import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request as HttpRequest
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from policylab.config import validated
from policylab.errors import BadInput
from policylab.studies.boundary.clips import slug
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.probe_view import StoreView
from policylab.studies.boundary.probe_worker import JobTimeout, WorkerProcess
from policylab.studies.boundary.requests import ProbeRunForm

PAGE_DIR = Path(__file__).parent / "probe_page"
PAGE_FILES = {"/": ("index.html", "text/html; charset=utf-8"), "/probe.js": ("probe.js", "text/javascript")}
MEDIA = {".npz": "application/octet-stream", ".rrd": "application/octet-stream", ".mp4": "video/mp4"}


class Probe:
    """The server's state: the store's view, the worker, the out folder and the runs made so far."""

    def __init__(self, view: StoreView, worker: WorkerProcess, out: Path, *, timeout: float, width: int,
                 height: int):
        self.view, self.worker, self.out = view, worker, out
        self.timeout, self.width, self.height = timeout, width, height
        self.runs: dict[str, dict] = {}  # run id -> what its render job needs
        self.files: set[str] = set()  # names under out that runs wrote, the only ones served
        self.log = out / "probe.log"

    def app(self) -> Starlette:
        return Starlette(routes=[
            *(Route(path, self._page) for path in PAGE_FILES),
            Route("/api/maps", self._maps),
            Route("/api/run", self._run, methods=["POST"]),
            Route("/api/render/{run_id}", self._render, methods=["POST"]),
            Route("/rrd/{run_id}", self._rrd),
            Route("/files/{name}", self._file),
        ])

    async def _page(self, request: HttpRequest) -> Response:
        name, media = PAGE_FILES[request.url.path]
        return FileResponse(PAGE_DIR / name, media_type=media)

    async def _maps(self, request: HttpRequest) -> Response:
        return await self._answer(lambda: self.view.maps())

    async def _run(self, request: HttpRequest) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _bad(BadInput("body", "is not JSON"))
        return await self._answer(lambda: self.simulate(body))

    async def _render(self, request: HttpRequest) -> Response:
        run_id = request.path_params["run_id"]
        return await self._answer(lambda: self.render(run_id))

    async def _rrd(self, request: HttpRequest) -> Response:
        run_id = request.path_params["run_id"]
        answer = await self._answer(lambda: self.recording(run_id))
        if answer.status_code != 200:
            return answer
        return FileResponse(self.out / f"{run_id}.rrd", media_type=MEDIA[".rrd"], filename=f"{run_id}.rrd")

    async def _file(self, request: HttpRequest) -> Response:
        name = request.path_params["name"]
        if name not in self.files:
            return JSONResponse({"error": f"no file {name!r} made by this probe"}, status_code=404)
        return FileResponse(self.out / name, media_type=MEDIA[Path(name).suffix], filename=name)

    async def _answer(self, work: Callable[[], dict]) -> Response:
        """`work` on a worker thread: its JSON, or the one-line error with its status."""
        try:
            return JSONResponse(await run_in_threadpool(work))
        except BadInput as exc:
            return _bad(exc)
        except JobTimeout as exc:
            return JSONResponse({"error": str(exc)}, status_code=504)
        except Exception:
            with self.log.open("a") as log:
                log.write(traceback.format_exc() + "\n")
            return JSONResponse({"error": f"internal error; see {self.log}"}, status_code=500)

    def simulate(self, body: object) -> dict:
        """Plan the world the page asks for, play it in the worker, and say what the page shows of it."""
        if not isinstance(body, dict):
            raise BadInput("body", "must be a JSON object")
        req = validated(ProbeRunForm, body)
        planned, ckpt, world = self.view.plan(req)
        run_id = f"{ckpt.name}-{ckpt.sha256[:8]}_{slug(world.key)}"
        job = {"planned": planned, "checkpoint_path": str(ckpt.path), "robot": ckpt.robot, "world": world,
               "store": str(self.view.root), "out": str(self.out), "save": req.save, "run_id": run_id}
        result = self.worker.call("simulate", job, self.timeout)
        self.runs[run_id] = {"robot": ckpt.robot, "world": dict(planned.world), "outcome": result["outcome"]}
        self.files.add(result["npz"])
        return {**result, "checkpoint": ckpt.name, "world": dict(planned.world),
                "npz_url": f"/files/{result['npz']}", "rrd_url": f"/rrd/{run_id}",
                "thresholds": ckpt.robot.thresholds(),
                "push_window_s": [world.push_t0, world.push_t0 + PUSH_DURATION_S]}

    def _job(self, run_id: str) -> dict:
        if run_id not in self.runs:
            raise BadInput("run", f"no run {run_id!r} on this page; run the world first")
        return {**self.runs[run_id], "run_id": run_id, "out": str(self.out), "width": self.width,
                "height": self.height}

    def render(self, run_id: str) -> dict:
        result = self.worker.call("render", self._job(run_id), self.timeout)
        self.files.add(result["clip"])
        return {**result, "clip_url": f"/files/{result['clip']}"}

    def recording(self, run_id: str) -> dict:
        """The run's .rrd, exported once, when first asked for."""
        if f"{run_id}.rrd" not in self.files:  # a run id names its checkpoint and world: one trajectory
            self.files.add(self.worker.call("rrd", self._job(run_id), self.timeout)["rrd"])
        return {}


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
        raise BadInput("port" if isinstance(exc, PermissionError) or exc.errno == errno.EADDRINUSE else "host",
                       f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    return sock


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(probe: Probe, sock: socket.socket) -> None:
    """Serve until Ctrl-C (uvicorn finishes the requests in flight, then the signal goes on up)."""
    config = uvicorn.Config(probe.app(), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
