"""The store, packed (this checkout) against the store before packing (one npz file per rollout,
`--baseline-tree`, e.g. `git archive e45d12b | tar -x -C DIR`), side by side in one run.

1. The batch write path, simulation excluded: `--records` records of 6 KB of float arrays
   (random-walk trajectories, 40 x 19 float64) with boundary-like worlds, written in units of 1,000
   (this checkout: `Store.put_many`, index rows + one unit file + sha256 per record; before:
   `Store.put` per record, as its `ensure` did). Twice: from plain arrays (the packing and hashing
   in the path) and from `EncodedArrays` made beforehand (as runners hand them over: encoded where
   the unit ran). Records/s, payload files, bytes on disk.
2. `policylab breakout eval --env shadow --episodes 10000` in both trees (every trajectory stored):
   wall seconds, files left in the out folder, store bytes: the size of real trajectories.
3. `policylab breakout eval --env shadow --episodes 100000` in this checkout only (the goal: <= 3
   minutes, <= 200 files).
4. The default Go1 sweep (`policylab boundary sweep`, 6,400 rollouts) in both trees: wall seconds,
   the store writer thread's busy seconds (its timing.json), store files and bytes.

Each measurement runs in a subprocess with PYTHONPATH set to its tree; rounds alternate the trees.
Usage:

    .venv/bin/python benchmarks/bench_store.py --baseline-tree DIR [--records 20000] [--rounds 2]
        [--out runs/bench-store] [--skip-100k]
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

from results_file import record

HERE = Path(__file__).resolve().parents[1]
GOAL_RECORDS_PER_S = 50_000
GOAL_RECORDS_PER_FILE = 1_000
GOAL_100K_S = 180.0
GOAL_100K_FILES = 200

CHILD = r"""
import json, sys, time
import numpy as np
from policylab.fileio import EncodedArrays
from policylab.rollout.store import Store, rollout_key
root, n, encoded = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rng = np.random.default_rng(0)
policy = {"name": "linear", "checkpoint": "pd_soft", "sha256": "ab" * 32}
protocol = {"control_dt": 0.05, "horizon": 100, "push_window": [40, 50], "rule": 3}
items = []
for i in range(n):
    world = {"env": "boundary-go1", "cache_key": f"v2|mu={0.05 + i % 20 * 0.05:.4f}|seed={i}",
             "mu": 0.05 + i % 20 * 0.05, "push_pct": 10.0 * (i // 20 % 20), "push_dir": 90.0, "push_t0": 2.0,
             "seed": i, "mu_idx": i % 20, "push_idx": i // 20 % 20, "seed_idx": i // 400}
    arrays = {"qpos": np.cumsum(rng.normal(size=(40, 19)) * 0.01, axis=0)}
    items.append((rollout_key(world, policy, protocol), world, {"status": "failed", "t_fail": 1.5 + i % 7},
                  EncodedArrays(arrays) if encoded else arrays))
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
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), str(records), "1" if encoded else "0"],
                         check=True, capture_output=True, text=True, env=tree_env(tree), cwd=tree)
    got = json.loads(out.stdout)
    payload_files = sum(1 for p in root.rglob("*") if p.is_file() and p.suffix in (".npz", ".pack"))
    _, size = files_and_bytes(root)
    shutil.rmtree(root, ignore_errors=True)
    return {"records_per_s": round(records / got["wall_s"], 1), "wall_s": round(got["wall_s"], 3),
            "payload_files": payload_files, "store_bytes": size}


def eval_run(tree: Path, out: Path, episodes: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "policylab.cli", "breakout", "eval", "--env", "shadow", "--policy",
           "breakout_policy_v3", "--episodes", str(episodes), "--seed", "100", "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tree_env(tree), cwd=tree)
    wall = time.perf_counter() - start
    files, size = files_and_bytes(out)
    store_files, store_size = files_and_bytes(out / "store")
    shutil.rmtree(out, ignore_errors=True)
    return {"wall_s": round(wall, 2), "files_in_out": files, "out_bytes": size, "store_files": store_files,
            "store_bytes": store_size}


def go1_sweep(tree: Path, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "policylab.cli", "boundary", "sweep", "--store", str(out / "store"),
           "--out", str(out / "sweep")]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tree_env(tree), cwd=tree)
    timing = json.loads((out / "sweep" / "timing.json").read_text())
    files, size = files_and_bytes(out / "store")
    shutil.rmtree(out, ignore_errors=True)
    return {"wall_s": timing["wall_s"], "store_write_s": timing["store_write_s"],
            "write_share": round(timing["store_write_s"] / timing["wall_s"], 4), "store_files": files,
            "store_bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-tree", type=Path, required=True)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--eval-episodes", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-store"))
    ap.add_argument("--skip-100k", action="store_true")
    ap.add_argument("--skip-go1", action="store_true")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    trees = {"packed": HERE, "before": args.baseline_tree.resolve()}
    rounds = []
    for r in range(args.rounds):
        entry: dict = {"load_average": os.getloadavg()[0]}
        for mode in ("arrays", "encoded"):
            for side, tree in (list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))):
                entry[f"write_{mode}_{side}"] = write_path(tree, out / f"w-{side}", args.records, mode == "encoded")
                print(side, mode, entry[f"write_{mode}_{side}"], flush=True)
        rounds.append(entry)
    evals = {}
    for side, tree in trees.items():  # numba compiles (and caches) each tree's kernels once, before any timing
        eval_run(tree, out / f"warm-{side}", 2)
    for side, tree in trees.items():
        evals[side] = eval_run(tree, out / f"eval-{side}", args.eval_episodes)
        print("eval", side, evals[side], flush=True)

    def med(key: str, field: str) -> float:
        return statistics.median(r[key][field] for r in rounds)

    write = {}
    for mode in ("arrays", "encoded"):
        write[mode] = {
            "packed_records_per_s": med(f"write_{mode}_packed", "records_per_s"),
            "before_records_per_s": med(f"write_{mode}_before", "records_per_s"),
            "speedup": round(med(f"write_{mode}_packed", "records_per_s") / med(f"write_{mode}_before", "records_per_s"), 2),
            "packed_payload_files": rounds[0][f"write_{mode}_packed"]["payload_files"],
            "before_payload_files": rounds[0][f"write_{mode}_before"]["payload_files"],
            "packed_records_per_payload_file": args.records // max(1, rounds[0][f"write_{mode}_packed"]["payload_files"]),
            "packed_store_mb": round(rounds[0][f"write_{mode}_packed"]["store_bytes"] / 1e6, 2),
            "before_store_mb": round(rounds[0][f"write_{mode}_before"]["store_bytes"] / 1e6, 2),
        }
    result = {
        "benchmark": "the store's batch write path (index row + payload bytes + sha256 per record, 6 KB arrays, "
                     "units of 1,000, simulation excluded) and breakout eval's stores, packed vs one npz per rollout, "
                     "side by side in one run",
        "script": "benchmarks/bench_store.py",
        "records": args.records,
        "write": write,
        "eval_10k": {
            "episodes": args.eval_episodes,
            "packed": evals["packed"], "before": evals["before"],
            "store_size_ratio": round(evals["packed"]["store_bytes"] / evals["before"]["store_bytes"], 3),
            "wall_speedup": round(evals["before"]["wall_s"] / evals["packed"]["wall_s"], 2),
        },
        "goals": {"records_per_s": GOAL_RECORDS_PER_S, "records_per_payload_file": GOAL_RECORDS_PER_FILE,
                  "eval_100k_wall_s": GOAL_100K_S, "eval_100k_files": GOAL_100K_FILES},
        "rounds": rounds,
    }
    if not args.skip_100k:
        big = eval_run(HERE, out / "eval-100k", 100_000)
        print("eval 100k", big, flush=True)
        result["eval_100k"] = {**big, "goal_wall_met": big["wall_s"] <= GOAL_100K_S,
                               "goal_files_met": big["files_in_out"] <= GOAL_100K_FILES}
    if not args.skip_go1:
        go1 = {side: go1_sweep(tree, out / f"go1-{side}") for side, tree in trees.items()}
        print("go1", go1, flush=True)
        result["go1_sweep"] = {**go1, "store_size_ratio": round(go1["packed"]["store_bytes"] / go1["before"]["store_bytes"], 3),
                               "goal_write_share": 0.05, "goal_write_share_met": go1["packed"]["write_share"] <= 0.05}
    print(record("store", result))


if __name__ == "__main__":
    main()
