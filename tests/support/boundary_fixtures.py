"""Small real boundary sweeps for the analysis tests, made by `policylab boundary sweep` itself.

The policies are linear-policy checkpoints for the Ant (`policylab.policies.linear`, 27 -> 8)
whose weights are a hand-set PD hold of the rest pose (a = -kp (q - q0) - kd qdot on the 8 joints),
written to a temporary folder: a trivial controller that stands in for the trained walker only. The
physics (gymnasium's ant.xml on mujoco 4.0.0), the push protocol, the seed scheme, the frozen
failure rule, the record schema and the store are the study's own. The limp hold (kp 0.1) falls
far more often than the soft one (kp 0.3) at small pushes, so a diff between them has something
to find.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policylab.cli import invoke
from policylab.envs.robots.robot import robot
from policylab.policies import linear
from policylab.rollout.store import Store, rollout_key
from policylab.studies.boundary import failure
from policylab.studies.boundary.reduce import Rollout, Sweep

ANT = robot("ant")
ANT_XML = str(ANT.mjcf)
GAINS = {"pd_soft": 0.3, "pd_limp": 0.1}


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> Path:
        """The path of the `report: PATH` line, which must be the last line on stdout."""
        last = self.stdout.strip().splitlines()[-1]
        assert last.startswith("report: "), self.stdout
        return Path(last.removeprefix("report: "))


def cli(*args) -> Ran:
    """`policylab boundary ARGS...` in this process (`policylab.cli.invoke`: the CLI's own parsing, exit
    codes and one-line errors), stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = invoke(["boundary", *map(str, args)])
    return Ran(code, out.getvalue(), err.getvalue())


def pd_checkpoint(folder: Path, name: str) -> Path:
    """A linear-policy checkpoint that holds the rest pose with proportional gain GAINS[name]."""
    obs_mean, obs_std, weights = np.zeros(ANT.obs_dim), np.ones(ANT.obs_dim), np.zeros((ANT.act_dim, ANT.obs_dim))
    obs_mean[5:13] = ANT.base.qpos0[7:]  # observation = qpos[2:] (13) + qvel (14): joints at 5..12, 19..26
    for j in range(8):
        weights[j, 5 + j] = -GAINS[name]
        weights[j, 19 + j] = -0.1
    path = Path(folder) / f"{name}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    linear.save(path, linear.LinearPolicy(weights, obs_mean, obs_std))
    return path


def make_sweep(
    base: Path,
    name: str,
    mu: tuple[float, float],
    n_mu: int,
    push: tuple[float, float],
    n_push: int,
    seeds: int,
    store: Path | None = None,
) -> Path:
    """Run `policylab boundary sweep` for checkpoint `name` into `store` (default base/store)."""
    return make_grid_sweep(
        base,
        name,
        [
            "--mu-min",
            mu[0],
            "--mu-max",
            mu[1],
            "--n-mu",
            n_mu,
            "--push-min",
            push[0],
            "--push-max",
            push[1],
            "--n-push",
            n_push,
        ],
        seeds,
        store,
    )


def make_grid_sweep(base: Path, name: str, grid_args: list, seeds: int, store: Path | None = None) -> Path:
    """`make_sweep` on the grid that `grid_args` (sweep options: ranges, or --rows / --cols / --set) give,
    then its equivalence gate."""
    store = store or base / "store"
    ckpt = pd_checkpoint(base / "checkpoints", name)
    out = base / f"sweep-{name}-{store.name}"
    res = cli(
        "sweep",
        "--robot",
        "ant",
        "--checkpoint",
        ckpt,
        *grid_args,
        "--seeds-per-cell",
        seeds,
        "--store",
        store,
        "--out",
        out,
    )
    assert res.returncode == 0, res.stderr
    assert res.report == out / "sweep.json"
    # the equivalence gate, which diff and report require (a small sample keeps the tests quick)
    res = cli(
        "verify",
        "--robot",
        "ant",
        "--checkpoint",
        ckpt,
        "--store",
        store,
        "--sample",
        4,
        "--out",
        base / f"verify-{name}-{store.name}",
    )
    assert res.returncode == 0, res.stderr
    return store


def relabelled_copy(store: Store, checkpoint: str, wrong: dict[str, str]) -> dict[str, str]:
    """Copy the sweep of `checkpoint` as checkpoint 'relabelled' (records and sweep meta), giving the
    records in `wrong` (key -> status) a wrong outcome label on their real trajectory. Returns
    old key -> new key. Checks that compare a record's label with its trajectory must notice."""
    from policylab.studies.boundary.checkpoint import Checkpoint, policy_record

    meta = store.get_meta(f"boundary/sweep/{checkpoint}")
    ckpt = {**meta["checkpoint"], "name": "relabelled"}
    store.set_meta("boundary/sweep/relabelled", {**meta, "checkpoint": ckpt})
    grid = {"name": "relabelled", "sha256": ckpt["sha256"]}
    new_keys = {}
    for rec in list(store.records("boundary")):
        if rec.data["world"]["checkpoint"]["name"] != checkpoint:
            continue
        world = {**rec.data["world"], "checkpoint": grid}
        policy = policy_record(Checkpoint("relabelled", Path("relabelled"), ckpt["sha256"], ANT))
        outcome = dict(rec.outcome)
        if rec.key in wrong:
            outcome.update(status=wrong[rec.key], t_fail=None, fail_reason=None)
        new_keys[rec.key] = rollout_key(world, policy, rec.data["protocol"])
        store.put(
            new_keys[rec.key],
            study="boundary",
            world=world,
            policy=policy,
            protocol=rec.data["protocol"],
            outcome=outcome,
            payload=store.payload(rec.key),
        )
    return new_keys


def one_row_sweep(name: str, pushes: list[float], outcomes: list[tuple[int, float | None]]) -> Sweep:
    """A one-row sweep (mu 1, the Ant) of 8 seeds per cell from (failures, failure time) per cell, for
    reduce and the reports without simulating."""
    cells = {}
    for j, (n_failed, t) in enumerate(outcomes):
        cells[(0, j)] = [
            Rollout(
                f"{name}{j}{i}",
                f"v2|mu=1|push={pushes[j]}|seed={i}",
                i,
                i,
                "failed" if i < n_failed else "survived",
                t if i < n_failed else None,
                None,
                None,
            )
            for i in range(8)
        ]
    return Sweep(
        name,
        "0" * 64,
        "test",
        [1.0],
        pushes,
        8,
        90.0,
        2.0,
        {"horizon_s": 5.0, "push_duration_s": 0.5, "failure": failure.thresholds()},
        cells,
        ANT,
    )
