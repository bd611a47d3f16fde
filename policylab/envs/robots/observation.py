"""The policy's observation, as a policy trained elsewhere expects it, built step by step for a batch.

Per term ``clip(scale * (raw - offset), -clip, clip)``, elementwise IEEE arithmetic only (no BLAS); why an
observer and not a function of the state: docs/boundary.md, "Module notes"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from policylab import portable_math
from policylab.envs.robots.spec import ObsTerm

# the MjData fields (besides qpos, qvel, time) each term reads
TERM_FIELDS = {
    "sensor": ("sensordata",),
    "site_gravity": ("site_xmat",),
    "site_linvel": ("site_xmat", "site_xpos", "cvel", "subtree_com"),
    "site_angvel": ("site_xmat", "cvel"),
}


@dataclass(frozen=True)
class Term:
    """An observation term compiled against the model: its width and where its data lies."""

    spec: ObsTerm
    width: int
    index: np.ndarray | None = None  # sensordata entries, or the policy's joints' qpos/dof addresses
    site: int = -1
    body: int = -1  # the site's body (its cvel row)
    root: int = -1  # that body's root (where its cvel's linear part is taken: subtree_com[root])
    offset: np.ndarray | None = None  # None: no offset
    home: np.ndarray | None = None  # joint_pos_rel: the home pose of its joints


def _site_local(xmat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(B, 9) row-major site rotations, (B, 3) world vectors -> the vectors in the site frame (R.T v)."""
    return np.stack(
        [xmat[:, j] * v[:, 0] + xmat[:, 3 + j] * v[:, 1] + xmat[:, 6 + j] * v[:, 2] for j in range(3)], axis=1
    )


def raw_value(rob, t: Term, src: Mapping[str, np.ndarray], last: np.ndarray | None, cache: dict) -> np.ndarray:
    """The raw (B, width) value of term `t` for the rows of `src` (`last`: their previous actions; `cache`
    holds what several terms of one frame share)."""
    name = t.spec.term
    qpos, qvel = src["qpos"], src["qvel"]
    if name in ("qpos", "qvel"):  # a slice (a view, as the arrays' layout is part of reproducing training)
        return (qpos if name == "qpos" else qvel)[:, t.spec.start : t.spec.stop]
    if name == "joint_pos_rel":
        return qpos[:, t.index] - t.home
    if name == "joint_vel":
        return qvel[:, t.index]
    if name == "height":
        return qpos[:, rob.root_qpos + 2 : rob.root_qpos + 3]
    if name == "angvel_body":
        return qvel[:, rob.root_dof + 3 : rob.root_dof + 6]
    if name in ("gravity_body", "linvel_body"):
        if "rt" not in cache:
            cache["rt"] = rob.rotation_t(qpos)
        rt = cache["rt"]
        v = (
            np.broadcast_to([0.0, 0.0, -1.0], (len(qpos), 3))
            if name == "gravity_body"
            else qvel[:, rob.root_dof : rob.root_dof + 3]
        )
        return np.einsum("bij,bj->bi", rt, v)
    if name == "phase":
        ang = 2.0 * np.pi * t.spec.hz * src["time"]
        return np.stack([portable_math.sin_array(ang), portable_math.cos_array(ang)], axis=1)
    if name == "sensor":
        return src["sensordata"][:, t.index]
    if name == "last_action":
        return last
    if name == "command":
        return np.broadcast_to(np.asarray(t.spec.value, dtype=float), (len(qpos), t.width))
    xmat = src["site_xmat"][:, t.site]
    if name == "site_gravity":
        return -xmat[:, 6:9]  # R.T @ [0, 0, -1]
    cvel = src["cvel"][:, t.body]
    ang = cvel[:, 0:3]
    if name == "site_angvel":
        return _site_local(xmat, ang)
    d = src["site_xpos"][:, t.site] - src["subtree_com"][:, t.root]  # site_linvel: lin + ang x (p - c)
    lin = cvel[:, 3:6]
    v = np.stack(
        [
            lin[:, 0] + (ang[:, 1] * d[:, 2] - ang[:, 2] * d[:, 1]),
            lin[:, 1] + (ang[:, 2] * d[:, 0] - ang[:, 0] * d[:, 2]),
            lin[:, 2] + (ang[:, 0] * d[:, 1] - ang[:, 1] * d[:, 0]),
        ],
        axis=1,
    )
    return _site_local(xmat, v)


def finish(t: Term, p: np.ndarray) -> np.ndarray:
    """Offset, scale and clip of one term (each only when set, so a plain term keeps its raw bits)."""
    s = t.spec
    if t.offset is not None:
        p = p - t.offset
    if s.scale != 1.0:
        p = p * s.scale
    if s.clip is not None:
        p = np.clip(p, -s.clip, s.clip)
    return p


def frame(rob, src: Mapping[str, np.ndarray], last: np.ndarray | None) -> np.ndarray:
    """One observation frame (B, frame_dim): every term, finished, concatenated."""
    cache: dict = {}
    parts = [finish(t, raw_value(rob, t, src, last, cache)) for t in rob.terms]
    return np.array(parts[0]) if len(parts) == 1 else np.concatenate(parts, axis=1)


class Observer:
    """The observation of `n` worlds of one closed loop: call `observe` once per control step for the
    worlds that step (rows `sel`), then `acted` with the actions they got."""

    def __init__(self, rob, n: int):
        self.rob = rob
        uses_last = any(t.spec.term == "last_action" for t in rob.terms)
        self.last = np.tile(rob.initial_action, (n, 1)) if uses_last else None
        h = rob.spec.history
        self.hist = None if h is None or h.length == 1 else np.zeros((n, h.length, rob.frame_dim))
        self.started = np.zeros(n, dtype=bool)

    def observe(self, src: Mapping[str, np.ndarray], sel=slice(None)) -> np.ndarray:
        f = frame(self.rob, src, None if self.last is None else self.last[sel])
        if self.hist is not None:
            rows = np.arange(len(self.started))[sel]
            h = self.hist[rows]
            h[:, :-1] = h[:, 1:]
            h[:, -1] = f
            fresh = ~self.started[rows]
            h[fresh] = f[fresh, None, :]
            self.hist[rows] = h
            f = (h[:, ::-1] if self.rob.spec.history.newest_first else h).reshape(len(rows), -1)
        self.started[sel] = True
        norm = self.rob.spec.normalization
        if norm is not None:
            f = (f - np.asarray(norm.mean)) / np.asarray(norm.std)
        return f

    def acted(self, action: np.ndarray, sel=slice(None)) -> None:
        if self.last is not None:
            self.last[sel] = action
