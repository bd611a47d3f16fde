"""`.rrd` export (rerun-sdk) of replays, rendered from the stored qpos like the clips.

Disposable views, not deterministic bytes; each gets a `<name>.qpos.npz` beside it (docs/boundary.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import mujoco
import numpy as np
import rerun as rr

from policylab.config import claim_out_dir
from policylab.envs.robots.robot import Robot
from policylab.fileio import arrays_to_bytes, atomic_write_bytes, write_json
from policylab.progress import progress_bar
from policylab.result import Result
from policylab.rollout.store import Store
from policylab.studies.boundary.analysis_folder import read_stage, recorded_store, stage_path
from policylab.studies.boundary.clips import analysis_robot, slug
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.requests import RrdRequest

APP_ID = "policylab-boundary"


def _geom_archetype(model: mujoco.MjModel, g: int):
    size = model.geom_size[g]
    color = (np.clip(model.geom_rgba[g], 0, 1) * 255).astype(np.uint8)
    gt = mujoco.mjtGeom(int(model.geom_type[g]))
    if gt == mujoco.mjtGeom.mjGEOM_PLANE:
        return rr.Boxes3D(half_sizes=[[5.0, 5.0, 0.005]], centers=[[0.0, 0.0, -0.005]], colors=[color])
    if gt == mujoco.mjtGeom.mjGEOM_SPHERE:
        return rr.Ellipsoids3D(half_sizes=[[size[0]] * 3], colors=[color])
    if gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        return rr.Ellipsoids3D(half_sizes=[size], colors=[color])
    if gt in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
        return rr.Capsules3D(
            lengths=[2 * size[1]], radii=[size[0]], translations=[[0.0, 0.0, -size[1]]], colors=[color]
        )
    if gt == mujoco.mjtGeom.mjGEOM_BOX:
        return rr.Boxes3D(half_sizes=[size], colors=[color])
    if gt == mujoco.mjtGeom.mjGEOM_MESH:
        mid = model.geom_dataid[g]
        v0, nv = model.mesh_vertadr[mid], model.mesh_vertnum[mid]
        f0, nf = model.mesh_faceadr[mid], model.mesh_facenum[mid]
        return rr.Mesh3D(
            vertex_positions=model.mesh_vert[v0 : v0 + nv],
            triangle_indices=model.mesh_face[f0 : f0 + nf],
            albedo_factor=color,
        )
    return None


def _push_vector(rob: Robot, qpos_at_onset: np.ndarray, push_dir_deg: float, push_pct: float) -> list[float]:
    """Arrow along the push: `push_dir_deg` from the heading at onset, length 0.9*sqrt(pct/100) m."""
    ang = float(rob.heading(qpos_at_onset)) + math.radians(push_dir_deg)
    length = 0.9 * math.sqrt(push_pct / 100.0)
    return [length * math.cos(ang), length * math.sin(ang), 0.0]


def export_rrd(store: Store, rob: Robot, model: mujoco.MjModel, key: str, path: Path) -> dict:
    """Write `path` (.rrd) and `<stem>.qpos.npz` beside it for record `key`; return the file facts."""
    rec = store.require(key)
    return {"key": key, **export_payload(rob, model, rec.data["world"], rec.outcome, store.payload(key), path)}


def export_payload(
    rob: Robot, model: mujoco.MjModel, world: Mapping, outcome: Mapping, payload: Mapping[str, np.ndarray], path: Path
) -> dict:
    """Write `path` (.rrd) and `<stem>.qpos.npz` beside it for one trajectory (a record's world, outcome and
    payload); return the file facts."""
    qpos, time = payload["qpos"], payload["time"]
    t0, t_fail = float(world["push_t0"]), outcome.get("t_fail")
    data = mujoco.MjData(model)
    torso = rob.push_body
    path.parent.mkdir(parents=True, exist_ok=True)

    # One chunk per entity by construction: the batcher never flushes on its own (by time, rows or
    # bytes), only at the end; no wall-clock timelines or start-time property enter the file.
    rec_stream = rr.RecordingStream(
        APP_ID,
        recording_id=str(world["cache_key"]),
        send_properties=False,
        batcher_config=rr.ChunkBatcherConfig.NEVER(),
    )
    rec_stream.set_log_time_enabled(False)
    rec_stream.set_log_tick_enabled(False)
    rec_stream.save(str(path))
    names = []
    for g in range(model.ngeom):
        name = f"world/geoms/{mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or f'geom_{g}'}"
        arche = _geom_archetype(model, g)
        if arche is not None:
            rec_stream.log(name, arche, static=True)
            names.append((g, name))
    pushing = False
    for k in range(len(time)):
        if not np.isfinite(qpos[k]).all():
            break
        rec_stream.set_time("step", sequence=k)
        rec_stream.set_time("sim_time", duration=float(time[k]))
        data.qpos[:] = qpos[k]
        mujoco.mj_kinematics(model, data)
        for g, name in names:
            rec_stream.log(name, rr.Transform3D(translation=data.geom_xpos[g], mat3x3=data.geom_xmat[g].reshape(3, 3)))
        rec_stream.log("tracks/torso_z", rr.Scalars(float(payload["torso_z"][k])))
        rec_stream.log("tracks/uprightness", rr.Scalars(float(payload["uprightness"][k])))
        if k == 0:
            rec_stream.log("events", rr.TextLog(f"world {world.get('cache_key')}", level="INFO"))
        in_push = t0 - 1e-9 <= time[k] < t0 + PUSH_DURATION_S - 1e-9
        if in_push and not pushing:
            rec_stream.log("events", rr.TextLog(f"push start: {world['push_pct']:g} %BW", level="WARN"))
            vec = _push_vector(rob, qpos[k], float(world["push_dir"]), float(world["push_pct"]))
        if in_push:
            rec_stream.log("world/push", rr.Arrows3D(vectors=[vec], origins=[data.xpos[torso]], colors=[[220, 30, 30]]))
        if pushing and not in_push:
            rec_stream.log("events", rr.TextLog("push end", level="INFO"))
            rec_stream.log("world/push", rr.Clear(recursive=False))
        pushing = in_push
        if t_fail is not None and abs(time[k] - t_fail) < 1e-9:
            rec_stream.log("events", rr.TextLog(f"FAILURE ({outcome['status']}) - TTF {t_fail:.2f} s", level="ERROR"))
    rec_stream.flush()
    rec_stream.disconnect()

    qpos_path = path.with_name(path.name[: -len(".rrd")] + ".qpos.npz")
    atomic_write_bytes(
        qpos_path,
        arrays_to_bytes(
            {
                "qpos": qpos,
                "ttf_s": np.array([-1.0 if t_fail is None else float(t_fail)]),
                "outcome": np.array([outcome["status"]]),
            }
        ),
    )
    return {
        "cache_key": world.get("cache_key"),
        "rrd_file": path.name,
        "qpos_file": qpos_path.name,
        "outcome": outcome["status"],
        "rrd_bytes": path.stat().st_size,
    }


def run(req: RrdRequest) -> Result:
    """`policylab boundary rrd`: OUT/rrd/*.rrd (+ qpos.npz) and rrd.json from the replays' stored trajectories."""
    todo = [r for r in read_stage(req.out, "replay")["replays"] if "key" in r]
    rob = analysis_robot(req.out)  # the robot must load before anything is written
    with recorded_store(req.out) as store:
        claim_out_dir(req.out / "rrd", {"format": "rerun-sdk .rrd"})
        model, files = rob.render_model(), []
        with progress_bar("rrd", len(todo), "files") as bar:
            for r in todo:
                files.append(export_rrd(store, rob, model, r["key"], req.out / "rrd" / f"{slug(r['cache_key'])}.rrd"))
                bar.advance()
    path = stage_path(req.out, "rrd")
    write_json(path, [{k: v for k, v in f.items() if k != "rrd_bytes"} for f in files])
    write_json(
        req.out / "rrd" / "rrd-files.json",
        {
            "note": "rerun writes ids into .rrd files: sizes vary run to run",
            "files": {f["rrd_file"]: f["rrd_bytes"] for f in files},
        },
    )
    return Result(path, headlines=(f"rrd: {len(files)} recordings written",))
