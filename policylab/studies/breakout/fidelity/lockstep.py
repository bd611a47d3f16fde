"""`policylab breakout lockstep`: real ALE Breakout and the shadow simulator driven frame by frame by
the same actions, compared on every frame (docs/breakout.md, "Lockstep")."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from policylab.config import claim_out_dir
from policylab.envs.breakout.ale import AleBreakout, Protocol, ram_features
from policylab.envs.breakout.ale_random import sticky_repeats as ale_sticky_repeats
from policylab.envs.breakout.contract import ACTION_NAMES, NOOP, SCREEN_H, F
from policylab.envs.breakout.params import BreakoutParams, ShadowParams, load_preset
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    PADDLE_X_OFFSET,
    RAM_BALL_X,
    RAM_BALL_Y,
    RAM_PADDLE_X,
    RAM_WALL_END,
)
from policylab.envs.breakout.rom.kernel import brick_flags
from policylab.envs.breakout.shadow import ShadowBreakout
from policylab.fileio import atomic_write_bytes, write_json, write_wallclock
from policylab.policies.breakout import breakout_policy_v3, get_policy, load_params
from policylab.progress import progress_bar, say
from policylab.result import Result
from policylab.rollout.seeds import world_seed
from policylab.studies.breakout.episodes.runner import serve_actions
from policylab.studies.breakout.fidelity.lockstep_report import strip_png, write_report
from policylab.studies.breakout.requests import LockstepRequest
from policylab.studies.breakout.search.search_space import random_candidates
from policylab.studies.breakout.search.train import default_pick

QUANTITIES = ("in_play", "ball_x", "ball_y", "paddle_x", "bricks", "score", "lives")
POLICY_KINDS = ("v3", "pick", "random-v3", "random-actions")
SEARCH_POLICY = "breakout_policy_v3"  # every kind but random-actions is a v3-family parameter set
STRIP_BEFORE, STRIP_AFTER = 3, 2  # frames shown before and after a first divergence
_ACTIONS = 1  # the random-actions policy's numpy stream: PCG64([episode seed, _ACTIONS])


def _stream(seed: int, purpose: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64([int(seed), purpose]))


def sticky_repeats(seed: int, frames: int, sticky: float) -> np.ndarray:
    """bool (frames,): True where frame k applies the previous frame's action again.

    The one place the harness's sticky decisions come from: ALE's own stream (`ale_random`: ale-py
    0.12.1's MT19937 seeded with random_seed = `seed`, two draws per frame, repeat when the first is below
    `sticky` as a C float). So with the default protocol, lockstep episode s applies exactly the actions
    that ALE with repeat_action_probability `sticky` would apply on seed s."""
    return ale_sticky_repeats(seed, frames, sticky)


def lockstep_params(params: BreakoutParams) -> BreakoutParams:
    """The preset with one emulator frame per `step` and no sticky actions of its own: the harness
    decides and applies every frame's action itself."""
    return type(params).model_validate({**params.model_dump(), "frameskip": 1, "sticky_prob": 0.0})


@dataclass(frozen=True)
class EpisodePlan:
    """Episode `episode` of a run: its seed, policy kind and (v3-family kinds) parameters."""

    episode: int
    seed: int
    kind: str
    params: dict | None

    def decider(self) -> Callable[[np.ndarray], int]:
        """obs (9,) -> the policy's action for this agent step (before the serve rule)."""
        if self.kind == "random-actions":
            rng = _stream(self.seed, _ACTIONS)
            return lambda obs: int(rng.integers(0, len(ACTION_NAMES)))
        params = self.params
        return lambda obs: int(breakout_policy_v3(obs[None, :].astype(np.float32), params, True)[0])


def plan_episodes(kinds: list[str], episodes: int, seed: int, pick: dict | None) -> list[EpisodePlan]:
    """Episode i on seed S + i plays kind i mod len(kinds)."""
    plans = []
    for i in range(episodes):
        s = world_seed("breakout", 0, i, base=seed)
        kind = kinds[i % len(kinds)]
        params = {"v3": get_policy(SEARCH_POLICY).defaults, "pick": pick, "random-actions": None}.get(kind)
        if kind == "random-v3":
            params = random_candidates(1, seed=s)[0]["params"]
        plans.append(EpisodePlan(i, s, kind, None if params is None else dict(params)))
    return plans


# -- one episode ------------------------------------------------------------------------------------
def ale_objects(ram: np.ndarray) -> dict:
    """ALE's compared quantities from its RAM, decoded as the contract's features are (ball x/y only
    while the ball is in play)."""
    obs = ram_features(ram, None)
    in_play = bool(obs[F["ball_in_play"]])
    return {
        "in_play": in_play,
        "ball_x": int(obs[F["ball_x"]]) if in_play else None,
        "ball_y": int(obs[F["ball_y"]]) if in_play else None,
        "paddle_x": int(obs[F["paddle_x"]]),
        "score": int(obs[F["score"]]),
        "lives": int(obs[F["lives"]]),
    }


def shadow_objects(env: ShadowBreakout) -> dict:
    """The shadow's compared quantities: floats floored to the pixel its renderer draws."""
    bx, by, px, in_play = env.positions(0)
    return {
        "in_play": bool(in_play),
        "ball_x": int(np.floor(bx)) if in_play else None,
        "ball_y": int(np.floor(by)) if in_play else None,
        "paddle_x": int(np.floor(px)),
        "score": int(env.score[0]),
        "lives": int(env.lives[0]),
        "raw": {"ball_x": bx, "ball_y": by, "paddle_x": px},
    }


class Lockstep:
    """One episode of ALE and the shadow in lockstep; `step()` plays and compares one frame.

    `ale` and `shadow` are the two live games (tests perturb `shadow` between frames to check that a
    planted difference is reported where it was planted); `row()` is the episode's result so far."""

    def __init__(
        self,
        plan: EpisodePlan,
        params: ShadowParams,
        *,
        frameskip: int,
        sticky: float,
        max_steps: int,
        keep_strip: bool = False,
    ):
        self.plan = plan
        self.frameskip = frameskip
        self.max_frames = max_steps * frameskip
        self.ale = AleBreakout(Protocol(frameskip=1, sticky=0.0), plan.seed)
        self.ale.reset()
        self.shadow = ShadowBreakout(1, params, seeds=[plan.seed])
        self.shadow.reset()
        self.repeats = sticky_repeats(plan.seed, self.max_frames, sticky)
        self._decide = plan.decider()
        self._obs: np.ndarray | None = None
        self._want = NOOP
        self._applied = NOOP  # ALE's previous action after reset_game is NOOP
        self._served = np.zeros(1, dtype=bool)
        self.frame = 0  # frames played
        self.game_over = False
        self.first: dict | None = None
        self.screen_identical = 0
        self.screen_frames = 0
        self.diff_pixels = 0
        self.rows_differing = np.zeros(SCREEN_H, dtype=np.int64)
        self._wall_key: bytes | None = None
        self._wall: np.ndarray | None = None
        self.keep_strip = keep_strip
        self._recent: deque = deque(maxlen=STRIP_BEFORE + 1)
        self.strip: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._compare()

    @property
    def done(self) -> bool:
        return self.game_over or self.frame >= self.max_frames

    def step(self) -> None:
        """Play one frame on both games with the same action, then compare."""
        ram = self.ale.ram()
        if self.frame % self.frameskip == 0:  # an agent step: the policy reads ALE's features
            self._obs = ram_features(ram, self._obs)
            want = np.array([self._decide(self._obs)], dtype=np.int64)
            in_play = np.array([self._obs[F["ball_in_play"]] > 0])
            self._want = int(serve_actions(want, in_play, self._served, "auto")[0])
        action = self._applied if self.repeats[self.frame] else self._want
        self._applied = action
        _, _, self.game_over = self.ale.step(action)
        self.shadow.step(np.array([action], dtype=np.int64))
        self.frame += 1
        self._compare()

    def _ale_wall(self, ram: np.ndarray) -> np.ndarray:
        key = ram[:RAM_WALL_END].tobytes()
        if key != self._wall_key:  # decoded only when the playfield bytes change
            self._wall_key, self._wall = key, brick_flags(ram[None])[0]
        return self._wall

    def _compare(self) -> None:
        ale_screen, shadow_screen = self.ale.frame(), self.shadow.render(0)
        channels = ale_screen != shadow_screen
        differ = channels[..., 0] | channels[..., 1] | channels[..., 2]  # much faster than .any(axis=2)
        n = int(np.count_nonzero(differ))
        self.screen_frames += 1
        self.screen_identical += int(n == 0)
        if n:
            self.diff_pixels += n
            self.rows_differing += differ.any(axis=1)
        if self.keep_strip:
            if self.first is None:
                self._recent.append((self.frame, ale_screen, shadow_screen))
            elif len(self.strip) < STRIP_BEFORE + 1 + STRIP_AFTER:
                self.strip.append((self.frame, ale_screen, shadow_screen))
        if self.first is None:
            self._objects()

    def _objects(self) -> None:
        ram = self.ale.ram()
        a, s = ale_objects(ram), shadow_objects(self.shadow)
        diffs: dict[str, dict] = {}
        for q in ("in_play", "ball_x", "ball_y", "paddle_x"):
            if q in ("ball_x", "ball_y") and not (a["in_play"] and s["in_play"]):
                continue
            if a[q] != s[q]:
                diffs[q] = {"ale": a[q], "shadow": s[q]}
                if q in s["raw"]:
                    diffs[q]["shadow_unrounded"] = s["raw"][q]
        wall_a, wall_s = self._ale_wall(ram), self.shadow.bricks(0)
        if not np.array_equal(wall_a, wall_s):
            diffs["bricks"] = {"ale": int(wall_a.sum()), "shadow": int(wall_s.sum())}
            if wall_a.shape == wall_s.shape:
                diffs["bricks"]["cells"] = np.argwhere(wall_a != wall_s).tolist()
        for q in ("score", "lives"):
            if a[q] != s[q]:
                diffs[q] = {"ale": a[q], "shadow": s[q]}
        if diffs:
            quantity = next(q for q in QUANTITIES if q in diffs)
            self.first = {
                "frame": self.frame,
                "quantity": quantity,
                **diffs[quantity],
                "differing": {q: diffs[q] for q in QUANTITIES if q in diffs},
                "ale_state": a,
                "shadow_state": {k: v for k, v in s.items() if k != "raw"},
            }
            if self.keep_strip:
                self.strip = list(self._recent)

    def row(self) -> dict:
        a, s = ale_objects(self.ale.ram()), shadow_objects(self.shadow)
        return {
            "episode": self.plan.episode,
            "seed": self.plan.seed,
            "policy": self.plan.kind,
            "params": self.plan.params,
            "frames": self.frame,
            "agent_steps": -(-self.frame // self.frameskip),
            "ale_game_over": self.game_over,
            "identical_to_end": self.first is None,
            "first_divergence": self.first,
            "screen_frames": self.screen_frames,
            "screen_identical_frames": self.screen_identical,
            "screen_diff_pixels_mean": self.diff_pixels / self.screen_frames,
            "ale_score": a["score"],
            "shadow_score": s["score"],
            "ale_lives": a["lives"],
            "shadow_lives": s["lives"],
        }


def run_episode(plan: EpisodePlan, params: ShadowParams, req: LockstepRequest, keep_strip: bool) -> Lockstep:
    """Play one episode to its end (ALE's game over or the horizon); the finished `Lockstep`."""
    lk = Lockstep(
        plan, params, frameskip=req.frameskip, sticky=req.sticky, max_steps=req.max_steps, keep_strip=keep_strip
    )
    while not lk.done:
        lk.step()
    return lk


# -- a set of episodes --------------------------------------------------------------------------------
def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def screen_bands(rows_differing: np.ndarray) -> list[dict]:
    """Runs of consecutive screen rows that differed on some frame: where the renders disagree."""
    bands, start = [], None
    for y, count in enumerate([*rows_differing.tolist(), 0]):
        if count and start is None:
            start = y
        elif not count and start is not None:
            bands.append({"first_row": start, "last_row": y - 1, "frames_max": int(rows_differing[start:y].max())})
            start = None
    return bands


def summarise(rows: list[dict], rows_differing: np.ndarray) -> dict:
    """Fractions identical to the end, divergence classes (first differing quantity) with counts and
    median first-divergence frame, screens identical, and the same per policy kind."""
    n = len(rows)
    diverged = [r["first_divergence"] for r in rows if r["first_divergence"]]
    classes = {}
    for q in QUANTITIES:
        frames = [d["frame"] for d in diverged if d["quantity"] == q]
        if frames:
            classes[q] = {
                "episodes": len(frames),
                "fraction": len(frames) / n,
                "median_first_frame": _median(frames),
                "earliest_first_frame": min(frames),
            }
    by_policy = {}
    for kind in [k for k in POLICY_KINDS if any(r["policy"] == k for r in rows)]:
        mine = [r for r in rows if r["policy"] == kind]
        firsts = [r["first_divergence"]["frame"] for r in mine if r["first_divergence"]]
        by_policy[kind] = {
            "episodes": len(mine),
            "identical_to_end": len(mine) - len(firsts),
            "median_first_divergence_frame": _median(firsts),
            "frames": sum(r["frames"] for r in mine),
        }
    screen_frames = sum(r["screen_frames"] for r in rows)
    screen_same = sum(r["screen_identical_frames"] for r in rows)
    return {
        "episodes": n,
        "frames": sum(r["frames"] for r in rows),
        "identical_to_end": n - len(diverged),
        "identical_to_end_fraction": (n - len(diverged)) / n,
        "median_first_divergence_frame": _median([d["frame"] for d in diverged]),
        "divergence_classes": classes,
        "screen_frames": screen_frames,
        "screen_identical_frames": screen_same,
        "screen_identical_fraction": screen_same / screen_frames,
        "screen_difference_bands": screen_bands(rows_differing),
        "final_score_equal": sum(r["ale_score"] == r["shadow_score"] for r in rows),
        "by_policy": by_policy,
    }


METHOD = {
    "ale": "raw ALEInterface, frame_skip 1, repeat_action_probability 0 (one act = one frame, no sticky of its own)",
    "shadow": "ShadowBreakout with the preset's frameskip set to 1 and sticky_prob to 0 (one step = one frame)",
    "actions": "the policy acts every frameskip frames on ALE's contract features (ram_features), serve rule auto; "
    "the sticky decision is made once per frame and the resulting action applied to both games",
    "sticky_stream": "ALE 0.12.1's own (policylab.envs.breakout.ale_random): MT19937 seeded with the episode seed, two "
    "draws per frame, repeat when the first is below sticky (as a C float)",
    "compared": list(QUANTITIES) + ["screen"],
    "pixel_mapping": f"ALE: ball x = ram[{RAM_BALL_X}] - {-BALL_X_OFFSET}, ball y = ram[{RAM_BALL_Y}] + "
    f"{BALL_Y_OFFSET} (in play iff ram[{RAM_BALL_Y}] != 0), paddle x = ram[{RAM_PADDLE_X}] - {-PADDLE_X_OFFSET}; "
    "shadow: floor of its float ball and paddle positions (the pixel it draws)",
    "first_divergence_rule": "objects are compared from frame 0 (after reset) to the first frame on which any differs "
    "(ball x/y only while both balls are in play); the first differing quantity in the "
    "order of `compared` is the class; object comparison stops there; both games are "
    "played on to ALE's game over or the horizon and screens are compared on every frame",
}


def _pick_for(req: LockstepRequest) -> dict | None:
    if "pick" not in req.policy:
        return None
    if req.pick_params is None:
        return default_pick()
    return {
        "candidate_id": None,
        "params": load_params(SEARCH_POLICY, req.pick_params, "pick_params"),
        "source": f"file {req.pick_params.name}",
    }


def run(req: LockstepRequest):
    """`policylab breakout lockstep`: play the episodes, write lockstep.json, the page and the strips."""
    preset = load_preset(req.preset, "preset")
    params = lockstep_params(preset)
    file_pick = load_params(SEARCH_POLICY, req.pick_params, "pick_params") if req.pick_params else None
    config = {
        "command": "breakout lockstep",
        **req.model_dump(mode="json", exclude={"out", "pick_params"}),
        "pick_params": file_pick,
        "shadow_physics_hash": preset.digest(),
    }
    claim_out_dir(req.out, config)
    started = time.time()
    pick = _pick_for(req)
    plans = plan_episodes(list(req.policy), req.episodes, req.seed, pick and pick["params"])
    rows, strips = [], []
    rows_differing = np.zeros(SCREEN_H, dtype=np.int64)
    with progress_bar("lockstep episodes", len(plans), "episode") as bar:
        for plan in plans:
            lk = run_episode(plan, params, req, keep_strip=len(strips) < req.strips)
            row = lk.row()
            rows.append(row)
            rows_differing += lk.rows_differing
            if lk.first is not None and len(strips) < req.strips:
                name = f"strips/ep{plan.episode:03d}_seed{plan.seed}.png"
                atomic_write_bytes(req.out / name, strip_png(lk.strip, lk.first))
                strips.append(
                    {
                        "episode": plan.episode,
                        "seed": plan.seed,
                        "policy": plan.kind,
                        "file": name,
                        "frames": [f for f, _, _ in lk.strip],
                        "first_divergence": lk.first,
                    }
                )
            bar.advance(1)
    summary = summarise(rows, rows_differing)
    data = {"config": config, "method": METHOD, "pick": pick, "summary": summary, "strips": strips, "episodes": rows}
    write_json(req.out / "lockstep.json", data)
    report = write_report(req.out, data)
    wall = time.time() - started
    write_wallclock(req.out, wall, frames=summary["frames"], frames_per_second=summary["frames"] / wall)
    say(f"lockstep: {req.out / 'lockstep.json'}")
    med = summary["median_first_divergence_frame"]
    classes = ", ".join(f"{q} {c['episodes']}" for q, c in summary["divergence_classes"].items())
    return Result(
        report,
        (
            f"identical to the end: {summary['identical_to_end']}/{summary['episodes']} episodes",
            "median first divergence: " + ("none" if med is None else f"frame {med:g} ({classes})"),
            f"screens identical on {summary['screen_identical_fraction']:.1%} of {summary['screen_frames']:,} frames",
        ),
    )
