"""Equivalence gate: re-simulate stored worlds and compare them bitwise with their records.

Each sample runs in one batch, alone and reversed in a padded batch; CPU MuJoCo must agree 100%."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from policylab import provenance
from policylab.config import claim_out_dir
from policylab.envs.robots.batch import plain_loop
from policylab.envs.robots.batch import run_closed_loop as run_robot_loop
from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.result import Result
from policylab.rollout.seeds import named_range
from policylab.rollout.store import Store, writable
from policylab.studies.boundary import gate
from policylab.studies.boundary.checkpoint import Checkpoint, robot_policy
from policylab.studies.boundary.older_records import recorded_robot
from policylab.studies.boundary.protocol import n_steps
from policylab.studies.boundary.records import (
    diverged_cause,
    grid_from_meta,
    meta_name,
    refuse_diverged,
    resolve_in_store,
    robot_from_meta,
    sweep_keys,
)
from policylab.studies.boundary.requests import VerifyRequest
from policylab.studies.boundary.simulation import simulate_worlds

PAD_BATCH = 64
ANT_V5_ENV = "gymnasium-mujoco/Ant-v5"  # the env a robot spec names when Gymnasium's Ant-v5 loop can check it
HARNESS_SEEDS = named_range("boundary", "verify").first(2)  # the first two sweep seeds


def _compare(records, results) -> dict:
    identical = 0
    same_outcome = 0
    max_abs = 0.0
    mismatches = []
    for rec, (outcome, payload) in zip(records, results):
        same = rec.digest_of(payload) == rec.payload_sha256
        identical += same
        same_outcome += outcome == rec.outcome
        if not same:
            mismatches.append(rec.data["world"]["cache_key"])
        max_abs = max(max_abs, float(np.nanmax(np.abs(payload["qpos"] - rec.stored_qpos))))
    n = len(records)
    return {
        "n": n,
        "identical": identical,
        "same_outcome": same_outcome,
        "rate": identical / n if n else 0.0,
        "max_abs_qpos_diff": max_abs,
        "mismatches": mismatches,
    }


class _Sampled:
    """A stored record plus its stored qpos (for the max-difference column)."""

    def __init__(self, rec, qpos):
        self.data, self.outcome, self.payload_sha256, self.stored_qpos = rec.data, rec.outcome, rec.payload_sha256, qpos
        self.digest_of = rec.digest_of


def harness_check(ckpt: Checkpoint, seeds=HARNESS_SEEDS) -> dict:
    """Our batched simulator vs Gymnasium's Ant-v5 env.step loop (the Ant) or a plain per-world MuJoCo
    loop (any other robot), nominal world, bitwise per state."""
    rob = ckpt.robot
    policy = robot_policy(ckpt.path, rob)
    steps = n_steps(rob)
    ours = run_robot_loop(rob, policy.act, [None] * len(seeds), list(seeds), n_steps=steps, nthread=2)
    if rob.spec.env != ANT_V5_ENV:
        identical, max_abs = 0, 0.0
        for i, seed in enumerate(seeds):
            ref = plain_loop(rob, policy.act, None, seed, n_steps=steps)
            mine = ours["qpos"][i, : int(ours["n_states"][i])]
            same = ref["qpos"].shape == mine.shape
            identical += bool(same and np.array_equal(ref["qpos"], mine))
            max_abs = max(max_abs, float(np.abs(ref["qpos"] - mine).max()) if same else float("inf"))
        return {
            "reference": "plain per-world MuJoCo loop",
            "seeds": list(seeds),
            "steps": steps,
            "identical": identical,
            "max_abs_qpos_diff": max_abs,
        }
    import gymnasium

    ant = rob
    env = gymnasium.make("Ant-v5")
    identical = 0
    max_abs = 0.0
    for i, seed in enumerate(seeds):
        env.reset(seed=seed)
        u = env.unwrapped
        qpos = [u.data.qpos.copy()]
        for _ in range(steps):
            obs = ant.observe(u.data.qpos[None], u.data.qvel[None], np.array([u.data.time]))
            env.step(ant.ctrl(policy.act(obs))[0])
            qpos.append(u.data.qpos.copy())
        qpos = np.array(qpos)
        identical += bool(np.array_equal(qpos, ours["qpos"][i]))
        max_abs = max(max_abs, float(np.abs(qpos - ours["qpos"][i]).max()))
    env.close()
    friction_same = bool(np.array_equal(ant.model(1.0).geom_friction, ant.model(None).geom_friction))
    return {
        "reference": "gymnasium Ant-v5",
        "seeds": list(seeds),
        "steps": steps,
        "identical": identical,
        "max_abs_qpos_diff": max_abs,
        "mu_1_model_equals_xml": friction_same,
    }


def run_verify(ckpt: Checkpoint, store_root: Path, sample: int, out: Path, *, keep_diverged: bool = False) -> dict:
    with Store(store_root, readonly=True) as store:
        meta = store.get_meta(meta_name(ckpt.name))
        if meta is None:
            raise BadInput(
                "store",
                f"{store_root} holds no sweep of {ckpt.name}; run `policylab boundary sweep "
                f"--checkpoint {ckpt.name}` first",
            )
        if meta["checkpoint"] != ckpt.as_dict():
            raise BadInput("checkpoint", f"the stored sweep of {ckpt.name} used another file (sha256 differs)")
        grid = grid_from_meta(meta)
        rob = robot_from_meta(meta, store=store)
        if recorded_robot(meta)["ref"] != ckpt.robot.ref:
            raise BadInput(
                "robot",
                f"the stored sweep of {ckpt.name} was made with robot "
                f"{recorded_robot(meta)['ref']!r}; give --robot accordingly",
            )
        ckpt = replace(ckpt, robot=rob)  # the sweep's robot, with the command it was swept with
        planned = [(k, gw) for k, gw in sweep_keys(grid, ckpt) if store.has(k)]
        if not planned:
            raise BadInput("store", f"{store_root} holds no records of the {ckpt.name} sweep")
        stored = [store.require(k) for k, _ in planned]
        statuses = [(r.data["world"]["cache_key"], r.outcome["status"], diverged_cause(r.outcome)) for r in stored]
        if not keep_diverged:
            refuse_diverged(ckpt.name, statuses)
        claim_out_dir(out, {"checkpoint": ckpt.as_dict(), "store": str(store_root.resolve()), "sample": sample})
        picks = sorted(set(np.linspace(0, len(planned) - 1, min(sample, len(planned))).round().astype(int)))
        chosen = [planned[i] for i in picks]
        records = [_Sampled(stored[i], store.payload(planned[i][0])["qpos"]) for i in picks]
        all_worlds = [gw.world for _, gw in sweep_keys(grid, ckpt)]
    worlds = [gw.world for _, gw in chosen]
    n_sample = len(worlds)
    modes = {}
    modes["batch_all_samples_2_threads"] = _compare(records, simulate_worlds(str(ckpt.path), worlds, rob, nthread=2))
    modes["alone_batch_1_thread_1"] = _compare(
        records, [simulate_worlds(str(ckpt.path), [w], rob, nthread=1)[0] for w in worlds]
    )
    # the samples again, in reverse order at the end of one batch padded with other grid worlds
    chosen_keys = {w.key for w in worlds}
    pad = [w for w in all_worlds if w.key not in chosen_keys][: max(0, PAD_BATCH - n_sample)]
    padded = simulate_worlds(str(ckpt.path), pad + worlds[::-1], rob, nthread=2)[len(pad) :][::-1]
    modes[f"reversed_in_batch_of_{len(pad) + n_sample}_2_threads"] = _compare(records, padded)
    harness = harness_check(ckpt)
    n = len(records)
    mismatched = {k for m in modes.values() for k in m["mismatches"]}
    here = provenance.cpu()
    foreign = {
        r.data["world"]["cache_key"]: r.data.get("provenance", {}).get("cpu")
        for r in records
        if r.data["world"]["cache_key"] in mismatched and r.data.get("provenance", {}).get("cpu") not in (None, here)
    }
    identical = min(m["identical"] for m in modes.values())
    report = {
        "checkpoint": ckpt.as_dict(),
        "robot": recorded_robot(meta),
        "store": str(store_root),
        "sampled_keys": [w.key for w in worlds],
        "diverged": {
            "action": sum(c == "action" for _, _, c in statuses),
            "state": sum(c == "state" for _, _, c in statuses),
            "kept": keep_diverged,
        },
        "modes": modes,
        "agreement": {"n": n, "identical": identical, "rate": identical / n},
        "harness_vs_gymnasium_ant_v5"
        if harness["reference"] == "gymnasium Ant-v5"
        else "harness_vs_plain_loop": harness,
        "passed": identical == n and harness["identical"] == len(harness["seeds"]),
        "cross_machine": {"this_cpu": here, "mismatches_recorded_on_other_cpus": dict(sorted(foreign.items()))},
    }
    report["gate_record"] = gate.record(meta, report)
    write_json(out / "equivalence.json", report)
    if writable(store_root):  # an archived, read-only store keeps the gate it was archived with
        with Store(store_root) as store:
            store.set_meta(gate.gate_name(ckpt.name), report["gate_record"])
    return report


@dataclass(frozen=True)
class Plan:
    """A verification, resolved once (`plan`): the checkpoint whose stored sweep is re-simulated."""

    req: VerifyRequest
    ckpt: Checkpoint


def plan(req: VerifyRequest) -> Plan:
    """Resolve the checkpoint once (a name swept into the store is that sweep's policy,
    `records.resolve_in_store`); `BadInput` naming the field, nothing written. What the store holds of
    its sweep is checked by `run_verify`, which reads it."""
    return Plan(req, resolve_in_store(req.checkpoint, req.robot, store=req.store))


def run(req: VerifyRequest) -> Result:
    """`policylab boundary verify`: the gate's report; exit status 1 when it fails."""
    p = plan(req)
    ckpt = p.ckpt
    report = run_verify(ckpt, req.store, req.sample, req.out, keep_diverged=req.keep_diverged)
    a = report["agreement"]
    h = report.get("harness_vs_gymnasium_ant_v5") or report["harness_vs_plain_loop"]
    ref = "Gymnasium Ant-v5 loop" if h["reference"] == "gymnasium Ant-v5" else "plain MuJoCo loop"
    foreign = report["cross_machine"]["mismatches_recorded_on_other_cpus"]
    cross = (
        ()
        if not foreign
        else (
            f"cross-machine difference: {len(foreign)} mismatching record(s) were made on a CPU with other features "
            f"({'; '.join(sorted({_cpu_label(c) for c in foreign.values()}))}) than this one "
            f"({_cpu_label(report['cross_machine']['this_cpu'])}); re-simulate them on such a machine",
        )
    )
    return Result(
        req.out / "equivalence.json",
        exit_code=0 if report["passed"] else 1,
        headlines=(
            f"equivalence {ckpt.name}: {a['identical']}/{a['n']} identical ({a['rate']:.0%}); {ref} "
            f"{h['identical']}/{len(h['seeds'])} identical; gate {'PASS' if report['passed'] else 'FAIL'}",
        )
        + cross,
    )


def _cpu_label(cpu: dict) -> str:
    disabled = f", numpy without {cpu['npy_disabled']}" if cpu.get("npy_disabled") else ""
    return f"{cpu.get('machine')} {cpu.get('features') or 'no listed features'}{disabled}"
