"""`policylab boundary probe` end to end: the real command on a free port, its page driven in headless
Chromium (click a cell, run a stored world and an off-grid world, submit bad values), what the page shows
checked against the store's records and a re-simulation here, and Ctrl-C stopping it cleanly.

The store holds two small Ant sweeps of the hand-set PD checkpoints (`tests/support/boundary_fixtures.py`):
pd_soft verified (its gate passed), pd_limp swept only (its map must carry the warning banner).
"""

from __future__ import annotations

import io
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from policylab.report.browser import Session
from policylab.rollout.payloads import arrays_digest
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import checkpoint_on
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.kept_files import kept_policy
from policylab.studies.boundary.records import stored_robot
from policylab.studies.boundary.simulation import simulate_worlds
from policylab.studies.boundary.world import World
from tests.support.boundary_fixtures import cli, make_sweep, pd_checkpoint
from tests.support.probe_page import page_token, post, run_and_wait, start_probe, stop_probe

pytestmark = pytest.mark.slow

GRID = dict(mu=(0.65, 1.0), n_mu=2, push=(50, 300), n_push=3, seeds=4)
OFF_GRID = {"mu": 0.83, "push_pct": 120, "push_dir": 45, "push_t0": 1.7}
PROBE_INDEX = 7


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("probe")
    make_sweep(base, "pd_soft", GRID["mu"], GRID["n_mu"], GRID["push"], GRID["n_push"], GRID["seeds"])
    limp = pd_checkpoint(base / "checkpoints", "pd_limp")
    res = cli(
        "sweep",
        "--robot",
        "ant",
        "--checkpoint",
        limp,
        "--mu-min",
        0.65,
        "--mu-max",
        1.0,
        "--n-mu",
        2,
        "--push-min",
        50,
        "--push-max",
        300,
        "--n-push",
        3,
        "--seeds-per-cell",
        4,
        "--store",
        base / "store",
        "--out",
        base / "sweep-limp",
    )
    assert res.returncode == 0, res.stderr
    return base / "store"


def _resimulate(store: Path, world: World) -> dict:
    """The world played here, by the sweep's own policy and robot (the store's copies)."""
    with Store(store) as s:
        rob, path = stored_robot(s, "pd_soft"), kept_policy(s, "pd_soft")
    outcome, payload = simulate_worlds(str(checkpoint_on(str(path), rob).path), [world], rob)[0]
    return outcome


def test_probe_page_in_browser(store, tmp_path):
    with Store(store) as s:
        before = s.fingerprint()
    out = tmp_path / "probe-out"
    proc, url = start_probe(store, out)
    token = page_token(url)
    try:
        with Session() as page:
            page.open(url)
            page.wait_for("document.body && document.body.dataset.ready", timeout=120)
            # the maps: both sweeps, the unverified one under the banner, and their diff
            assert page.evaluate("[...document.getElementById('sweep').options].map(o => o.value)") == [
                "pd_limp",
                "pd_soft",
            ]
            assert page.evaluate("document.getElementById('banner').hidden") is False  # pd_limp is shown first
            assert "equivalence record" in page.evaluate("document.getElementById('banner').innerText")
            page.evaluate(
                "const s = document.getElementById('sweep'); s.value = 'pd_soft'; s.dispatchEvent(new Event('change'))"
            )
            assert page.evaluate("document.getElementById('banner').hidden") is True
            assert page.evaluate("document.querySelectorAll('rect.cell').length") == GRID["n_mu"] * GRID["n_push"]
            assert "pd_limp -> pd_soft" in page.evaluate("document.getElementById('diff-summary').innerText")

            # a cell: its worlds with their stored outcomes
            page.evaluate(
                "document.querySelector(\"rect.cell[data-mu='1'][data-push='2']\")"
                ".dispatchEvent(new MouseEvent('click'))"
            )
            rows = page.evaluate(
                "[...document.querySelectorAll('#cell-worlds tr.world')]"
                ".map(r => [Number(r.dataset.seed), r.dataset.status])"
            )
            assert len(rows) == GRID["seeds"]
            with Store(store) as s:
                stored = {
                    r.data["world"]["seed"]: r
                    for r in s.records("boundary")
                    if r.data["world"]["checkpoint"]["name"] == "pd_soft"
                    and r.data["world"].get("mu_idx") == 1
                    and r.data["world"].get("push_idx") == 2
                }
            assert [[seed, stored[seed].outcome["status"]] for seed, _ in rows] == rows

            # a stored world, run again: shown outcome == record == re-simulation, bit for bit
            shown = run_and_wait(page, "document.querySelectorAll('#cell-worlds button.run-world')[1].click()")
            rec = stored[rows[1][0]]
            assert shown["key"] == rec.key
            assert (shown["status"], shown["t_fail"]) == (rec.outcome["status"], rec.outcome["t_fail"])
            w = rec.data["world"]
            again = _resimulate(store, World(w["mu"], w["push_pct"], w["push_dir"], w["push_t0"], w["seed"]))
            assert again == rec.outcome
            assert shown["stored"] == "equal" and "bit for bit" in shown["stored_text"]
            assert shown["sha256"] == rec.payload_sha256
            npz = urllib.request.urlopen(
                url + page.evaluate("document.getElementById('dl-npz').getAttribute('href')").lstrip("/")
            ).read()
            assert arrays_digest(np.load(io.BytesIO(npz))) == rec.payload_sha256  # the download is the trajectory
            rrd = page.evaluate("document.getElementById('dl-rrd').getAttribute('href')")
            assert urllib.request.urlopen(url + rrd.lstrip("/")).read()[:4] == b"RRF2"  # rerun's file header
            assert page.wait_for("document.getElementById('clip').readyState >= 1")  # the clip loads in the page

            # an off-grid world with a probe seed, written into the store on request
            fill = "".join(f"document.getElementById('axis-{k}').value = '{v}';" for k, v in OFF_GRID.items())
            shown = run_and_wait(
                page,
                fill + "document.getElementById('checkpoint').value = 'pd_soft';"
                "document.getElementById('seed-probe').checked = true;"
                f"document.getElementById('seed_index').value = '{PROBE_INDEX}';"
                "document.getElementById('save').checked = true;"
                "document.getElementById('run').click()",
            )
            world = World(**{k: float(v) for k, v in OFF_GRID.items()}, seed=5_000_000 + PROBE_INDEX)
            again = _resimulate(store, world)
            assert (shown["status"], shown["t_fail"]) == (again["status"], again["t_fail"])
            assert shown["stored"] == "absent" and "written into it now" in shown["stored_text"]
            assert f"seed {5_000_000 + PROBE_INDEX}" in shown["text"]

            # bad values: a message in the page and HTTP 400, nothing run
            page.evaluate(
                "document.getElementById('error').textContent = '';"
                "document.getElementById('axis-push_pct').value = '999';"
                "document.getElementById('run').click()"
            )
            assert (
                page.wait_for("document.getElementById('error').innerText")
                == "push_pct: push 999 %BW outside the clamp range 0-300"
            )
            assert page.evaluate("document.getElementById('error').dataset.status") == "400"
            status, body = post(
                url + "api/run", {"map": "pd_soft", "checkpoint": "nope", "world": OFF_GRID, "seed_index": 0}, token
            )
            assert (status, body["error"]) == (
                400,
                f"checkpoint: no sweep of 'nope' in {store.resolve()}; stored: pd_limp, pd_soft",
            )

            status, body = post(
                url + "api/run",
                {"map": "pd_soft", "policy_file": str(store / "missing.npz"), "world": OFF_GRID, "seed_index": 0},
                token,
            )
            assert (status, body["error"]) == (
                400,
                f"policy_file: not a .npz or .onnx file under {store.resolve().parent} or {CHECKPOINT_DIR.resolve()}",
            )
            status, body = post(
                url + "api/run",
                {
                    "map": "pd_soft",
                    "checkpoint": "pd_soft",
                    "world": OFF_GRID,
                    "seed_index": 0,
                    "sweep_seed": 1_000_000,
                },
                token,
            )
            assert status == 400 and "either a probe seed index or a stored world's sweep seed" in body["error"]

            # requests queue: two at once both answer
            both = page.evaluate("""Promise.all([0, 1].map(i => fetch('/api/run', {method: 'POST',
                headers: {'x-probe-token': TOKEN},
                body: JSON.stringify({map: 'pd_soft', checkpoint: 'pd_limp', seed_index: i,
                                      world: {mu: 0.9, push_pct: 10, push_dir: 90, push_t0: 2}})})
                .then(r => r.json()).then(d => d.outcome.status)))""")
            assert len(both) == 2 and all(both)
        with Store(store) as s:
            after = s.fingerprint()
            saved = s.require(shown["key"])
        assert saved.outcome == again  # the saved run is the re-simulation's outcome
        assert {k: v for k, v in after.items() if k != shown["key"]} == before  # nothing else written
        assert shown["key"] not in before
        assert (out / "config.json").is_file() and list(out.glob("*.mp4"))
    finally:
        workers = [p for p in _children(proc.pid)]
        rest, err = stop_probe(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    # a stored world, an off-grid one and the two queued: four runs
    assert rest.splitlines()[-2:] == ["probe stopped; runs made: 4", f"report: {out}"], rest
    assert workers and not [p for p in workers if _alive(p)]  # the worker process ended with the server


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        if text[text.rindex(")") + 2 :].split()[0] == "Z":
            return False
        time.sleep(0.1)
    return True


def test_a_job_past_its_timeout_is_stopped_and_the_worker_replaced(tmp_path):
    """The worker process running a job past its timeout is ended; a fresh one, warmed up, takes the next job."""
    from policylab.fileio import arrays_to_bytes, atomic_write_bytes
    from policylab.studies.boundary.checkpoint import resolve_checkpoint
    from policylab.studies.boundary.probe_worker import JobTimeout, WorkerProcess

    ckpt = resolve_checkpoint("ant_v0")
    world = World(1.0, 0.0, 90.0, 2.0, 5_000_000)
    outcome, payload = simulate_worlds(str(ckpt.path), [world], ckpt.robot)[0]
    atomic_write_bytes(tmp_path / "r.npz", arrays_to_bytes(payload))
    clip = {
        "robot": ckpt.robot,
        "world": world.as_dict(),
        "outcome": outcome,
        "run_id": "r",
        "out": str(tmp_path),
        "width": 32,
        "height": 32,
    }
    worker = WorkerProcess(
        {"robot": ckpt.robot, "checkpoint_path": str(ckpt.path), "width": 32, "height": 32, "world": world}
    )
    try:
        worker.ready()
        first = worker.process.pid
        with pytest.raises(JobTimeout, match="longer than 0.01 s"):
            worker.call("render", clip, 0.01)  # three views of 100 frames and their encoding take longer
        assert not _alive(first) and worker.process.pid != first
        assert worker.call("render", clip, 120)["clip_consistent"] is True
    finally:
        worker.close()
    assert not worker.process.is_alive()


def test_a_ctrl_c_while_a_worker_starts_does_not_end_it():
    """SIGINT sent to a new worker from its first moment (during interpreter startup, before its first line
    runs) neither kills it nor prints a traceback: the child starts with SIGINT blocked, then ignores it."""
    import os
    import signal

    from policylab.studies.boundary.checkpoint import resolve_checkpoint
    from policylab.studies.boundary.probe_worker import WorkerProcess

    ckpt = resolve_checkpoint("ant_v0")
    worker = WorkerProcess(
        {
            "robot": ckpt.robot,
            "checkpoint_path": str(ckpt.path),
            "width": 32,
            "height": 32,
            "world": World(1.0, 0.0, 90.0, 2.0, 5_000_000),
        }
    )
    try:
        for _ in range(50):  # the first 0.25 s: the spawn bootstrap's imports, then the worker's own
            os.kill(worker.process.pid, signal.SIGINT)
            time.sleep(0.005)
        worker.ready()
        assert worker.process.is_alive()
    finally:
        worker.close()


def test_a_port_in_use_is_bad_input_and_nothing_is_written(store, tmp_path):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        res = cli("probe", "--store", store, "--port", port, "--out", tmp_path / "out")
    finally:
        taken.close()
    assert res.returncode == 2
    assert res.stderr.strip() == f"policylab: error: port: cannot listen on 127.0.0.1:{port} (Address already in use)"
    assert not (tmp_path / "out").exists()
