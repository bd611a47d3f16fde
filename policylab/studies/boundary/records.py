"""A sweep's records in the store: the world part of each rollout record, the planned rollouts of a
grid, and the sweep's meta (grid, protocol, robot), which later stages read back to rebuild the robot
and to refuse a resumed sweep on another grid or protocol."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from policylab.envs.robots.robot import Robot, commanded_robot
from policylab.envs.robots.robot import robot as load_robot
from policylab.errors import BadInput
from policylab.hashing import canonical_json, sha256_hex
from policylab.policies.files import policy_kind
from policylab.rollout.ensure import Planned
from policylab.rollout.store import Store
from policylab.studies.boundary.checkpoint import (
    Checkpoint,
    available_checkpoints,
    check_not_a_path,
    checkpoint_on,
    path_like,
    policy_path,
    policy_record,
    resolve_checkpoint,
    sweep_name,
)
from policylab.studies.boundary.kept_files import kept_policy, kept_robot
from policylab.studies.boundary.older_records import UNRECORDED_DIVERGED_CAUSE, recorded_robot
from policylab.studies.boundary.protocol import protocol
from policylab.studies.boundary.world import Grid, GridWorld, World, grid_axes

STUDY = "boundary"
DIVERGED_CAUSES = ("action", "state")


def world_record(gw: GridWorld, ckpt: Checkpoint, env: str, grid: Grid | None) -> dict:
    """The world part of a grid world's record: its axes (the later ones only where it sets them), seed and
    grid indices, stored as `mu_idx` (the row) and `push_idx` (the column) whatever the axes; a grid of other
    axes than friction x push also names them, so today's grid's records are unchanged. `grid` None: the
    world part of a world off every grid (the probe's), which has always held the original four axes alone."""
    w = gw.world
    axes = {} if grid is None or grid.default_axes else {"row_axis": grid.row_axis, "col_axis": grid.col_axis}
    extra = {} if grid is None else w.extra
    return {
        "env": env,
        "mu": w.mu,
        "push_pct": w.push_pct,
        "push_dir": w.push_dir,
        "push_t0": w.push_t0,
        **extra,
        "seed": w.seed,
        "cache_key": w.key,
        "checkpoint": ckpt.as_dict(),
        "mu_idx": gw.row_idx,
        "push_idx": gw.col_idx,
        "seed_idx": gw.seed_idx,
        "rollout_index": gw.rollout_index,
        **axes,
    }


def search_world_record(w: World, ckpt: Checkpoint, env: str) -> dict:
    """The world part of a record of a world off the grid (a search's): the world's axes (the later ones
    only where it sets them, `World.extra`) and its seed, without grid indices."""
    return {
        "env": env,
        "mu": w.mu,
        "push_pct": w.push_pct,
        "push_dir": w.push_dir,
        "push_t0": w.push_t0,
        **w.extra,
        "seed": w.seed,
        "cache_key": w.key,
        "checkpoint": ckpt.as_dict(),
    }


def planned_sweep(grid: Grid, ckpt: Checkpoint) -> list[Planned]:
    """Every world of `grid` as a planned rollout of `ckpt` (the policy and protocol records are built
    once and shared: only the world differs between rollouts)."""
    policy, proto, env = policy_record(ckpt), protocol(ckpt.robot), ckpt.robot.spec.env
    return [Planned(STUDY, world_record(gw, ckpt, env, grid), policy, proto, detail=gw) for gw in grid.worlds()]


def sweep_keys(grid: Grid, ckpt: Checkpoint) -> list[tuple[str, GridWorld]]:
    return [(p.key, p.detail) for p in planned_sweep(grid, ckpt)]


def meta_name(checkpoint: str) -> str:
    return f"boundary/sweep/{checkpoint}"


def sweep_meta(grid: Grid, ckpt: Checkpoint) -> dict:
    rob = ckpt.robot
    return {
        "checkpoint": ckpt.as_dict(),
        "grid": grid.as_dict(),
        "protocol": protocol(rob),
        "env": rob.spec.env,
        "robot": {"ref": rob.ref, **rob.identity},
        "policy_kind": policy_kind(ckpt.path),
    }


def grid_from_meta(meta: dict) -> Grid:
    """The grid a sweep's meta records."""
    g = meta["grid"]
    return Grid.recorded(g["mus"], g["pushes_pct_bw"], g)


def robot_from_meta(meta: dict, field: str = "store", store: Store | None = None) -> Robot:
    """The robot a stored sweep was made with, carrying the sweep's command vector (`--command`, in the
    recorded protocol; what verify and replay re-simulate with)."""
    rob = _spec_robot(meta, field, store)
    command = meta.get("protocol", {}).get("command")
    return rob if command is None else commanded_robot(rob, command)


def _spec_robot(meta: dict, field: str, store: Store | None) -> Robot:
    """The robot of a sweep's spec where the sweep found it, if still the same file; else the copy `store`
    keeps (`kept_files.py`), so a spec moved or changed after the sweep breaks nothing; else bad input."""
    info = recorded_robot(meta)
    try:
        rob = load_robot(info["ref"])
        why = next(
            (f"{k} differs" for k in ("spec_sha256", "mjcf_sha256") if k in info and rob.identity[k] != info[k]), None
        )
    except BadInput as exc:
        rob, why = None, exc.message
    if why is None:
        return rob
    kept = kept_robot(store, meta["checkpoint"]["name"], info["ref"], field) if store is not None else None
    if kept is not None:
        return kept
    raise BadInput(
        field,
        f"the sweep's robot {info['ref']!r} does not load now ({why}) and the store keeps no copy "
        "of its spec; sweep again",
    )


def stored_name(store: Store, spec: str, field: str = "checkpoint") -> str:
    """The name of the sweep in `store` that `spec` names: a stored name, or the path of the policy file it
    was swept with (its stem, and the same bytes: a file of that name with other bytes is another policy,
    which one line says how to sweep). A bare name that is also a path here is a clash, said in one line."""
    name = sweep_name(spec)
    meta = store.get_meta(meta_name(name))
    if meta is None:
        return name  # the caller says there is no such sweep, listing the stored ones
    if not path_like(spec):
        check_not_a_path(spec, field, f"a sweep stored in {store.root}")
    elif Path(spec).is_file() and sha256_hex(Path(spec).read_bytes()) != meta["checkpoint"]["sha256"]:
        raise BadInput(
            field,
            f"{spec} is not the file the sweep {name!r} in {store.root} was made with (sha256 "
            f"differs): two policy files share the name {name!r}; rename this one to sweep it into the "
            "store, or give the name to mean the stored sweep",
        )
    return name


def resolve_in_store(
    spec: str | None, robot: str | None = None, command: list[float] | None = None, store: Path | None = None
) -> Checkpoint:
    """`checkpoint.resolve_checkpoint` for a command with a store: a name swept into `store` (and no committed
    checkpoint) is that sweep's policy, played from the store's copy of its file on its robot with its
    command unless told otherwise; anything else resolves as a committed name or a path."""
    stored = None if spec is None else stored_sweep(spec, store)
    return (
        resolve_checkpoint(spec, robot, command) if stored is None else stored_checkpoint(spec, stored, robot, command)
    )


def stored_sweep(spec: str, store: Path | None) -> tuple[dict, Path, Robot] | None:
    """The meta, kept policy file and robot of the sweep a bare name `spec` names in `store`, when the store holds
    one (with a copy of its policy file) and `spec` is no committed checkpoint of the same bytes; None
    otherwise. A committed name whose stored sweep played another file, and a stored name that is also a
    path here, are clashes: one line saying what to do."""
    if store is None or path_like(spec) or not (Path(store) / "index.sqlite").is_file():
        return None
    with Store(Path(store).resolve(), readonly=True) as s:
        meta, kept = s.get_meta(meta_name(spec)), kept_policy(s, spec)
        if meta is None or kept is None:
            return None
        rob = robot_from_meta(meta, "checkpoint", s)
    check_not_a_path(spec, "checkpoint", f"a sweep stored in {store}")
    if spec in available_checkpoints():
        if sha256_hex(policy_path(spec).read_bytes()) == meta["checkpoint"]["sha256"]:
            return None  # the committed checkpoint itself
        raise BadInput(
            "checkpoint",
            f"{spec!r} names both a committed checkpoint and the sweep in {store} of another "
            f"file of that name; give that file's path, or sweep the committed {spec} into another --store",
        )
    return meta, kept, rob


def stored_checkpoint(
    name: str, stored: tuple[dict, Path, Robot], robot: str | None, command: list[float] | None
) -> Checkpoint:
    """The checkpoint of a stored sweep played from the store's copy of its policy file, under its name, on
    the sweep's robot with its command unless told otherwise."""
    _, kept, rob = stored
    if robot is not None:
        rob = load_robot(robot) if rob.uncommanded is None else commanded_robot(load_robot(robot), rob.spec.command)
    return replace(checkpoint_on(str(kept), rob if command is None else commanded_robot(rob, command)), name=name)


def stored_robot(store: Store, checkpoint: str, field: str = "out") -> Robot:
    """The robot of the sweep of `checkpoint` in `store` (`robot_from_meta`)."""
    meta = store.get_meta(meta_name(checkpoint))
    if meta is None:
        raise BadInput(field, f"{store.root} holds no sweep of {checkpoint!r}")
    return robot_from_meta(meta, field, store)


def check_resume(store_root: Path, grid: Grid, ckpt: Checkpoint) -> None:
    """A store that already holds a sweep of this checkpoint must hold the same grid and protocol
    (checked before anything is written; the sweep checks again under the store's lock,
    `check_resume_of`, since another run may write the meta in between)."""
    if not (store_root / "index.sqlite").exists():
        return
    with Store(store_root, readonly=True) as store:
        check_resume_of(store, grid, ckpt)


def check_resume_of(store: Store, grid: Grid, ckpt: Checkpoint) -> None:
    """`check_resume` on an open store."""
    store_root = store.root
    previous = store.get_meta(meta_name(ckpt.name))
    if previous is None:
        return
    if previous["checkpoint"] != ckpt.as_dict():
        raise BadInput(
            "checkpoint",
            f"{store_root} holds a sweep of another {ckpt.name} (sha256 differs): two policy "
            f"files share the name {ckpt.name!r}; rename this one, or sweep it into another --store",
        )
    command = previous["protocol"].get("command")
    if command != ckpt.robot.spec.command:
        raise BadInput(
            "command",
            f"{store_root} holds the sweep of {ckpt.name} with command "
            f"{','.join(map(str, command or []))}; a sweep with another command goes to another --store",
        )
    if canonical_json(previous) != canonical_json(sweep_meta(grid, ckpt)):
        g = previous["grid"]
        row, col = grid_axes(g)
        raise BadInput(
            "grid",
            f"{store_root} holds a sweep of {ckpt.name} on another grid ({row.name} {g['mus'][0]}-{g['mus'][-1]} x "
            f"{len(g['mus'])}, {col.name} {g['pushes_pct_bw'][0]}-{g['pushes_pct_bw'][-1]} x "
            f"{len(g['pushes_pct_bw'])}, {g['seeds_per_cell']} seeds per cell) or protocol; use the same grid or "
            "another --store",
        )


def diverged_cause(outcome: dict) -> str | None:
    """Why a diverged rollout diverged (``action`` or ``state``; `older_records` says what a record that
    names no cause means); None for any other outcome."""
    if outcome.get("status") != "diverged":
        return None
    return outcome.get("diverged_cause", UNRECORDED_DIVERGED_CAUSE)


def refuse_diverged(checkpoint: str, rollouts: list[tuple[str, str, str | None]]) -> None:
    """Bad input when a sweep holds diverged rollouts ((cache_key, status, cause) each): a policy that
    gives non-finite actions, or a simulation that blew up, maps nothing; `--keep-diverged` asks to go
    on with them left out of the risk set."""
    bad = [(k, c) for k, s, c in rollouts if s == "diverged"]
    if not bad:
        return
    n_action = sum(c == "action" for _, c in bad)
    raise BadInput(
        "keep_diverged",
        f"the sweep of {checkpoint!r} holds {len(bad)} diverged rollout(s) "
        f"({n_action} from a non-finite action, {len(bad) - n_action} from a non-finite state; first "
        f"{bad[0][0]}); give --keep-diverged to go on without them",
    )
