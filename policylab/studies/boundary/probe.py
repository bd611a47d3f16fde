"""`policylab boundary probe`: a local web page to look at any world of a store's study, live
(docs/boundary.md, "Probing worlds live")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from policylab.config import claim_out_dir
from policylab.errors import BadInput
from policylab.interrupts import Interrupted
from policylab.progress import say
from policylab.result import Result
from policylab.studies.boundary.constants import DEFAULT_DIR, DEFAULT_T0
from policylab.studies.boundary.requests import ProbeRequest

if TYPE_CHECKING:
    from policylab.studies.boundary.checkpoint import Checkpoint
    from policylab.studies.boundary.probe_view import StoreView


@dataclass(frozen=True)
class Plan:
    """A probe, resolved once (`plan`): the store's sweeps and the checkpoint the worker warms up with."""

    req: ProbeRequest
    view: StoreView
    first: Checkpoint  # the first sweep's that can be played


def plan(req: ProbeRequest) -> Plan:
    """Read the store's sweeps and resolve the first playable checkpoint once; `BadInput` naming the
    field, nothing written."""
    from policylab.studies.boundary.probe_view import StoreView

    view = StoreView(req.store.resolve(), req.resamples)
    if not view.sweeps:
        raise BadInput("store", f"{req.store} holds no boundary sweep")
    return Plan(req, view, _playable(view))


def run(req: ProbeRequest) -> Result:
    """Start the server, print its address, serve until Ctrl-C."""
    from policylab.studies.boundary.probe_server import Probe, address, bind, serve
    from policylab.studies.boundary.probe_view import PROBE_SEEDS
    from policylab.studies.boundary.probe_worker import WorkerProcess
    from policylab.studies.boundary.world import World

    p = plan(req)
    view, first = p.view, p.first
    sock = bind(req.host, req.port)
    claim_out_dir(req.out, req.config())
    worker = WorkerProcess(
        {
            "robot": first.robot,
            "checkpoint_path": str(first.path),
            "width": req.width,
            "height": req.height,
            "world": World(1.0, 0.0, DEFAULT_DIR, DEFAULT_T0, PROBE_SEEDS.base),
        }
    )
    try:  # the worker warms up while the maps are reduced here
        say(f"probe: reducing {len(view.sweeps)} sweep(s) of {req.store} for the maps")
        view.maps()
        worker.ready()
        probe = Probe(view, worker, req.out.resolve(), timeout=req.timeout, width=req.width, height=req.height)
        print(f"probe: {address(sock)}", flush=True)
        try:
            serve(probe, sock)
        except Interrupted:  # Ctrl-C is how a server is meant to stop: not an interruption of work
            pass
    finally:
        worker.close()
        sock.close()
    return Result(req.out, headlines=(f"probe stopped; runs made: {len(probe.runs)}",))


def _playable(view: StoreView) -> Checkpoint:
    """The first sweep's checkpoint that can be played (the worker warms up with it); a sweep whose policy
    cannot be played still shows its map, and a run of it is refused in the page with the reason."""
    for sweep in view.sweeps.values():
        try:
            return sweep.checkpoint
        except BadInput:
            continue
    raise BadInput(
        "store",
        f"no sweep in {view.root} has a policy that can be played (the store keeps no copy "
        "of it and no committed checkpoint has its name)",
    )
