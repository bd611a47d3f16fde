"""Benchmark: request-to-result time of `policylab boundary probe` for one 5 s Go1 rollout and its clip.

Sweeps a small Go1 map (go1_v0, mu 0.5 / 1.0 x push 10-50 %BW x 4 seeds) into a fresh store, starts the
real command on a free port, and times, over HTTP as the page does, `POST /api/run` (the world simulated in
the worker: outcome and tracks) and then `POST /api/render/<run>` (its clip), for a world that
survives the whole 5 s horizon (250 control steps; a failing Go1 rollout stops at its fall, so it would be
shorter). Two worlds: a stored one (seed of the sweep; the page's bitwise check against the record is part
of the request) and one off the grid (friction 0.73, no push, a `boundary.probe` seed). Each is asked
`--repeats` times; medians are recorded. The server is started --repeats times too (the last start serves
the requests), its start timed each time. Goals (issue 28): <= 1 s for the result, <= 3 s with the clip.
The .rrd download (`GET /rrd/<run>`, exported on first request) is timed apart: the page does not wait
for it.

    .venv/bin/python benchmarks/bench_boundary_probe.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from results_file import record

ROOT = Path(__file__).resolve().parents[1]
SWEEP = [
    "--checkpoint",
    "go1_v0",
    "--mu-min",
    "0.5",
    "--n-mu",
    "2",
    "--push-max",
    "50",
    "--n-push",
    "5",
    "--seeds-per-cell",
    "4",
]


def page_token(url: str) -> str:
    """The token the probe's page carries, which its POSTs send (probe_server.Guard)."""
    with urllib.request.urlopen(url, timeout=120) as res:
        return re.search(r'<meta name="probe-token" content="([^"]+)">', res.read().decode()).group(1)


def post(url: str, token: str, body: dict | None = None) -> tuple[dict, float]:
    req = urllib.request.Request(
        url, json.dumps(body or {}).encode(), {"content-type": "application/json", "x-probe-token": token}
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as res:
        data = json.loads(res.read())
    return data, time.perf_counter() - t0


def survivor(store: Path) -> dict:
    """A stored world of the sweep that survived the whole horizon (smallest seed)."""
    sys.path.insert(0, str(ROOT))
    from policylab.rollout.store import Store

    with Store(store) as s:
        worlds = [r.data["world"] for r in s.records("boundary") if r.outcome["status"] == "survived"]
    return min(worlds, key=lambda w: w["seed"])


def measure(url: str, token: str, body: dict, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        result, run_s = post(url + "api/run", token, body)
        rendered, render_s = post(url + f"api/render/{result['run_id']}", token)
        if not runs:  # the first download exports the .rrd; later ones of the same run send the file
            t0 = time.perf_counter()
            with urllib.request.urlopen(url + f"rrd/{result['run_id']}", timeout=120) as res:
                assert res.read(4) == b"RRF2"
            rrd_export_s = round(time.perf_counter() - t0, 3)
        assert len(result["tracks"]["time"]) == 251 and result["outcome"]["status"] == "survived", result["outcome"]
        runs.append(
            {
                "run_s": run_s,
                "render_s": render_s,
                "total_s": run_s + render_s,
                "worker_simulate_s": result["simulate_s"],
                "worker_clip_s": rendered["clip_s"],
                "bitwise_equal_to_store": None if result["stored"] is None else result["stored"]["bitwise_equal"],
            }
        )
    med = {
        k: round(statistics.median(r[k] for r in runs), 3)
        for k in ("run_s", "render_s", "total_s", "worker_simulate_s", "worker_clip_s")
    }
    return {
        **med,
        "rrd_export_s": rrd_export_s,
        "repeats": repeats,
        "control_steps": 250,
        "bitwise_equal_to_store": runs[0]["bitwise_equal_to_store"],
        "all_runs": runs,
    }


def start_probe(cli: list[str], store: Path, env: dict) -> tuple[subprocess.Popen, str, float]:
    """`policylab boundary probe` on `store`, once it prints its address: the process, the address and the
    seconds that took."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*cli, "probe", "--store", str(store)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    url = proc.stdout.readline().split()[1]
    return proc, url, time.perf_counter() - t0


def stop_probe(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "policylab.cli", "boundary"]
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        store = Path(tmp) / "store"
        subprocess.run([*cli, "sweep", *SWEEP, "--store", str(store)], env=env, check=True, capture_output=True)
        world = survivor(store)
        starts = []
        for k in range(args.repeats):  # the last start serves the requests
            proc, url, took = start_probe(cli, store, env)
            starts.append(took)
            if k < args.repeats - 1:
                stop_probe(proc)
        try:
            token = page_token(url)
            axes = {k: world[k] for k in ("mu", "push_pct", "push_dir", "push_t0")}
            stored = measure(
                url,
                token,
                {"map": "go1_v0", "checkpoint": "go1_v0", "world": axes, "sweep_seed": world["seed"]},
                args.repeats,
            )
            off = measure(
                url,
                token,
                {
                    "map": "go1_v0",
                    "checkpoint": "go1_v0",
                    "seed_index": 0,
                    "world": {"mu": 0.73, "push_pct": 0, "push_dir": 90, "push_t0": 2.0},
                },
                args.repeats,
            )
        finally:
            stop_probe(proc)
    result = {
        "server_start_s": round(statistics.median(starts), 3),
        "server_start_min_s": round(min(starts), 3),
        "server_start_max_s": round(max(starts), 3),
        "stored_world": stored,
        "off_grid_world": off,
        "clip_size": "3 views of 320 x 240, 20 fps",
        "load_before": round(load, 2),
        "goals": {"result_s": 1.0, "with_clip_s": 3.0},
    }
    path = record("boundary_probe", result, machine_note="the shared 2-core machine")
    print(json.dumps({k: v for k, v in result.items()}, indent=1, default=str)[:2000])
    print(path)


if __name__ == "__main__":
    main()
