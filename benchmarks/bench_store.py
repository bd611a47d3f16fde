"""The store, packed (this checkout) against the store before packing (one npz file per rollout,
`--baseline-tree`, e.g. `git archive e45d12b | tar -x -C DIR`), side by side in one run; with
`--previous-tree` (e.g. `git archive fd97de1`: the packed store before its write path was reworked)
that tree too, in the write path and the Go1 sweep.

1. The batch write path, simulation excluded: `--records` records of 6 KB of float arrays
   (random-walk trajectories, 40 x 19 float64) with boundary-like worlds, written in units of 1,000
   (this checkout: `Store.put_many`, index rows + one unit file + sha256 per record; before:
   `Store.put` per record, as its `ensure` did). Twice: from plain arrays (the packing and hashing
   in the path) and from `EncodedArrays` made beforehand (as runners hand them over: encoded where
   the unit ran). Records/s (closing the store included: it checkpoints SQLite's log), the
   process's CPU seconds per record (all threads: on a loaded machine the steadier figure), payload
   files, bytes on disk. Then a third time through the workers' path (`--executor processes`, Ray):
   two worker processes pack, hash and write their units' files, the driver commits the rows
   (this checkout and `--previous-tree`; records/s and the driver's CPU per record), then the
   driver's side alone: the same units' rows committed again into a fresh index. Each round starts
   by timing plain writes of new files (16 x 21 MB), what the machine charges for new file pages.
2. `policylab breakout eval --env shadow --episodes 10000` in both trees (every trajectory stored):
   wall seconds, files left in the out folder, store bytes: the size of real trajectories.
3. `policylab breakout eval --env shadow --episodes 100000` in this checkout only (the goal: <= 3
   minutes, <= 200 files).
4. The default Go1 sweep (`policylab boundary sweep`, 6,400 rollouts) in both trees: wall seconds,
   the store writer thread's busy seconds (its timing.json), store files and bytes.

Each measurement runs in a subprocess with PYTHONPATH set to its tree; rounds alternate the trees.
Usage:

    .venv/bin/python benchmarks/bench_store.py --baseline-tree DIR [--previous-tree DIR] [--records 20000]
        [--rounds 2] [--out runs/bench-store] [--skip-100k] [--skip-go1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results_file import RESULTS, record

HERE = Path(__file__).resolve().parents[1]
GOAL_RECORDS_PER_S = 50_000
GOAL_RECORDS_PER_FILE = 1_000
GOAL_100K_S = 180.0
GOAL_100K_FILES = 200
WORKERS = 2  # worker processes in the workers' write path: one per core of the 2-core machine

# What every write-path child writes, the same in each tree: boundary-like worlds, a random-walk
# trajectory of 40 x 19 float64 per record (6 KB), in seed order.
RECORDS = r"""
import numpy as np
policy = {"name": "linear", "checkpoint": "pd_soft", "sha256": "ab" * 32}
protocol = {"control_dt": 0.05, "horizon": 100, "push_window": [40, 50], "rule": 3}

def world(i):
    return {"env": "boundary-go1", "cache_key": f"v2|mu={0.05 + i % 20 * 0.05:.4f}|seed={i}",
            "mu": 0.05 + i % 20 * 0.05, "push_pct": 10.0 * (i // 20 % 20), "push_dir": 90.0, "push_t0": 2.0,
            "seed": i, "mu_idx": i % 20, "push_idx": i // 20 % 20, "seed_idx": i // 400}

def outcome(i):
    return {"status": "failed", "t_fail": 1.5 + i % 7}

def payloads(n):
    rng = np.random.default_rng(0)
    return [{"qpos": np.cumsum(rng.normal(size=(40, 19)) * 0.01, axis=0)} for _ in range(n)]
"""

CHILD = (
    RECORDS
    + r"""
import json, sys, time
try:
    from policylab.rollout.payloads import EncodedArrays
except ImportError:  # a tree from before payloads had their own module
    from policylab.fileio import EncodedArrays
from policylab.rollout.store import Store, rollout_key
root, n, encoded = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
items = [(rollout_key(world(i), policy, protocol), world(i), outcome(i), EncodedArrays(arrays) if encoded else arrays)
         for i, arrays in enumerate(payloads(n))]
store = Store(root)
batch = hasattr(store, "put_many")
if batch:
    from policylab.rollout.store import Put
start, cpu = time.perf_counter(), time.process_time()
for u in range(0, n, 1000):
    unit = items[u:u + 1000]
    if batch:
        store.put_many([Put(k, "boundary", w, policy, protocol, o, p) for k, w, o, p in unit])
    else:
        for k, w, o, p in unit:
            store.put(k, study="boundary", world=w, policy=policy, protocol=protocol, outcome=o, payload=p)
store.close()  # timed too: closing checkpoints what is left in SQLite's write-ahead log
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "records": n}))
"""
)


# The same records through the path `--executor processes` (and Ray) takes: worker processes pack,
# hash and write their units' files (`ensure.run_and_write`), the driver commits the rows
# (`Store.commit_unit`). Each worker makes the same payloads before the clock starts (the simulation
# is excluded), and hands back only outcomes and places.
WORKERS_CHILD = (
    RECORDS
    + r"""
import json, os, sys, time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
root, n, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
PAYLOADS = []

def make_payloads():
    PAYLOADS.extend(payloads(n))

def run(u):
    return [(outcome(i), PAYLOADS[i]) for i in range(u, min(u + 1000, n))]

def ready(_):
    return os.getpid()

pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=make_payloads)  # before any thread
assert len(set(pool.map(ready, range(4 * workers)))) >= 1
from policylab.rollout import unit_file
from policylab.rollout.ensure import Planned, run_and_write
from policylab.rollout.store import Store, frozen_provenance
planned = [Planned("boundary", world(i), policy, protocol) for i in range(n)]
keys = [p.key for p in planned]
store = Store(root)
start, cpu = time.perf_counter(), time.process_time()
futures = {pool.submit(run_and_write, (run, u, root, planned[u:u + 1000], frozen_provenance())): u
           for u in range(0, n, 1000)}
written = {}
for done in as_completed(futures):
    u, unit = futures[done], done.result()
    items = [planned[u + j].put(o) for j, o in enumerate(unit.outcomes)]
    store.commit_unit(items, unit.places)
    written[u] = (items, unit.places)
store.close()
wall, driver_cpu = time.perf_counter() - start, time.process_time() - cpu
pool.shutdown()
# The driver's side alone, as on a cluster with workers to spare: the same units' rows committed again,
# into a fresh index beside (its rows name the unit files of the store above).
rows_only = Store(root + "-rows")
start = time.perf_counter()
for u in sorted(written):
    rows_only.commit_unit(*written[u], path=unit_file.name(keys[u:u + 1000]))
rows_only.close()
commit_wall = time.perf_counter() - start
print(json.dumps({"wall_s": wall, "driver_cpu_s": driver_cpu, "records": n, "commit_only_wall_s": commit_wall}))
"""
)


def tree_env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree)}


def files_and_bytes(folder: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            n += 1
            size += os.path.getsize(os.path.join(dirpath, name))
    return n, size


def write_path(tree: Path, root: Path, records: int, encoded: bool) -> dict:
    shutil.rmtree(root, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(records), "1" if encoded else "0"],
        check=True,
        capture_output=True,
        text=True,
        env=tree_env(tree),
        cwd=tree,
    )
    got = json.loads(out.stdout)
    payload_files = sum(1 for p in root.rglob("*") if p.is_file() and p.suffix in (".npz", ".pack"))
    _, size = files_and_bytes(root)
    shutil.rmtree(root, ignore_errors=True)
    return {
        "records_per_s": round(records / got["wall_s"], 1),
        "wall_s": round(got["wall_s"], 3),
        "cpu_us_per_record": round(got["cpu_s"] / records * 1e6, 2),
        "payload_files": payload_files,
        "store_bytes": size,
    }


def write_path_workers(tree: Path, root: Path, records: int, workers: int) -> dict:
    shutil.rmtree(root, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-c", WORKERS_CHILD, str(root), str(records), str(workers)],
        check=True,
        capture_output=True,
        text=True,
        env=tree_env(tree),
        cwd=tree,
    )
    got = json.loads(out.stdout)
    payload_files = sum(1 for p in root.rglob("*.pack"))
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(f"{root}-rows", ignore_errors=True)
    return {
        "records_per_s": round(records / got["wall_s"], 1),
        "wall_s": round(got["wall_s"], 3),
        "driver_cpu_us_per_record": round(got["driver_cpu_s"] / records * 1e6, 2),
        "payload_files": payload_files,
        "driver_commit_only_records_per_s": round(records / got["commit_only_wall_s"], 1),
    }


def fresh_file_writes(folder: Path, files: int = 16, mb: int = 21) -> dict:
    """What writing new files costs this machine, outside the store: `files` files of `mb` MB (a Go1
    sweep's unit files) written one after the other, as wall and CPU seconds of the writing thread
    (the kernel copying into the page cache; on a VM whose memory the host backs lazily, fresh pages
    cost far more than a memory copy)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = os.urandom(mb << 20)
    wall = cpu = 0.0
    for i in range(files):
        t, c = time.perf_counter(), time.thread_time()
        fd = os.open(folder / f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        wall, cpu = wall + time.perf_counter() - t, cpu + time.thread_time() - c
    shutil.rmtree(folder, ignore_errors=True)
    return {"mb": files * mb, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "mb_per_s": round(files * mb / wall, 1)}


def eval_run(tree: Path, out: Path, episodes: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "policylab.cli",
        "breakout",
        "eval",
        "--env",
        "shadow",
        "--policy",
        "breakout_policy_v3",
        "--episodes",
        str(episodes),
        "--seed",
        "100",
        "--out",
        str(out),
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tree_env(tree), cwd=tree)
    wall = time.perf_counter() - start
    files, size = files_and_bytes(out)
    store_files, store_size = files_and_bytes(out / "store")
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall_s": round(wall, 2),
        "files_in_out": files,
        "out_bytes": size,
        "store_files": store_files,
        "store_bytes": store_size,
    }


def go1_sweep(tree: Path, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "policylab.cli",
        "boundary",
        "sweep",
        "--store",
        str(out / "store"),
        "--out",
        str(out / "sweep"),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tree_env(tree), cwd=tree)
    timing = json.loads((out / "sweep" / "timing.json").read_text())
    files, size = files_and_bytes(out / "store")
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall_s": timing["wall_s"],
        "store_write_s": timing["store_write_s"],
        "write_share": round(timing["store_write_s"] / timing["wall_s"], 4),
        "store_files": files,
        "store_bytes": size,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-tree", type=Path, required=True)
    ap.add_argument("--previous-tree", type=Path)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--eval-episodes", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-store"))
    ap.add_argument("--skip-eval", action="store_true", help="no 10,000-episode evals (their last figures are kept)")
    ap.add_argument("--skip-100k", action="store_true")
    ap.add_argument("--skip-go1", action="store_true")
    ap.add_argument(
        "--skip-go1-before",
        action="store_true",
        help="the Go1 sweep in this checkout (and --previous-tree) only; the npz store's is kept",
    )
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    trees = {"packed": HERE, "before": args.baseline_tree.resolve()}
    written = dict(trees, **({"previous": args.previous_tree.resolve()} if args.previous_tree else {}))
    rounds = []
    for r in range(args.rounds):
        entry: dict = {"load_average": os.getloadavg()[0], "fresh_file_writes": fresh_file_writes(out / "fresh")}
        print("fresh file writes", entry["fresh_file_writes"], flush=True)
        for mode in ("arrays", "encoded"):
            for side, tree in list(written.items()) if r % 2 == 0 else list(reversed(written.items())):
                entry[f"write_{mode}_{side}"] = write_path(tree, out / f"w-{side}", args.records, mode == "encoded")
                print(side, mode, entry[f"write_{mode}_{side}"], flush=True)
        for side, tree in ((s, t) for s, t in written.items() if s != "before"):  # no worker-written units before
            entry[f"write_workers_{side}"] = write_path_workers(tree, out / f"w-{side}", args.records, WORKERS)
            print(side, "workers", entry[f"write_workers_{side}"], flush=True)
        rounds.append(entry)
    evals = {}
    for side, tree in ({} if args.skip_eval else trees).items():  # numba compiles (and caches) each tree's kernels
        eval_run(tree, out / f"warm-{side}", 2)  # once, before any timing
    for side, tree in ({} if args.skip_eval else trees).items():
        evals[side] = eval_run(tree, out / f"eval-{side}", args.eval_episodes)
        print("eval", side, evals[side], flush=True)

    def med(key: str, field: str) -> float:
        return statistics.median(r[key][field] for r in rounds)

    write = {}
    for mode in ("arrays", "encoded"):
        write[mode] = {
            "packed_records_per_s": med(f"write_{mode}_packed", "records_per_s"),
            "before_records_per_s": med(f"write_{mode}_before", "records_per_s"),
            "speedup": round(
                med(f"write_{mode}_packed", "records_per_s") / med(f"write_{mode}_before", "records_per_s"), 2
            ),
            "packed_payload_files": rounds[0][f"write_{mode}_packed"]["payload_files"],
            "before_payload_files": rounds[0][f"write_{mode}_before"]["payload_files"],
            "packed_records_per_payload_file": args.records
            // max(1, rounds[0][f"write_{mode}_packed"]["payload_files"]),
            "packed_store_mb": round(rounds[0][f"write_{mode}_packed"]["store_bytes"] / 1e6, 2),
            "before_store_mb": round(rounds[0][f"write_{mode}_before"]["store_bytes"] / 1e6, 2),
            "packed_cpu_us_per_record": med(f"write_{mode}_packed", "cpu_us_per_record"),
            "before_cpu_us_per_record": med(f"write_{mode}_before", "cpu_us_per_record"),
        }
        if args.previous_tree:
            write[mode].update(
                {
                    "previous_records_per_s": med(f"write_{mode}_previous", "records_per_s"),
                    "speedup_vs_previous": round(
                        med(f"write_{mode}_packed", "records_per_s") / med(f"write_{mode}_previous", "records_per_s"), 2
                    ),
                    "previous_cpu_us_per_record": med(f"write_{mode}_previous", "cpu_us_per_record"),
                    "previous_store_mb": round(rounds[0][f"write_{mode}_previous"]["store_bytes"] / 1e6, 2),
                }
            )
    write["workers"] = {
        "workers": WORKERS,
        "packed_records_per_s": med("write_workers_packed", "records_per_s"),
        "packed_driver_cpu_us_per_record": med("write_workers_packed", "driver_cpu_us_per_record"),
        "packed_driver_commit_only_records_per_s": med("write_workers_packed", "driver_commit_only_records_per_s"),
        "packed_payload_files": rounds[0]["write_workers_packed"]["payload_files"],
    }
    if args.previous_tree:
        write["workers"].update(
            {
                "previous_records_per_s": med("write_workers_previous", "records_per_s"),
                "previous_driver_cpu_us_per_record": med("write_workers_previous", "driver_cpu_us_per_record"),
                "previous_driver_commit_only_records_per_s": med(
                    "write_workers_previous", "driver_commit_only_records_per_s"
                ),
            }
        )
    write["fresh_file_writes_mb_per_s"] = statistics.median(r["fresh_file_writes"]["mb_per_s"] for r in rounds)
    best = max(write["arrays"]["packed_records_per_s"], write["workers"]["packed_records_per_s"])
    write["goal_met"] = best >= GOAL_RECORDS_PER_S
    result = {
        "benchmark": "the store's batch write path (index row + payload bytes + sha256 per record, 6 KB arrays, "
        "units of 1,000, simulation excluded) and breakout eval's stores, packed vs one npz per rollout, "
        "side by side in one run",
        "script": "benchmarks/bench_store.py",
        "records": args.records,
        "write": write,
        "goals": {
            "records_per_s": GOAL_RECORDS_PER_S,
            "records_per_payload_file": GOAL_RECORDS_PER_FILE,
            "eval_100k_wall_s": GOAL_100K_S,
            "eval_100k_files": GOAL_100K_FILES,
        },
        "rounds": rounds,
    }
    if evals:
        result["eval_10k"] = {
            "episodes": args.eval_episodes,
            "packed": evals["packed"],
            "before": evals["before"],
            "store_size_ratio": round(evals["packed"]["store_bytes"] / evals["before"]["store_bytes"], 3),
            "wall_speedup": round(evals["before"]["wall_s"] / evals["packed"]["wall_s"], 2),
        }
    if not args.skip_100k:
        big = eval_run(HERE, out / "eval-100k", 100_000)
        print("eval 100k", big, flush=True)
        result["eval_100k"] = {
            **big,
            "goal_wall_met": big["wall_s"] <= GOAL_100K_S,
            "goal_files_met": big["files_in_out"] <= GOAL_100K_FILES,
        }
    if not args.skip_go1:
        go1 = {
            side: go1_sweep(tree, out / f"go1-{side}")
            for side, tree in written.items()
            if not (args.skip_go1_before and side == "before")
        }
        if args.skip_go1_before:  # the npz store's sweep as last measured, with its date and commit
            go1["before"] = _stamped_before(json.loads((RESULTS / "store.json").read_text()))
        print("go1", go1, flush=True)
        result["go1_sweep"] = {
            **go1,
            "store_size_ratio": round(go1["packed"]["store_bytes"] / go1["before"]["store_bytes"], 3),
            "goal_write_share": 0.05,
            "goal_write_share_met": go1["packed"]["write_share"] <= 0.05,
        }
        if "previous" in go1:
            result["go1_sweep"]["write_s_vs_previous"] = round(
                go1["packed"]["store_write_s"] / go1["previous"]["store_write_s"], 3
            )
    print(record("store", result, merge=keep_stamps))


STAMP = ("measured_on", "commit", "tree")


def _stamped_before(data: dict) -> dict:
    before = data["go1_sweep"]["before"]
    return before if "measured_on" in before else {**before, **{k: data["go1_sweep"].get(k, data[k]) for k in STAMP}}


def keep_stamps(data: dict, result: dict) -> None:
    """Update the file with `result`; an entry this run did not measure again (a skipped part, or
    `bench_store_ray.py`'s) keeps the date and commit it was measured at, which until now the file's
    own stamp gave and which is about to become this run's."""
    old = {k: data[k] for k in STAMP if k in data}
    for key, entry in data.items():
        if isinstance(entry, dict) and key not in result and "measured_on" not in entry and old:
            data[key] = {**entry, **old}
    data.update(result)


if __name__ == "__main__":
    main()
