"""`policylab boundary probe`: a local web page to look at any world of a store's study, live.

The page shows the map of every sweep in the store (danger per cell, the boundary with its interval,
the checkpoint's training band), the diff of two checkpoints, and a warning over a sweep whose
equivalence gate has not passed. A click on a cell lists its worlds with their stored outcomes; any
world, on the grid or between its points, can be played by a checkpoint of the store or a policy file,
and the page shows its outcome, its torso height and uprightness tracks against the failure rule, a
clip rendered from the trajectory, .npz and .rrd downloads, and, for a world the store holds, whether
the new trajectory is the record's bit for bit. A run enters the store only when the user asks.

The server (`probe_server.py`) reads the store, its out folder and the policy files the user names (under
the folder that holds the store, or committed), and writes only its out folder (and the store, when
asked); it answers only its own page on this machine's loopback address, and stops on Ctrl-C.
"""

from __future__ import annotations

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


def run(req: ProbeRequest) -> Result:
    """Start the server, print its address, serve until Ctrl-C."""
    from policylab.studies.boundary.probe_server import Probe, address, bind, serve
    from policylab.studies.boundary.probe_view import PROBE_SEEDS, StoreView
    from policylab.studies.boundary.probe_worker import WorkerProcess
    from policylab.studies.boundary.world import World

    view = StoreView(req.store.resolve(), req.resamples)
    if not view.sweeps:
        raise BadInput("store", f"{req.store} holds no boundary sweep")
    first = _playable(view)
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
