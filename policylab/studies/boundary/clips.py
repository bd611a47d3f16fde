"""Clips (mp4) rendered from the stored trajectory of each replay, never from a new simulation.

The original's clips re-simulated their worlds independently, and 10 of 18 clip outcomes then
disagreed with the replays. Here a clip is a view of the record: the frames are the record's
saved qpos (verified against its sha256) put through forward kinematics, and its label is the
record's outcome. Each clip also states what its own frames show under the frozen rule
(`frames_show`: the rule's first failure is among the shown states, or not), so 'clip outcome =
record outcome' is a checked fact (`consistent`), not a hope.

Rendering is MuJoCo's offscreen OpenGL renderer on an EGL context (Mesa's software rasteriser on a
machine without a GPU). The EGL context is created here directly, so rendering does not depend on
MUJOCO_GL having been set before mujoco was first imported. Pixels are not bit-exact across
machines (+-1 level is normal): clips are views, the record is the truth.

Window: push start - 0.5 s (or failure - 0.5 s, if earlier) to failure + 0.5 s (failed), or to
push end + 1.5 s (survived), within the horizon. Frames within 0.3 s of the failure are shown
4 times (4x slow motion at the record's control rate; no interpolated states). Gymnasium's Ant
collides with its whole body, so unlike the original's feet-only Go1 nothing sinks through the
floor and the clip need not freeze at failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

import mujoco
import numpy as np

from policylab.cli.command import Result
from policylab.config import claim_out_dir
from policylab.envs import ant
from policylab.fileio import write_json
from policylab.progress import progress_bar
from policylab.report.video import write_mp4
from policylab.rollout.store import Store
from policylab.studies.boundary.analysis_folder import read_stage, recorded_store, stage_path
from policylab.studies.boundary.constants import PUSH_DURATION_S
from policylab.studies.boundary.requests import ClipsRun
from policylab.studies.boundary import failure

AZIMUTHS = (90.0, 135.0, 180.0)
PRE_PUSH_S = 0.5
POST_FAIL_S = 0.5
POST_PUSH_S = 1.5
SLOWMO_HALF_S = 0.3
SLOWMO_FACTOR = 4


def clip_frames(time: np.ndarray, push_t0: float, status: str, t_fail: float | None) -> list[int]:
    """Indices of the stored states a clip shows, in order (slow-motion frames repeated).

    A failure before the push (walking itself failed) moves the start back so the fall is shown."""
    fell = status == "failed" and t_fail is not None
    start = min(push_t0, t_fail if fell else push_t0) - PRE_PUSH_S
    end = t_fail + POST_FAIL_S if fell else push_t0 + PUSH_DURATION_S + POST_PUSH_S
    idx = [int(i) for i in np.flatnonzero((time >= start - 1e-9) & (time <= end + 1e-9))]
    if fell:
        return [i for i in idx for _ in range(SLOWMO_FACTOR if abs(time[i] - t_fail) <= SLOWMO_HALF_S + 1e-9 else 1)]
    return idx


def frames_show(payload: Mapping[str, np.ndarray], shown: Sequence[int], dt: float) -> str:
    """What the shown states say under the frozen rule: 'failed' when the rule's first failure
    lies among them, 'diverged' when the state after the last shown one is not finite, else
    'survived'."""
    last = shown[-1]
    rule = failure.classify(payload["qpos"][: last + 1], payload["qvel"][: last + 1], payload["time"][: last + 1], dt)
    if rule["status"] == "failed" and any(abs(payload["time"][i] - rule["t_fail"]) < 1e-9 for i in shown):
        return "failed"
    qpos = payload["qpos"]
    if last + 1 < len(qpos) and not np.isfinite(qpos[last + 1]).all():
        return "diverged"
    return "survived"


class OffscreenRenderer:
    """One EGL context and MuJoCo render context for a model; renders qpos states side by side."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int):
        from mujoco.egl import GLContext

        self.model = model
        self.data = mujoco.MjData(model)
        self.width, self.height = width, height
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        self._gl = GLContext(width, height)
        self._gl.make_current()
        self._scene = mujoco.MjvScene(model, maxgeom=2000)
        for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
            self._scene.flags[flag] = 0  # about 3x faster in software rendering; the motion reads the same
        self._opt = mujoco.MjvOption()
        self._pert = mujoco.MjvPerturb()
        self._con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100.value)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._con)
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._cams = []
        for az in AZIMUTHS:
            cam = mujoco.MjvCamera()
            cam.type = mujoco.mjtCamera.mjCAMERA_FREE
            cam.distance, cam.elevation, cam.azimuth = 3.5, -20.0, az
            self._cams.append(cam)

    def render(self, qpos: np.ndarray, label: tuple[str, str]) -> np.ndarray:
        """An (H, 3W, 3) frame of the state `qpos`; the label (two text columns) drawn on the first view."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        torso = self.data.xpos[1]
        views = []
        for k, cam in enumerate(self._cams):
            cam.lookat[:] = torso
            mujoco.mjv_updateScene(self.model, self.data, self._opt, self._pert, cam,
                                   mujoco.mjtCatBit.mjCAT_ALL.value, self._scene)
            mujoco.mjr_render(self._rect, self._scene, self._con)
            if k == 0:
                mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL.value, mujoco.mjtGridPos.mjGRID_TOPLEFT.value,
                                   self._rect, label[0], label[1], self._con)
            rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, self._rect, self._con)
            views.append(np.flipud(rgb))
        return np.concatenate(views, axis=1)

    def close(self) -> None:
        self._con.free()
        self._gl.free()


def slug(cache_key: str) -> str:
    """A file name for a cache key: `v1|mu=0.5000|...` -> `v1_mu-0.5000_...`."""
    return cache_key.replace("|", "_").replace("=", "-")


def render_clip(renderer: OffscreenRenderer, store: Store, key: str, path: Path, fps: int) -> dict:
    """Write one clip of record `key` and return its manifest entry."""
    rec = store.require(key)
    payload = store.payload(key)  # sha256-verified against the record
    world, outcome = rec.data["world"], rec.outcome
    time, qpos = payload["time"], payload["qpos"]
    finite = np.isfinite(qpos).all(axis=1)
    idx = [i for i in clip_frames(time, float(world["push_t0"]), outcome["status"], outcome.get("t_fail"))
           if finite[i]]  # a diverged record's clip ends at its last finite state
    shown = sorted(set(idx))
    seen = frames_show(payload, shown, ant.control_dt())
    t_text = f" at {outcome['t_fail']:.2f} s" if outcome.get("t_fail") is not None else ""
    head = f"{outcome['status'].upper()}{t_text}"
    names = f"{head}\nmu\npush\nseed\nt"
    frames = np.stack([renderer.render(qpos[i], (names, f"\n{world['mu']:g}\n{world['push_pct']:g} %BW\n{world['seed']}"
                                                        f"\n{time[i]:.2f} s")) for i in idx])
    write_mp4(path, frames, fps=fps)
    return {"key": key, "cache_key": world.get("cache_key"), "file": path.name, "outcome": outcome["status"],
            "t_fail": outcome.get("t_fail"), "payload_sha256": rec.payload_sha256, "frames": len(idx),
            "state_indices": idx, "window_s": [float(time[shown[0]]), float(time[shown[-1]])],
            "frames_show": seen, "consistent": seen == outcome["status"]}


def render_clips(store: Store, model: mujoco.MjModel, replays: Sequence[Mapping], out_dir: Path,
                 *, width: int, height: int, fps: int, on_done: Callable[[], None] | None = None) -> list[dict]:
    """Clips for every replay that has a record (a recovery search that found none has no clip)."""
    renderer = OffscreenRenderer(model, width, height)
    try:
        entries, done = [], {}
        for r in replays:
            if "key" not in r:
                continue
            if r["key"] not in done:  # a world selected twice (boundary and recovery) is one clip
                done[r["key"]] = render_clip(renderer, store, r["key"], out_dir / f"{slug(r['cache_key'])}.mp4", fps)
            entries.append({"kind": r["kind"], **done[r["key"]]})
            if on_done:
                on_done()
        return entries
    finally:
        renderer.close()


def render_model() -> mujoco.MjModel:
    """A private copy of the Ant model for rendering (the renderer sizes its buffer on it)."""
    return mujoco.MjModel.from_xml_path(ant.xml_path())


def run(req: ClipsRun) -> Result:
    """`policylab boundary clips`: OUT/clips/*.mp4 and clips.json from the replays' stored trajectories."""
    todo = [r for r in read_stage(req.out, "replay")["replays"] if "key" in r]
    with recorded_store(req.out) as store:
        claim_out_dir(req.out / "clips", req.config())
        with progress_bar("clips", len(todo), "clips") as bar:
            entries = render_clips(store, render_model(), todo, req.out / "clips", width=req.width, height=req.height,
                                   fps=req.fps, on_done=bar.advance)
    path = stage_path(req.out, "clips")
    write_json(path, entries)
    consistent = sum(1 for e in entries if e["consistent"])
    return Result(path, headlines=(f"clips: {len(entries)} written; frames agree with the record's outcome in "
                                   f"{consistent}",))
