"""Clips (mp4) rendered from the stored trajectory of each replay, never from a new simulation.

Pixels are not bit-exact across machines (+-1 level is normal): clips are views, the record is the truth."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.robots.robot import Robot
from policylab.fileio import write_json
from policylab.progress import progress_bar
from policylab.report.video import write_mp4
from policylab.result import Result
from policylab.rollout.store import Store
from policylab.studies.boundary import failure
from policylab.studies.boundary.analysis_folder import read_stage, recorded_store, reduced_config, stage_path
from policylab.studies.boundary.axes import later_axes
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.records import stored_robot
from policylab.studies.boundary.requests import ClipsRequest

AZIMUTHS = (90.0, 135.0, 180.0)
PRE_PUSH_S = 0.5
POST_FAIL_S = 0.5
POST_PUSH_S = 1.5
SLOWMO_HALF_S = 0.3
SLOWMO_FACTOR = 4
ARROW_RGBA = np.array([0.86, 0.12, 0.12, 1.0], dtype=np.float32)
MP4_PRESET = "ultrafast"  # libx264: ~10x faster than its default for clips this small


def clip_frames(time: np.ndarray, push_t0: float, status: str, t_fail: float | None, fps: int = 20) -> list[int]:
    """Indices of the stored states a clip shows, in order: one frame per 1/fps s of record time (the
    nearest stored state; at the Ant's 20 Hz record rate and 20 fps, every state once), and 4x slow
    motion within 0.3 s of a failure (frames every 1/(4 fps) s; states repeat where the record is
    coarser). A failure before the push (walking itself failed) moves the start back so the fall is
    shown. A record that ends at its failure (a robot spec that stops there) ends the clip there."""
    fell = status == "failed" and t_fail is not None
    start = min(push_t0, t_fail if fell else push_t0) - PRE_PUSH_S
    end = t_fail + POST_FAIL_S if fell else push_t0 + PUSH_DURATION_S + POST_PUSH_S
    start, end = max(start, float(time[0])), min(end, float(time[-1]))
    frames, t = [], start
    while t <= end + 1e-9:
        slow = fell and abs(t - t_fail) <= SLOWMO_HALF_S + 1e-9
        frames.append(int(np.argmin(np.abs(time - t))))
        t = round(t + (1.0 / (fps * SLOWMO_FACTOR) if slow else 1.0 / fps), 9)
    last = int(np.argmin(np.abs(time - end)))  # the window's last state (a failure) is always shown
    if not frames or frames[-1] < last:
        frames.append(last)
    return frames


def frames_show(payload: Mapping[str, np.ndarray], shown: Sequence[int], dt: float, rob: Robot | None = None) -> str:
    """What the shown states say under the frozen rule: 'failed' when the rule's first failure
    lies among them, 'diverged' when the state after the last shown one is not finite, else
    'survived'."""
    last = shown[-1]
    rule = failure.classify(
        payload["qpos"][: last + 1],
        payload["qvel"][: last + 1],
        payload["time"][: last + 1],
        dt,
        rule=None if rob is None else rob.thresholds(),
        root_qpos=0 if rob is None else rob.root_qpos,
    )
    if rule["status"] == "failed" and any(abs(payload["time"][i] - rule["t_fail"]) < 1e-9 for i in shown):
        return "failed"
    qpos = payload["qpos"]
    if last + 1 < len(qpos) and not np.isfinite(qpos[last + 1]).all():
        return "diverged"
    return "survived"


class OffscreenRenderer:
    """One EGL context and MuJoCo render context for a model; renders a state from three cameras side by
    side into one buffer (three viewports, one pixel read), with an optional push arrow.

    Speed settings (software rendering on CPU): no multisampling, shadows, reflections or skybox, and
    coarser tessellation of round primitives; `groups` picks the geom groups drawn (the Go1 spec draws
    its collision primitives: its visual meshes have 200k triangles and cost 0.16 s a frame)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int,
        height: int,
        torso: int = 1,
        distance: float = 3.5,
        elevation: float = -20.0,
        groups: Sequence[int] = (0, 1, 2),
    ):
        from mujoco.egl import GLContext

        self.model = model
        self.data = mujoco.MjData(model)
        self.width, self.height, self.torso = width, height, torso
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, len(AZIMUTHS) * width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        model.vis.quality.offsamples = 0
        model.vis.quality.numslices = 10
        model.vis.quality.numstacks = 4
        model.vis.quality.numquads = 1
        self._gl = GLContext(len(AZIMUTHS) * width, height)
        self._gl.make_current()
        self._scene = mujoco.MjvScene(model, maxgeom=2000)
        for flag in (
            mujoco.mjtRndFlag.mjRND_SHADOW,
            mujoco.mjtRndFlag.mjRND_REFLECTION,
            mujoco.mjtRndFlag.mjRND_SKYBOX,
        ):
            self._scene.flags[flag] = 0
        self._opt = mujoco.MjvOption()
        for g in range(len(self._opt.geomgroup)):
            self._opt.geomgroup[g] = 1 if g in groups else 0
        self._pert = mujoco.MjvPerturb()
        self._con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100.value)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._con)
        self._rects = [mujoco.MjrRect(k * width, 0, width, height) for k in range(len(AZIMUTHS))]
        self._full = mujoco.MjrRect(0, 0, len(AZIMUTHS) * width, height)
        self._rgb = np.empty((height, len(AZIMUTHS) * width, 3), dtype=np.uint8)
        self._cams = []
        for az in AZIMUTHS:
            cam = mujoco.MjvCamera()
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE
            cam.distance, cam.elevation, cam.azimuth = distance, elevation, az
            self._cams.append(cam)
        self.arrow_scale = 0.25 * distance
        self.arrow_gap = 0.1 * distance

    def _arrow(self, start: np.ndarray, vec: np.ndarray) -> None:
        scn = self._scene
        if scn.ngeom >= scn.maxgeom:
            return
        g = scn.geoms[scn.ngeom]
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_ARROW, np.zeros(3), np.zeros(3), np.zeros(9), ARROW_RGBA)
        mujoco.mjv_connector(
            g,
            mujoco.mjtGeom.mjGEOM_ARROW,
            0.02 * self.arrow_scale / 0.875 + 0.01,
            np.asarray(start, dtype=float),
            np.asarray(start + vec, dtype=float),
        )
        scn.ngeom += 1

    def render(
        self, qpos: np.ndarray, label: tuple[str, str], push: np.ndarray | None = None, push_pct: float = 0.0
    ) -> np.ndarray:
        """An (H, 3W, 3) frame of the state `qpos`; the label (two text columns) on the first view; a red
        arrow along the world-frame push `push` (x, y) while it acts, pointing at the torso and ending
        0.1 camera distances short of its centre (so it never covers the torso), its length
        0.25 * camera distance * sqrt(pct / 100)."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        torso = self.data.xpos[self.torso]
        arrow = None
        if push is not None and np.any(push):
            d = np.array([push[0], push[1], 0.0]) / float(np.hypot(push[0], push[1]))
            length = self.arrow_scale * np.sqrt(max(push_pct, 1.0) / 100.0)
            end = torso - d * self.arrow_gap
            arrow = (end - d * length, d * length)
        for k, cam in enumerate(self._cams):
            cam.lookat[:] = torso
            mujoco.mjv_updateScene(
                self.model, self.data, self._opt, self._pert, cam, mujoco.mjtCatBit.mjCAT_ALL.value, self._scene
            )
            if arrow is not None:
                self._arrow(*arrow)
            mujoco.mjr_render(self._rects[k], self._scene, self._con)
            if k == 0:
                mujoco.mjr_overlay(
                    mujoco.mjtFont.mjFONT_NORMAL.value,
                    mujoco.mjtGridPos.mjGRID_TOPLEFT.value,
                    self._rects[0],
                    label[0],
                    label[1],
                    self._con,
                )
        mujoco.mjr_readPixels(self._rgb, None, self._full, self._con)
        return np.flipud(self._rgb).copy()

    def close(self) -> None:
        self._con.free()
        self._gl.free()


def slug(cache_key: str) -> str:
    """A file name for a cache key: `v2|mu=0.5000|...` -> `v2_mu-0.5000_...`."""
    return cache_key.replace("|", "_").replace("=", "-")


def render_clip(
    renderer: OffscreenRenderer, store: Store, key: str, path: Path, fps: int, rob: Robot | None = None
) -> dict:
    """Write one clip of record `key` and return its manifest entry."""
    rec = store.require(key)
    payload = store.payload(key)  # sha256-verified against the record
    entry = render_payload(renderer, rec.data["world"], rec.outcome, payload, path, fps, rob)
    return {"key": key, **entry, "payload_sha256": rec.payload_sha256}


def render_payload(
    renderer: OffscreenRenderer,
    world: Mapping,
    outcome: Mapping,
    payload: Mapping[str, np.ndarray],
    path: Path,
    fps: int,
    rob: Robot | None = None,
) -> dict:
    """Write the clip of one trajectory (a record's world, outcome and payload) and return its manifest entry."""
    time, qpos = payload["time"], payload["qpos"]
    finite = np.isfinite(qpos).all(axis=1)
    idx = [
        i
        for i in clip_frames(time, float(world["push_t0"]), outcome["status"], outcome.get("t_fail"), fps)
        if finite[i]
    ]  # a diverged record's clip ends at its last finite state
    shown = sorted(set(idx))
    dt = float(time[1] - time[0]) if len(time) > 1 else 0.05
    dt = rob.control_dt if rob is not None else dt
    seen = frames_show(payload, shown, dt, rob)
    t_text = f" at {outcome['t_fail']:.2f} s" if outcome.get("t_fail") is not None else ""
    before = failure.before_push(outcome["status"], outcome.get("t_fail"), float(world["push_t0"]))
    head = f"{outcome['status'].upper()}{t_text}" + (" (before the push)" if before else "")
    push_text = "not reached" if before else f"{world['push_pct']:g} %BW"
    names = f"{head}\nmu\npush\nseed\nt"
    push = payload["push"]
    frames = []
    for i in idx:
        force = push[i] if i < len(push) else None
        on = force is not None and bool(np.any(force))
        frames.append(
            renderer.render(
                qpos[i],
                (names, f"\n{world['mu']:g}\n{push_text}\n{world['seed']}\n{time[i]:.2f} s"),
                force if on else None,
                float(world["push_pct"]),
            )
        )
    write_mp4(path, np.stack(frames), fps=fps, preset=MP4_PRESET)
    return {
        "cache_key": world.get("cache_key"),
        "file": path.name,
        "outcome": outcome["status"],
        "mu": world["mu"],
        "push_pct_bw": world["push_pct"],
        **{a.field: world[a.field] for a in later_axes() if a.field in world},  # a grid of other axes' worlds
        "seed": world["seed"],
        "before_push": before,
        "t_fail": outcome.get("t_fail"),
        "frames": len(idx),
        "state_indices": idx,
        "window_s": [float(time[shown[0]]), float(time[shown[-1]])],
        "push_frames": sum(1 for i in idx if i < len(push) and np.any(push[i])),
        "frames_show": seen,
        "consistent": seen == outcome["status"],
    }


def renderer_for(rob: Robot | mujoco.MjModel, width: int, height: int) -> tuple[OffscreenRenderer, Robot | None]:
    if isinstance(rob, mujoco.MjModel):  # a bare model: the Ant's camera
        return OffscreenRenderer(rob, width, height), None
    r = rob.spec.render
    return OffscreenRenderer(
        rob.render_model(), width, height, rob.torso, r.camera_distance, r.camera_elevation, r.geom_groups
    ), rob


def render_clips(
    store: Store,
    rob: Robot | mujoco.MjModel,
    replays: Sequence[Mapping],
    out_dir: Path,
    *,
    width: int,
    height: int,
    fps: int,
    on_done: Callable[[], None] | None = None,
) -> list[dict]:
    """Clips for every replay that has a record (a recovery search that found none has no clip), all in
    one batch: one render context for the whole set. `on_done()` follows each clip written (a world selected
    twice is one clip, and one call)."""
    renderer, robot = renderer_for(rob, width, height)
    try:
        entries, done = [], {}
        for r in replays:
            if "key" not in r:
                continue
            if r["key"] not in done:  # a world selected twice (boundary and recovery) is one clip
                done[r["key"]] = render_clip(
                    renderer, store, r["key"], out_dir / f"{slug(r['cache_key'])}.mp4", fps, robot
                )
                if on_done:
                    on_done()
            entries.append({"kind": r["kind"], **done[r["key"]]})
        return entries
    finally:
        renderer.close()


def analysis_robot(out: Path) -> Robot:
    """The robot of an analysis folder's sweep, from its store (which keeps a copy of the spec)."""
    with recorded_store(out) as store:
        return stored_robot(store, reduced_config(out)["checkpoint"])


_finished = None  # in a pool worker: the queue (multiprocessing's) where it reports each clip it wrote


def _report_to(queue) -> None:
    """Pool initializer: the queue a worker puts a token on per finished clip, so the driver's progress
    moves per clip rather than per worker's share."""
    global _finished
    _finished = queue


def _render_part(
    store_root: str,
    rob: Robot,
    part: list[dict],
    out_dir: str,
    width: int,
    height: int,
    fps: int,
    on_done: Callable[[], None] | None = None,
) -> list[dict]:
    """Worker: the clips of `part` (module-level, so a process pool can run it), each reported to `on_done`
    or, in a pool worker, on its queue."""
    if on_done is None and _finished is not None:
        on_done = functools.partial(_finished.put, 1)
    with Store(Path(store_root), readonly=True) as store:
        return render_clips(store, rob, part, Path(out_dir), width=width, height=height, fps=fps, on_done=on_done)


def render_batch(
    store_root: Path,
    rob: Robot,
    todo: Sequence[Mapping],
    out_dir: Path,
    *,
    width: int,
    height: int,
    fps: int,
    workers: int,
    on_done: Callable[[int], None] | None = None,
) -> list[dict]:
    """Every clip of `todo` in one batch: the distinct records dealt round-robin to `workers` processes, each
    with one render context for its share; entries come back in `todo`'s order (a world selected twice is
    rendered once). `on_done(1)` follows each clip as it is written, in whichever process: the count is of
    distinct clips, as many as `distinct_clips(todo)`."""
    import multiprocessing
    import queue as queues

    unique = list({r["key"]: r for r in todo}.values())
    parts = [p for p in (unique[i :: max(1, workers)] for i in range(max(1, workers))) if p]
    done: dict[str, dict] = {}
    if len(parts) <= 1:
        entries = _render_part(
            str(store_root), rob, unique, str(out_dir), width, height, fps, on_done and (lambda: on_done(1))
        )
        done = {e["key"]: e for e in entries}
    else:
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        finished = ctx.Queue()
        with ProcessPoolExecutor(len(parts), mp_context=ctx, initializer=_report_to, initargs=(finished,)) as pool:
            futures = [
                pool.submit(_render_part, str(store_root), rob, p, str(out_dir), width, height, fps) for p in parts
            ]
            counted = 0
            while counted < len(unique):
                try:
                    finished.get(timeout=0.2)
                except queues.Empty:
                    if all(f.done() for f in futures):  # a worker failed (raised below), or its last token is late
                        break
                    continue
                counted += 1
                if on_done:
                    on_done(1)
            for fut in futures:
                done.update((e["key"], e) for e in fut.result())
        if on_done and counted < len(unique):  # tokens still in flight when every share had returned
            on_done(len(unique) - counted)
    return [{**{k: v for k, v in done[r["key"]].items() if k != "kind"}, "kind": r["kind"]} for r in todo]


def run(req: ClipsRequest) -> Result:
    """`policylab boundary clips`: OUT/clips/*.mp4 and clips.json from the replays' stored trajectories."""
    todo = [r for r in read_stage(req.out, "replay")["replays"] if "key" in r]
    rob = analysis_robot(req.out)  # the robot must load before anything is written
    with recorded_store(req.out) as store:
        root = store.root
    claim_out_dir(req.out / "clips", req.config())
    with progress_bar("clips", distinct_clips(todo), "clips") as bar:
        t0 = time.perf_counter()
        entries = render_batch(
            root,
            rob,
            todo,
            req.out / "clips",
            width=req.width,
            height=req.height,
            fps=req.fps,
            workers=req.workers,
            on_done=bar.advance,
        )
        wall = time.perf_counter() - t0
    path = stage_path(req.out, "clips")
    write_json(path, entries)
    unique = distinct_clips(entries)
    write_json(
        req.out / "clips" / "timing.json",
        {
            "clips": unique,
            "wall_s": round(wall, 3),
            "workers": req.workers,
            "s_per_clip": round(wall / unique, 3) if unique else None,
        },
    )
    consistent = len({e["key"] for e in entries if e["consistent"]})
    return Result(
        path,
        headlines=(
            f"clips: {unique} written for {len(entries)} replays (a world replayed twice is "
            f"one clip); frames agree with the record's outcome in {consistent}",
        ),
    )


def distinct_clips(replays: Sequence[Mapping]) -> int:
    """The clips a batch writes: one per distinct record (the progress total and the headline's count)."""
    return len({r["key"] for r in replays})
