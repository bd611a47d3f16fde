"""Equivalence gate: re-simulate stored worlds and compare them bitwise with their records.

Re-simulation never replaces a record; it only checks it. Each sampled world is re-run three
ways: all samples together in one batch with 2 threads, each world alone (batch of 1, 1 thread),
and in reverse order at the end of a batch padded to 64 worlds with other grid worlds (2 threads). A world agrees when the
re-simulated payload has the recorded sha256 and the same outcome. On CPU MuJoCo the gate
requires 100%: batch shape and thread count cannot matter because each world steps its own
`MjData` (see policylab.envs.ant).

A harness check also plays the checkpoint in Gymnasium's own ``Ant-v5`` (``env.reset(seed)``,
``env.step``) at the model's friction without a push and compares every state with
`run_closed_loop` bitwise: the study's simulator is Gymnasium's Ant, not a look-alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policylab.cli.command import Result
from policylab.config import claim_out_dir
from policylab.envs import ant
from policylab.errors import BadInput
from policylab.fileio import arrays_to_bytes, write_json
from policylab.hashing import sha256_hex
from policylab.policies import ant_linear
from policylab.rollout.seeds import named_range
from policylab.rollout.store import Store
from policylab.studies.boundary import sweep
from policylab.studies.boundary.requests import VerifyRun
from policylab.studies.boundary.simulate import run_closed_loop
from policylab.studies.boundary.world import Grid

PAD_BATCH = 64
HARNESS_SEEDS = named_range("boundary", "verify").first(2)  # the first two sweep seeds


def grid_from_meta(meta: dict) -> Grid:
    g = meta["grid"]
    return Grid(tuple(g["mus"]), tuple(g["pushes_pct_bw"]), g["seeds_per_cell"], g["push_dir_deg"], g["push_t0_s"])


def _compare(records, results) -> dict:
    identical = 0
    same_outcome = 0
    max_abs = 0.0
    mismatches = []
    for rec, (outcome, payload) in zip(records, results):
        sha = sha256_hex(arrays_to_bytes(payload))
        same = sha == rec.payload_sha256
        identical += same
        same_outcome += outcome == rec.outcome
        if not same:
            mismatches.append(rec.data["world"]["cache_key"])
        max_abs = max(max_abs, float(np.nanmax(np.abs(payload["qpos"] - rec.stored_qpos))))
    n = len(records)
    return {"n": n, "identical": identical, "same_outcome": same_outcome, "rate": identical / n if n else 0.0,
            "max_abs_qpos_diff": max_abs, "mismatches": mismatches}


class _Sampled:
    """A stored record plus its stored qpos (for the max-difference column)."""

    def __init__(self, rec, qpos):
        self.data, self.outcome, self.payload_sha256, self.stored_qpos = rec.data, rec.outcome, rec.payload_sha256, qpos


def harness_check(ckpt: sweep.Checkpoint, seeds=HARNESS_SEEDS) -> dict:
    """Our batched simulator vs Gymnasium's Ant-v5 env.step loop, nominal world, bitwise per state."""
    import gymnasium

    policy = ant_linear.load(ckpt.path)
    steps = sweep.n_steps()
    ours = run_closed_loop(policy.act, [None] * len(seeds), list(seeds), n_steps=steps, nthread=2)
    env = gymnasium.make("Ant-v5")
    identical = 0
    max_abs = 0.0
    for i, seed in enumerate(seeds):
        env.reset(seed=seed)
        u = env.unwrapped
        qpos = [u.data.qpos.copy()]
        for _ in range(steps):
            obs = ant.observe(u.data.qpos[None], u.data.qvel[None])
            env.step(policy.act(obs)[0])
            qpos.append(u.data.qpos.copy())
        qpos = np.array(qpos)
        identical += bool(np.array_equal(qpos, ours["qpos"][i]))
        max_abs = max(max_abs, float(np.abs(qpos - ours["qpos"][i]).max()))
    env.close()
    friction_same = bool(np.array_equal(ant.model(1.0).geom_friction, ant.model(None).geom_friction))
    return {"seeds": list(seeds), "steps": steps, "identical": identical, "max_abs_qpos_diff": max_abs,
            "mu_1_model_equals_xml": friction_same}


def run_verify(ckpt: sweep.Checkpoint, store_root: Path, sample: int, out: Path) -> dict:
    with Store(store_root) as store:
        meta = store.get_meta(sweep.meta_name(ckpt))
        if meta is None:
            raise BadInput("store", f"{store_root} holds no sweep of {ckpt.name}; run `policylab boundary sweep "
                           f"--checkpoint {ckpt.name}` first")
        if meta["checkpoint"] != ckpt.as_dict():
            raise BadInput("checkpoint", f"the stored sweep of {ckpt.name} used another file (sha256 differs)")
        grid = grid_from_meta(meta)
        planned = [(k, gw) for k, gw in sweep.sweep_keys(grid, ckpt) if store.has(k)]
        if not planned:
            raise BadInput("store", f"{store_root} holds no records of the {ckpt.name} sweep")
        claim_out_dir(out, {"checkpoint": ckpt.as_dict(), "store": str(store_root), "sample": sample})
        picks = sorted(set(np.linspace(0, len(planned) - 1, min(sample, len(planned))).round().astype(int)))
        chosen = [planned[i] for i in picks]
        records = [_Sampled(store.require(k), store.payload(k)["qpos"]) for k, _ in chosen]
        all_worlds = [gw.world for _, gw in sweep.sweep_keys(grid, ckpt)]
    worlds = [gw.world for _, gw in chosen]
    n_sample = len(worlds)
    modes = {}
    modes["batch_all_samples_2_threads"] = _compare(records, sweep.simulate_worlds(str(ckpt.path), worlds, nthread=2))
    modes["alone_batch_1_thread_1"] = _compare(
        records, [sweep.simulate_worlds(str(ckpt.path), [w], nthread=1)[0] for w in worlds]
    )
    # the samples again, in reverse order at the end of one batch padded with other grid worlds
    chosen_keys = {w.key for w in worlds}
    pad = [w for w in all_worlds if w.key not in chosen_keys][: max(0, PAD_BATCH - n_sample)]
    padded = sweep.simulate_worlds(str(ckpt.path), pad + worlds[::-1], nthread=2)[len(pad):][::-1]
    modes[f"reversed_in_batch_of_{len(pad) + n_sample}_2_threads"] = _compare(records, padded)
    harness = harness_check(ckpt)
    n = len(records)
    identical = min(m["identical"] for m in modes.values())
    report = {
        "checkpoint": ckpt.as_dict(),
        "store": str(store_root),
        "sampled_keys": [w.key for w in worlds],
        "modes": modes,
        "agreement": {"n": n, "identical": identical, "rate": identical / n},
        "harness_vs_gymnasium_ant_v5": harness,
        "passed": identical == n and harness["identical"] == len(harness["seeds"]),
    }
    write_json(out / "equivalence.json", report)
    return report


def run(req: VerifyRun) -> Result:
    """`policylab boundary verify`: the gate's report; exit status 1 when it fails."""
    ckpt = sweep.resolve_checkpoint(req.checkpoint)
    report = run_verify(ckpt, req.store, req.sample, req.out)
    a, h = report["agreement"], report["harness_vs_gymnasium_ant_v5"]
    return Result(req.out / "equivalence.json", exit_code=0 if report["passed"] else 1, headlines=(
        f"equivalence {ckpt.name}: {a['identical']}/{a['n']} identical ({a['rate']:.0%}); Gymnasium Ant-v5 loop "
        f"{h['identical']}/{len(h['seeds'])} identical; gate {'PASS' if report['passed'] else 'FAIL'}",))
