"""`policylab boundary train`: train the walking policy of a config a robot's spec folder names with ARS
(`ars.py`) and write its checkpoint files."""

from __future__ import annotations

from policylab.result import Result
from policylab.studies.boundary import ars
from policylab.studies.boundary.requests import TrainRequest
from policylab.studies.boundary.robot_policies import train_configs


def run(req: TrainRequest) -> Result:
    """Train the chosen config (`robot_policies.train_configs`) into OUT: `<name>.npz`, `<name>.json`,
    `<name>.timing.json`."""
    cfg = train_configs(req.robot)[req.config]
    if req.iterations is not None:
        cfg = cfg.model_copy(update={"iterations": req.iterations})
    info = ars.train_and_save(cfg, req.out, nthread=req.threads)
    npz = req.out / f"{cfg.name}.npz"
    lines = [f"checkpoint: {npz} (sha256 {info['checkpoint_sha256'][:12]})"]
    last = next((row["eval"] for row in reversed(info["curve"]) if "eval" in row), None)
    if last is not None:
        lines.append(
            f"{cfg.name}: nominal survival {last['survival']:.0%}, forward speed "
            f"{last['speed_mps'] or 0:.2f} m/s after {cfg.iterations} iterations"
        )
    return Result(req.out / f"{cfg.name}.json", headlines=tuple(lines))
