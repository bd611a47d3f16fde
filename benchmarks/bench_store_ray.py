"""A sweep on a local two-node Ray cluster, its workers writing their units' files into the store,
against the same sweep on the local executor: the two stores must hold equal records.

Starts `ray start --head --block` and a second `ray start --address --block` on this machine (two
raylets, one CPU each, each in a session of its own that is stopped at the end: never `ray stop`,
which would stop every Ray on the machine), runs `policylab boundary sweep --executor ray --ray-address ...` into one store and
`--executor local` into another, compares them row by row (key, record, payload sha256) and reads
every payload back, then stops the cluster. Records its figures under `ray_two_nodes` in
results/store.json. Usage:

    .venv/bin/python benchmarks/bench_store_ray.py [--out runs/bench-store-ray] [--n-mu 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import record

HERE = Path(__file__).resolve().parents[1]
PORT = "6391"


def start_node(*args: str) -> subprocess.Popen:
    """`ray start ... --block` in a session of its own: stopping it (the group) stops that node's
    processes alone, never another Ray on this machine (`ray stop` would stop them all). Its temp
    folder is its own too: the head records itself there as the machine's current cluster, which a
    later `ray.init()` elsewhere on the machine would try to join."""
    exe = Path(sys.executable).with_name("ray")
    return subprocess.Popen(
        [str(exe), "start", *args, "--block", "--disable-usage-stats"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )


def stop_node(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def sweep(store: Path, out: Path, n_mu: int, extra: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "policylab.cli",
            "boundary",
            "sweep",
            "--checkpoint",
            "ant_v0",
            "--n-mu",
            str(n_mu),
            "--n-push",
            "4",
            "--seeds-per-cell",
            "4",
            "--chunk",
            "8",
            "--store",
            str(store),
            "--out",
            str(out),
            *extra,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(HERE), "RAY_AUTH_MODE": "disabled"},
        cwd=HERE,
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("runs/bench-store-ray"))
    ap.add_argument("--n-mu", type=int, default=4)
    args = ap.parse_args()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sys.path.insert(0, str(HERE))
    from policylab.rollout.store import Store

    ray_tmp = tempfile.mkdtemp(prefix="pl-ray-")  # short: Ray's socket paths live in it
    nodes = [
        start_node("--head", f"--port={PORT}", "--num-cpus=1", "--include-dashboard=false", f"--temp-dir={ray_tmp}")
    ]
    try:
        time.sleep(10)  # the head's GCS, before a node joins it
        nodes.append(start_node(f"--address=127.0.0.1:{PORT}", "--num-cpus=1"))
        import ray

        ray.init(address=f"127.0.0.1:{PORT}", log_to_driver=False)
        deadline = time.monotonic() + 60
        while sum(n["Alive"] for n in ray.nodes()) < 2 and time.monotonic() < deadline:
            time.sleep(1)
        alive = sum(n["Alive"] for n in ray.nodes())
        ray.shutdown()
        ray_s = sweep(
            out / "ray-store", out / "ray-out", args.n_mu, ["--executor", "ray", "--ray-address", f"127.0.0.1:{PORT}"]
        )
    finally:
        for node in reversed(nodes):
            stop_node(node)
    local_s = sweep(out / "local-store", out / "local-out", args.n_mu, ["--executor", "local"])
    with Store(out / "ray-store", readonly=True) as a, Store(out / "local-store", readonly=True) as b:
        keys = a.keys()
        same = keys == b.keys() and all(a.get(k).data == b.get(k).data for k in keys)
        same_digests = a.fingerprint() == b.fingerprint()
        for k in keys:
            a.payload(k)  # every payload a worker wrote reads back and checks
        files = len(list((out / "ray-store" / "units").glob("*.pack")))
    result = {
        "ray_two_nodes": {
            "nodes_alive": alive,
            "rollouts": len(keys),
            "records_equal_local": same,
            "digests_equal_local": same_digests,
            "unit_files_written_by_workers": files,
            "ray_wall_s": round(ray_s, 2),
            "local_wall_s": round(local_s, 2),
            "command": f"boundary sweep --checkpoint ant_v0 --n-mu {args.n_mu} --n-push 4 --seeds-per-cell 4 --chunk 8",
        }
    }
    print(result)
    print(record("store", result))
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ray_tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
