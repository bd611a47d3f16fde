"""`policylab boundary calibrate`: the data behind the frozen failure thresholds (`failure.py`), nominal runs
and hard pushes, on seeds of the range ``boundary.calibration``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.config import claim_out_dir
from policylab.fileio import write_json
from policylab.result import Result
from policylab.rollout.seeds import seed_range_base
from policylab.studies.boundary.checkpoint import Checkpoint, resolve_checkpoint
from policylab.studies.boundary.requests import CalibrateRequest
from policylab.studies.boundary.simulation import simulate_worlds
from policylab.studies.boundary.world import World

CAL_SEED0 = seed_range_base("boundary", "calibration")
PUSH_CORNERS = [(mu, push) for mu in (0.05, 0.5, 1.0) for push in (50.0, 100.0, 150.0, 200.0)]


def _quantiles(x: np.ndarray) -> dict:
    q = np.quantile(x, [0.0, 0.01, 0.05, 0.5, 0.95, 1.0])
    return {k: round(float(v), 4) for k, v in zip(("min", "p01", "p05", "p50", "p95", "max"), q)}


def threshold_data(ckpt: Checkpoint, n_nominal: int, n_pushed: int, out: Path) -> dict:
    nominal = [World(1.0, 0.0, 90.0, 2.0, CAL_SEED0 + i) for i in range(n_nominal)]
    rob = ckpt.robot
    res = simulate_worlds(str(ckpt.path), nominal, rob, nthread=2)
    z = np.concatenate([p["torso_z"] for _, p in res])[None]  # records may end at a failure: pooled states
    report: dict = {
        "checkpoint": ckpt.as_dict(),
        "robot": rob.ref,
        "thresholds": rob.thresholds(),
        "nominal": {
            "n": n_nominal,
            "per_rollout_min_torso_z": _quantiles(np.array([p["torso_z"].min() for _, p in res])),
            "per_rollout_min_uprightness": _quantiles(np.array([p["uprightness"].min() for _, p in res])),
            "all_states_torso_z": _quantiles(z.ravel()),
            "forward_speed_mps": _quantiles(np.array([o["forward_speed_mps"] for o, _ in res])),
            "status": {s: sum(o["status"] == s for o, _ in res) for s in ("survived", "failed", "diverged")},
            "survivors_min_torso_z": round(
                float(min((o["min_torso_z"] for o, _ in res if o["status"] == "survived"), default=float("nan"))), 4
            ),
            "survivors_min_uprightness": round(
                float(min((o["min_uprightness"] for o, _ in res if o["status"] == "survived"), default=float("nan"))), 4
            ),
        },
        "pushed": [],
    }
    seed = CAL_SEED0 + n_nominal
    for mu, push in PUSH_CORNERS:
        worlds = [World(mu, push, 90.0, 2.0, seed + i) for i in range(n_pushed)]
        seed += n_pushed
        res = simulate_worlds(str(ckpt.path), worlds, rob, nthread=2)
        final_up = np.array([p["uprightness"][-1] for _, p in res])
        final_z = np.array([p["torso_z"][-1] for _, p in res])
        report["pushed"].append(
            {
                "mu": mu,
                "push_pct": push,
                "n": n_pushed,
                "status": {s: sum(o["status"] == s for o, _ in res) for s in ("survived", "failed", "diverged")},
                "min_uprightness": _quantiles(np.array([o["min_uprightness"] for o, _ in res])),
                "min_torso_z": _quantiles(np.array([o["min_torso_z"] for o, _ in res])),
                "on_back_at_end (uprightness < 0)": int((final_up < 0).sum()),
                "failed_but_upright_at_end (uprightness > 0.9)": sum(
                    o["status"] == "failed" and u > 0.9 for (o, _), u in zip(res, final_up)
                ),
                "survived_but_on_back_at_end": sum(
                    o["status"] == "survived" and u < 0 for (o, _), u in zip(res, final_up)
                ),
                "final_torso_z_of_those_on_back": _quantiles(final_z[final_up < 0]) if (final_up < 0).any() else None,
            }
        )
    report["dt"] = rob.control_dt
    write_json(out / "calibration.json", report)
    return report


@dataclass(frozen=True)
class Plan:
    """A calibration, resolved once (`plan`): the checkpoint on its robot, and the config OUT records."""

    req: CalibrateRequest
    ckpt: Checkpoint

    @property
    def config(self) -> dict:
        return self.req.config(self.ckpt.as_dict())


def plan(req: CalibrateRequest) -> Plan:
    """Resolve the checkpoint on its robot once (`checkpoint.resolve_checkpoint`); `BadInput` naming the
    field, nothing written."""
    return Plan(req, resolve_checkpoint(req.checkpoint, req.robot))


def run(req: CalibrateRequest) -> Result:
    """`policylab boundary calibrate`: claim OUT, play the nominal and hard-push worlds, write calibration.json."""
    p = plan(req)
    ckpt = p.ckpt
    claim_out_dir(req.out, p.config)
    report = threshold_data(ckpt, req.n_nominal, req.n_pushed, req.out)
    nominal = report["nominal"]
    z, up = nominal["per_rollout_min_torso_z"]["min"], nominal["per_rollout_min_uprightness"]["min"]
    return Result(
        req.out / "calibration.json",
        headlines=(
            f"{ckpt.name}: nominal {nominal['status']['survived']}/{nominal['n']} survived; lowest torso {z} m, lowest "
            f"uprightness {up} (thresholds {report['thresholds']['torso_z_fail_m']} m, "
            f"{report['thresholds']['uprightness_fail']})",
        ),
    )
