"""Clip pixels agree with their records: what a clip *draws* is the record's trajectory and label.

Each clip is rendered once more by the clip pipeline itself (`clips.render_clip`: its frame window,
slow motion, label overlay, mp4 writer), with the project's `OffscreenRenderer` looking through two
fixed orthographic cameras instead of the tracking ones, on a copy of the Ant model in which the
torso sphere is drawn flat magenta and a small flat cyan "mast" sphere is fixed 0.5 m above the
torso's centre along its up axis (a visual-only geom: no contact, and clips only run forward
kinematics, so nothing else changes); the legs are not drawn. The mp4 is decoded and, in every
frame, the torso and the mast are found by their colours:

- the torso's centre in each view must be where the record's qpos at that frame's state puts it
  (orthographic: pixel = centre + (p - camera) . axis / scale, no projection code of the project);
- the torso height and the uprightness (mast height above the torso / 0.5 m) read from the pixels
  must match the record's torso_z and uprightness at that state;
- the label must be what the pixels show under the frozen rule (torso < 0.30 m or uprightness <
  0.5): a clip labelled failed at t shows a failed state at t and upright states before it; a clip
  labelled survived never shows a failed state.

Then three deliberately mislabelled clips are caught: a fall labelled 'survived', a failure time
moved to the push onset, and two survivors' clips swapped.

Tolerances (1 px = 1.25 cm: 300 px for the 3.75 m field of view). The check model moves the legs to
geom group 3, which the renderer does not draw, so nothing but the small mast can cover the torso's
disc (20 px in radius); measured on these clips, the torso centre is within 0.5 px of the record's
and the heights within 0.03 (uprightness) and 0.003 m. TOL_PX 1.5 px leaves room for the mp4's 4:2:0
chroma (colour edges blur by about one px) and for the mast covering part of the disc when the
robot's up axis points at a camera; TOL_Z 0.02 m (1.6 px); TOL_UP 0.06 (two centroids within
about a px each, over a 0.5 m mast: 2 * 1.25 cm / 0.5 m = 0.05). A label is judged with the same
tolerances around the rule's thresholds.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from policylab.envs.robots.robot import robot
from policylab.report.video import read_mp4
from policylab.rollout.store import Store, rollout_key
from policylab.studies.boundary import clips
from tests.support.boundary_fixtures import make_sweep

W, H, FOVY = 400, 300, 3.75  # one view, px; FOVY = the orthographic view's height in m (1.25 cm per px)
SCALE = FOVY / H  # m per px
MAST = 0.5  # m above the torso centre, along the torso's z axis
# name -> (position, image right axis, image up axis); orthographic, so only the axes matter
# The views look 1.6 m up so that the label the clip draws over the first view's top-left corner
# (about 120 px tall) covers only heights above 1.97 m; the floor is at row 278.
CAMERAS = {
    "front": (np.array([10.0, 1.5, 1.6]), np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])),
    "side": (np.array([0.0, -10.0, 1.6]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])),
}
TOL_PX, TOL_Z, TOL_UP = 1.5, 0.02, 0.06
Z_FAIL, UP_FAIL = 0.30, 0.50  # the frozen failure rule (docs/boundary.md, rule_version 1)
MIN_TORSO_PX, MIN_MAST_PX = 300, 30  # a fully visible disc is pi * 20^2 = 1257 px, the mast's pi * 5.6^2 = 98


def check_model() -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(str(robot("ant").mjcf))
    for name, (pos, right, up) in CAMERAS.items():
        spec.worldbody.add_camera(
            name=name, pos=pos.tolist(), xyaxes=[*right, *up], fovy=FOVY, proj=mujoco.mjtProjection.mjPROJ_ORTHOGRAPHIC
        )
    flat = dict(emission=1.0, specular=0.0, shininess=0.0)  # the same colour whatever the light
    spec.add_material(name="check_torso", rgba=[1, 0, 1, 1], **flat)
    spec.add_material(name="check_mast", rgba=[0, 1, 1, 1], **flat)
    torso = spec.body("torso")
    (geom,) = [g for g in torso.geoms if g.name == "torso_geom"]
    geom.material, geom.rgba = "check_torso", [1, 0, 1, 1]
    torso.add_geom(
        name="check_mast",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        size=[0.07, 0, 0],
        pos=[0, 0, MAST],
        contype=0,
        conaffinity=0,
        material="check_mast",
        rgba=[0, 1, 1, 1],
    )
    for g in spec.geoms:  # legs to group 3, which the renderer's default options do not draw: a leg in
        if g.name not in ("floor", "torso_geom", "check_mast"):  # front of the torso would shift its centroid
            g.group = 3
    model = spec.compile()
    plain = robot("ant").render_model()
    assert (model.nq, model.nbody) == (plain.nq, plain.nbody)  # same state layout as the clips' model
    return model


def fixed_renderer(model: mujoco.MjModel) -> clips.OffscreenRenderer:
    """The project's renderer, its tracking cameras swapped for the fixed ones (a fixed camera's
    pose comes from mj_camlight, which the renderer's mj_kinematics does not run: set it once)."""
    r = clips.OffscreenRenderer(model, W, H)
    r._cams = []
    for name in CAMERAS:
        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
        r._cams.append(cam)
    mujoco.mj_kinematics(model, r.data)
    mujoco.mj_camlight(model, r.data)
    return r


def expected_px(name: str, p: np.ndarray) -> tuple[float, float]:
    pos, right, up = CAMERAS[name]
    return W / 2 + float((p - pos) @ right) / SCALE, H / 2 - float((p - pos) @ up) / SCALE


def blob(view: np.ndarray, colour: str) -> tuple[int, float, float]:
    """(pixel count, centroid x, centroid y) of the magenta or cyan pixels, in pixel-centre coordinates."""
    r, g, b = (view[..., i].astype(int) for i in range(3))
    mask = (r > 150) & (b > 150) & (g < 110) if colour == "magenta" else (r < 110) & (g > 150) & (b > 150)
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        return 0, math.nan, math.nan
    return int(rows.size), float(cols.mean() + 0.5), float(rows.mean() + 0.5)


def measure(frame: np.ndarray) -> dict:
    """Torso centre per view, torso height and uprightness, as the pixels of one clip frame show them."""
    out = {"views": {}}
    best = None
    for k, name in enumerate(CAMERAS):
        view = frame[:, k * W : (k + 1) * W]
        n, u, v = blob(view, "magenta")
        m, mu_, mv = blob(view, "cyan")
        out["views"][name] = (n, u, v)
        if n >= MIN_TORSO_PX and m >= MIN_MAST_PX and (best is None or m > best[0]):
            best = (m, v, mv)
    n, _, v = max(out["views"].values())  # the view that sees most of the torso
    pos = CAMERAS["front"][0]
    out["torso_z"] = pos[2] + (H / 2 - v) * SCALE if n >= MIN_TORSO_PX else None
    out["uprightness"] = (best[1] - best[2]) * SCALE / MAST if best else None
    return out


def looks_failed(m: dict) -> bool:
    return (m["torso_z"] is not None and m["torso_z"] < Z_FAIL + TOL_Z) or (
        m["uprightness"] is not None and m["uprightness"] < UP_FAIL + TOL_UP
    )


def looks_upright(m: dict) -> bool:
    return (
        m["torso_z"] is not None
        and m["uprightness"] is not None
        and m["torso_z"] > Z_FAIL - TOL_Z
        and m["uprightness"] > UP_FAIL - TOL_UP
    )


def disagreements(entry: dict, frames: np.ndarray, payload: dict) -> list[str]:
    """Everything the clip's pixels say that its record (qpos, torso_z, uprightness) or its label
    (outcome, t_fail) does not."""
    problems = []
    idx = entry["state_indices"]
    if not (len(frames) == entry["frames"] == len(idx)):
        return [f"{len(frames)} frames decoded, manifest says {entry['frames']}, {len(idx)} states"]
    measured = [measure(f) for f in frames]
    for j, (i, m) in enumerate(zip(idx, measured)):
        p = payload["qpos"][i][:3]
        for name, (n, u, v) in m["views"].items():
            eu, ev = expected_px(name, p)
            if n < MIN_TORSO_PX or math.hypot(u - eu, v - ev) > TOL_PX:
                problems.append(
                    f"frame {j} ({name}): torso drawn at ({u:.1f}, {v:.1f}) px from {n} px, "
                    f"the record's qpos puts it at ({eu:.1f}, {ev:.1f})"
                )
        if m["torso_z"] is None or abs(m["torso_z"] - payload["torso_z"][i]) > TOL_Z:
            problems.append(
                f"frame {j}: torso height {m['torso_z']} in the pixels, {payload['torso_z'][i]:.3f} recorded"
            )
        if m["uprightness"] is not None and abs(m["uprightness"] - payload["uprightness"][i]) > TOL_UP:
            problems.append(
                f"frame {j}: uprightness {m['uprightness']:.2f} in the pixels, {payload['uprightness'][i]:.2f} recorded"
            )
    times = payload["time"]
    if entry["outcome"] == "failed":
        at = [j for j, i in enumerate(idx) if abs(times[i] - entry["t_fail"]) < 1e-9]
        if not at:
            problems.append(f"no frame shows the labelled failure time {entry['t_fail']}")
        elif not looks_failed(measured[at[0]]):
            problems.append(
                f"labelled failed at {entry['t_fail']} s, but that frame shows an upright robot "
                f"({measured[at[0]]['torso_z']:.2f} m, uprightness {measured[at[0]]['uprightness']:.2f})"
            )
        early = [j for j, i in enumerate(idx) if times[i] < entry["t_fail"] - 1e-9 and not looks_upright(measured[j])]
        if early:
            problems.append(f"frames {early} show a fall before the labelled failure at {entry['t_fail']} s")
    else:
        fallen = [j for j, m in enumerate(measured) if not looks_upright(m)]
        if fallen:
            problems.append(f"labelled {entry['outcome']}, but frames {fallen[:5]}... show a fall")
    return problems


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """A real sweep (mu 1.0, pushes 50 and 175 %BW, 2 seeds: two survivors, two falls) and one clip per
    record, plus three mislabelled records of the same trajectories, all through clips.render_clip."""
    base = tmp_path_factory.mktemp("pixels")
    store = Store(make_sweep(base, "pd_soft", (1.0, 1.0), 1, (50, 175), 2, 2))
    recs = sorted(store.records("boundary"), key=lambda r: r.data["world"]["rollout_index"])
    by_status = {s: [r for r in recs if r.outcome["status"] == s] for s in ("survived", "failed")}
    assert len(by_status["survived"]) == 2 and len(by_status["failed"]) == 2, [r.outcome["status"] for r in recs]

    def mislabelled(rec, tag: str, **outcome) -> str:
        world = {**rec.data["world"], "mislabelled": tag}
        key = rollout_key(world, rec.data["policy"], rec.data["protocol"])
        store.put(
            key,
            study="boundary",
            world=world,
            policy=rec.data["policy"],
            protocol=rec.data["protocol"],
            outcome={**rec.outcome, **outcome},
            payload=store.payload(rec.key),
        )
        return key

    fell = by_status["failed"][0]
    keys = {f"honest-{i}": r.key for i, r in enumerate(recs)}
    keys["fall labelled survived"] = mislabelled(fell, "survived", status="survived", t_fail=None, fail_reason=None)
    keys["failure moved to the push onset"] = mislabelled(fell, "early", t_fail=float(fell.data["world"]["push_t0"]))
    renderer = fixed_renderer(check_model())
    try:
        entries = {
            name: clips.render_clip(renderer, store, key, base / "clips" / f"{name}.mp4", fps=20)
            for name, key in keys.items()
        }
    finally:
        renderer.close()
    yield store, entries, base / "clips", by_status
    store.close()


def _check(store, entries, folder, name, file_of=None):
    entry = entries[name]
    frames = read_mp4(folder / (file_of or entry["file"]))
    return disagreements(entry, frames, store.payload(entry["key"]))


def test_every_clip_draws_its_record_and_its_label(rendered):
    store, entries, folder, _ = rendered
    honest = [n for n in entries if n.startswith("honest")]
    assert len(honest) == 4
    for name in honest:
        assert _check(store, entries, folder, name) == [], name
    # the fixture really shows falls: a failed clip ends with the robot on its back, in the pixels
    fell = next(n for n in honest if entries[n]["outcome"] == "failed")
    assert measure(read_mp4(folder / entries[fell]["file"])[-1])["uprightness"] < 0


def test_a_fall_labelled_survived_is_caught(rendered):
    store, entries, folder, _ = rendered
    problems = _check(store, entries, folder, "fall labelled survived")
    assert any("labelled survived, but frames" in p for p in problems), problems


def test_a_failure_time_moved_to_the_push_onset_is_caught(rendered):
    store, entries, folder, _ = rendered
    problems = _check(store, entries, folder, "failure moved to the push onset")
    assert any("shows an upright robot" in p for p in problems), problems


def test_swapped_clips_are_caught(rendered):
    store, entries, folder, by_status = rendered
    survivors = [n for n in entries if n.startswith("honest") and entries[n]["outcome"] == "survived"]
    a, b = survivors
    assert entries[a]["frames"] == entries[b]["frames"]  # same window: only the pixels can tell them apart
    problems = _check(store, entries, folder, a, file_of=entries[b]["file"])
    assert any("torso drawn at" in p for p in problems), problems
