"""What the committed ALE traces (`trace.py`) pin down, measured rather than tuned.

The findings (paddle, ball, bricks, serve): docs/breakout.md, "What was identified"."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from policylab.envs.breakout.contract import LEFT, RIGHT
from policylab.envs.breakout.params import ShadowParams
from policylab.envs.breakout.ram import (
    BALL_X_OFFSET,
    BALL_Y_OFFSET,
    PADDLE_X_OFFSET,
    RAM_BALL_ANGLE,
    RAM_BALL_CLASS,
    RAM_BALL_X,
    RAM_BALL_X_FRAC,
    RAM_BALL_Y,
    RAM_FRAME_COUNTER,
    RAM_PADDLE_HALF_W,
    RAM_PADDLE_READING,
    RAM_PADDLE_X,
)
from policylab.envs.breakout.rom.kernel import brick_flags
from policylab.studies.breakout.fidelity import trace
from policylab.studies.breakout.fidelity.calibration.metrics import replay_agreement

# ALE's paddle constants (ale_state.hpp): the controller's travel in PADDLE_DELTA steps
PADDLE_MIN, PADDLE_MAX, PADDLE_DELTA = 27_450, 790_196, 23_000
U_START = ((PADDLE_MAX - PADDLE_MIN) // 2) / PADDLE_DELTA  # PADDLE_DEFAULT_VALUE above PADDLE_MIN
U_MAX = (PADDLE_MAX - PADDLE_MIN) / PADDLE_DELTA
CONTROL_RES = 8  # table entries per step: separates the three lattices u takes (k, k + .58, max - k)
TARGET_OFFSET = 188  # paddle target x = 188 - ram[70] (measured: the chase rule holds on every frame)
ALE_WRAPPER_SMALL_WIDTH = (
    12.0  # 2 * ram[108] after the top wall, measured by tests/envs/breakout/test_ale.py (README-breakout)
)
TOP_SPEED_CLASS = 16  # ram[107] & 63 after a brick of the fast rows
SERVE_PHASES = 4  # the game reads its frame counter & 3 when FIRE serves
# ALE's wall on screen: 6-line brick bands from y 57, 8 px bricks from x 8 (`rom.kernel.brick_flags` decodes it)
BRICK_TOP, BRICK_H, BRICK_LEFT, BRICK_W = 57, 6, 8, 8
PROBE_DY = 2  # a rising ball's brick is the one under line y - 2 (`identify_brick_probe`)
# ball extents (width, dx, dy) tried against the bricks by `identify_brick_contact`, in order of preference
BRICK_CONTACTS = ((2.0, 0.0, 0.0), (2.0, 0.0, 1.0), (1.0, 0.0, 0.0), (1.0, 0.0, 1.0), (1.0, 1.0, 1.0))


def trace_evidence(suite: dict) -> dict:
    """Every identification that needs the traces alone (the fit's first stage reads it)."""
    events = bounce_events(suite)
    return {
        "paddle": identify_paddle(suite),
        "shrink": identify_shrink(suite),
        "ball": identify_ball(suite),
        "zone_vx": identify_zone_vx(events),
        "speeds": identify_speeds(suite),
        "fast_rows": identify_fast_rows(suite),
        "serve": identify_serve(suite),
        "brick_side_bounce": identify_brick_side_bounce(suite),
        "bounce_events": len(events),
    }


def brick_evidence(suite: dict, params: ShadowParams) -> dict:
    """The brick collision: the contact extent (replayed with `params`, which must have the ALE ball), the
    probe line and the rearm rule."""
    return {
        "brick_contact": identify_brick_contact(params, suite),
        "brick_probe": identify_brick_probe(suite),
        "brick_rearm": identify_brick_rearm(suite),
    }


# -- paddle -------------------------------------------------------------------------------------------------
def control_values(actions: np.ndarray) -> np.ndarray:
    """Controller value u after each frame's action (RIGHT lowers the resistance, LEFT raises it)."""
    u = np.empty(actions.size, dtype=np.float64)
    cur = U_START
    for t, a in enumerate(actions):
        cur = min(max(cur - 1.0 if a == RIGHT else cur + 1.0 if a == LEFT else cur, 0.0), U_MAX)
        u[t] = cur
    return u


def identify_paddle(suite: dict) -> dict:
    """The controller-to-target table and the chase rule, with how exactly each holds on the traces."""
    votes: dict[int, Counter] = defaultdict(Counter)
    chase_ok = chase_n = 0
    for _, (_, arr) in sorted(suite.items()):
        ram = arr["ram"].astype(np.int64)
        target = TARGET_OFFSET - ram[:, RAM_PADDLE_READING]
        idx = np.floor(control_values(arr["action"]) * CONTROL_RES + 1e-6).astype(np.int64)
        for k, t in zip(idx, target[1:]):
            votes[int(k)][int(t)] += 1
        px = ram[:, RAM_PADDLE_X] + PADDLE_X_OFFSET
        pred = np.clip(px[:-1] + np.floor(0.5 * (target[:-1] - px[:-1])), 8, 144)
        chase_ok += int((pred == px[1:]).sum())
        chase_n += int(px.size - 1)
    n = int(math.floor(U_MAX * CONTROL_RES)) + 1
    seen = sorted(votes)
    values = {k: min(votes[k].items(), key=lambda kv: (-kv[1], kv[0]))[0] for k in seen}
    agree = sum(votes[k][values[k]] for k in seen) / max(sum(sum(v.values()) for v in votes.values()), 1)
    table = np.interp(np.arange(n), seen, [values[k] for k in seen])
    return {
        "table": [float(round(v)) for v in table],
        "start": U_START,
        "max": U_MAX,
        "res": float(CONTROL_RES),
        "chase": 0.5,
        "evidence": {
            "table_entries": n,
            "entries_seen": len(seen),
            "frames": chase_n,
            "target_reading_consistency": agree,
            "chase_rule_exact_fraction": chase_ok / max(chase_n, 1),
        },
    }


def identify_shrink(suite: dict) -> dict:
    """Paddle widths (2 * ram[108]) seen in the traces; the small width falls back to the ALE wrapper's
    measurement when no trace reached the top wall."""
    widths = Counter()
    for _, (_, arr) in sorted(suite.items()):
        widths.update(int(w) for w in 2 * arr["ram"][:, RAM_PADDLE_HALF_W].astype(np.int64))
    seen_small = min(widths) < max(widths)
    return {
        "widths_seen": {str(k): v for k, v in sorted(widths.items())},
        "small": float(min(widths)) if seen_small else ALE_WRAPPER_SMALL_WIDTH,
        "source": "traces" if seen_small else "ALE wrapper RAM measurement (no trace reached the top wall)",
    }


# -- ball -----------------------------------------------------------------------------------------------------
def bounce_events(suite: dict) -> list[dict]:
    """Every paddle bounce: hit offset (ball x - paddle x the frame before), incoming and outgoing
    velocity (px/frame, outgoing = mean over the next 4 frames), paddle width, per-ball hit index."""
    out = []
    for name, (_, arr) in sorted(suite.items()):
        s = trace.signals(arr["ram"])
        x, y, ip, px, pw = s["ball_x"], s["ball_y"], s["in_play"], s["paddle_x"], s["paddle_w"]
        hits = 0
        for t in range(2, x.size - 5):
            if not ip[t]:
                hits = 0
                continue
            if ip[t - 2] and ip[t + 4] and y[t] - y[t - 1] < 0 < y[t - 1] - y[t - 2] and y[t] > 170:
                hits += 1
                out.append(
                    {
                        "trace": name,
                        "frame": t,
                        "offset": int(x[t - 1] - px[t - 1]),
                        "width": int(pw[t - 1]),
                        "in_vx": float(x[t - 1] - x[t - 2]),
                        "in_vy": float(y[t - 1] - y[t - 2]),
                        "out_vx": float(x[t + 4] - x[t]) / 4,
                        "out_vy": float(y[t + 4] - y[t]) / 4,
                        "hit": hits,
                    }
                )
    return out


def identify_zone_vx(events: list[dict], zones: int = 8) -> dict:
    """Mean outgoing vx per equal zone of the 16 px hit window (events on the full-width paddle)."""
    by_zone: dict[int, list[float]] = defaultdict(list)
    for e in events:
        if e["width"] != 16:
            continue
        u = (e["offset"] + 1) / 16.0
        by_zone[min(max(int(math.floor(u * zones)), 0), zones - 1)].append(e["out_vx"])
    table, counts = [], []
    for z in range(zones):
        vals = by_zone.get(z, [])
        table.append(float(np.round(np.mean(vals) * 4) / 4) if vals else 0.0)
        counts.append(len(vals))
    return {"zone_vx": table, "events_per_zone": counts}


def identify_speeds(suite: dict) -> dict:
    """Share of in-play frames at each |vy| (px/frame) level, from 8-frame windows of the policy traces."""
    levels = Counter()
    for _, (spec, arr) in sorted(suite.items()):
        if not trace.sampled_policy_trace(spec):
            continue
        s = trace.signals(arr["ram"])
        y, ip = s["ball_y"], s["in_play"]
        for t in range(8, y.size, 8):
            if ip[t - 8 : t + 1].all():
                v = abs(y[t] - y[t - 8]) / 8
                levels[round(v * 8) / 8] += 1
    total = sum(levels.values()) or 1
    return {"vy_level_share": {f"{k:g}": v / total for k, v in sorted(levels.items())}}


def _paddle_hits(suite: dict):
    """Every paddle hit as (drawn frame RAM, hit frame RAM): vy turns from down to up near the paddle."""
    for _, (_, arr) in sorted(suite.items()):
        ram = arr["ram"].astype(np.int64)
        _, vy = trace.ball_velocity(ram)
        for t in range(1, ram.shape[0]):
            a, b = ram[t - 1], ram[t]
            if a[RAM_BALL_Y] and b[RAM_BALL_Y] and vy[t - 1] > 0 > vy[t] and b[RAM_BALL_Y] + BALL_Y_OFFSET > 150:
                yield a, b


def identify_ball(suite: dict) -> dict:
    """ALE's ball logic from the RAM velocity bytes: the speed after the k-th paddle hit of a ball for each
    angle (ram[109]: 0 shallow, 2 steep), the top speed (class 16), the paddle section (direction and angle)
    by hit offset on the drawn frame, the centre nudge, and the loss line."""
    speeds: dict[tuple[int, int], Counter] = defaultdict(Counter)
    sections: dict[int, Counter] = defaultdict(Counter)
    jumps: dict[int, Counter] = defaultdict(Counter)
    for a, b in _paddle_hits(suite):
        cls, ang = int(b[RAM_BALL_CLASS] & 63), int(b[RAM_BALL_ANGLE])
        vx, vy = trace.ball_velocity(b)
        speeds[(cls, ang)][(abs(float(vx)), abs(float(vy)))] += 1
        if 2 * a[RAM_PADDLE_HALF_W] != 16:
            continue
        off = int(a[RAM_BALL_X] + BALL_X_OFFSET - (a[RAM_PADDLE_X] + PADDLE_X_OFFSET))
        x_a = a[RAM_BALL_X] + a[RAM_BALL_X_FRAC] / 256.0
        x_b = b[RAM_BALL_X] + b[RAM_BALL_X_FRAC] / 256.0
        jump = (x_b - x_a) - float(vx)
        vx_in, _ = trace.ball_velocity(a)
        jumps[off][float(jump * np.sign(vx_in)) + 0.0] += 1  # + = along the incoming direction
        if 1 <= cls <= 7:  # angle matters there (same speeds for both angles from 8 hits on)
            sections[off][int(np.sign(vx)) * (2 if ang == 0 else 1)] += 1
    table = []
    for k in range(1, 13):
        row = []
        for ang in (0, 2):
            seen = speeds.get((k, ang)) or speeds.get((k, 2 - ang))
            row += (
                list(seen.most_common(1)[0][0])
                if seen
                else (table[-1][len(row) : len(row) + 2] if table else [1.0, 1.0])
            )
        table.append([float(v) for v in row])
    top = speeds.get((16, 0), Counter()) + speeds.get((16, 2), Counter())
    offs = sorted(sections)
    sec = {o: sections[o].most_common(1)[0][0] for o in offs}
    lo, hi = min(offs), max(offs)
    filled = [sec.get(o, sec[min(offs, key=lambda q: (abs(q - o), q))]) for o in range(lo, hi + 1)]
    nudges = {o: c.most_common(1)[0][0] for o, c in jumps.items() if c.most_common(1)[0][0] != 0.0}
    nudge_off = max(nudges, key=lambda o: (sum(v for j, v in jumps[o].items() if j != 0.0), -o)) if nudges else -99
    lost = Counter()
    for _, (_, arr) in sorted(suite.items()):
        y = arr["ram"][:, RAM_BALL_Y].astype(np.int64)
        gone = np.flatnonzero((y[:-1] != 0) & (y[1:] == 0))
        lost.update(int(v) + BALL_Y_OFFSET for v in y[gone])
    return {
        "hit_speed_table": table,
        "top_speed": list(top.most_common(1)[0][0]) if top else [2.0, 3.375],
        "bounce_sections": filled,
        "bounce_offset_min": lo,
        "bounce_nudge_offset": int(nudge_off),
        "bounce_nudge_px": float(-nudges.get(nudge_off, 0.0)),
        "lost_y": float(min(lost)) if lost else 217.0,
        "evidence": {
            "speeds_by_class_angle": {
                f"{k}/{a}": {f"{vx:g},{vy:g}": n for (vx, vy), n in c.items()} for (k, a), c in sorted(speeds.items())
            },
            "section_votes": {str(o): dict(sections[o]) for o in offs},
            "nudge_votes": {str(o): {f"{j:g}": n for j, n in sorted(jumps[o].items())} for o in sorted(jumps)},
            "last_y_before_loss": {str(k): v for k, v in sorted(lost.items())},
        },
    }


def identify_serve(suite: dict) -> dict:
    """Where a serve puts the ball: for every serve of the traces, the game's frame counter ram[90] (checked
    to equal the frame index mod 256 while the game runs) & 3 on the frame before the ball appears, against
    the served (x, vx). `serve_choices` lists the (x, vx) of phases 0..3; `unanimous` says each phase always
    gave the same serve. None when a phase was never seen."""
    votes: dict[int, Counter] = defaultdict(Counter)
    same = frames = 0
    for _, (_, arr) in sorted(suite.items()):
        ram = arr["ram"].astype(np.int64)
        s = trace.signals(arr["ram"])
        vx, _ = trace.ball_velocity(arr["ram"])
        running = ram.shape[0] - 1  # the game-over frame zeroes the counter
        same += int((ram[:running, RAM_FRAME_COUNTER] == np.arange(running) % 256).sum())
        frames += running
        for f in np.flatnonzero(s["in_play"][1:] & ~s["in_play"][:-1]) + 1:
            phase = int(ram[f - 1, RAM_FRAME_COUNTER]) % SERVE_PHASES
            votes[phase][(float(s["ball_x"][f]), float(vx[f]))] += 1
    seen = all(votes.get(k) for k in range(SERVE_PHASES))
    return {
        "serve_choices": [list(votes[k].most_common(1)[0][0]) for k in range(SERVE_PHASES)] if seen else None,
        "unanimous": seen and all(len(votes[k]) == 1 for k in range(SERVE_PHASES)),
        "counter_is_frame_fraction": same / max(frames, 1),
        "serves_by_phase": {
            str(k): {f"{x:g},{v:g}": n for (x, v), n in sorted(c.items())} for k, c in sorted(votes.items())
        },
    }


# -- bricks ----------------------------------------------------------------------------------------------------
def _brick_under_probe(s: dict, wall: np.ndarray, t: int, probe_dy: int) -> tuple[int, int, int] | None:
    """(row, column, line within its band) of the live brick under column x and line y - probe_dy of the ball
    drawn on frame t, or None."""
    line = int(s["ball_y"][t]) - probe_dy - BRICK_TOP
    r, c = line // BRICK_H, (int(s["ball_x"][t]) - BRICK_LEFT) // BRICK_W
    if 0 <= r < wall.shape[0] and 0 <= c < wall.shape[1] and wall[r, c]:
        return r, c, line % BRICK_H
    return None


def identify_fast_rows(suite: dict) -> dict:
    """Which brick rows set the top speed: every brick removal (decoded wall, top row first) by a ball not
    yet at top speed, and whether ram[107] reads class 16 within 3 frames. fast_rows = the rows down to the
    deepest triggering row; `consistent` says no row above it failed to trigger and none below it did."""
    trig: Counter = Counter()
    none: Counter = Counter()
    for _, (_, arr) in sorted(suite.items()):
        cls = arr["ram"][:, RAM_BALL_CLASS].astype(np.int64) & 63
        walls = brick_flags(arr["ram"])
        for t in range(1, walls.shape[0]):
            prev, cur = walls[t - 1], walls[t]
            if cur.sum() < prev.sum() and cls[t - 1] != TOP_SPEED_CLASS:
                hit = bool((cls[t : t + 3] == TOP_SPEED_CLASS).any())
                for r, _c in np.argwhere((prev == 1) & (cur == 0)):
                    (trig if hit else none)[int(r)] += 1
    n = max(trig) + 1 if trig else 0
    consistent = all(r < n for r in trig) and all(r >= n for r in none)
    return {
        "fast_rows": n,
        "consistent": consistent,
        "triggered_by_row": {str(r): v for r, v in sorted(trig.items())},
        "not_triggered_by_row": {str(r): v for r, v in sorted(none.items())},
    }


def identify_brick_side_bounce(suite: dict) -> dict:
    """Does a brick ever turn the ball sideways? Every in-play vx sign flip above the paddle (drawn y < 170),
    split by whether the drawn ball was past a side wall (x < 8 or x > 150) on the frame before."""
    at_wall = off_wall = 0
    for _, (_, arr) in sorted(suite.items()):
        s = trace.signals(arr["ram"])
        vx, _ = trace.ball_velocity(arr["ram"])
        flip = (
            s["in_play"][1:] & s["in_play"][:-1] & (np.sign(vx[1:]) * np.sign(vx[:-1]) < 0) & (s["ball_y"][:-1] < 170)
        )
        x = s["ball_x"][:-1][flip]
        wall = (x < 8) | (x > 150)
        at_wall += int(wall.sum())
        off_wall += int((~wall).sum())
    return {"vx_flips_above_paddle": at_wall + off_wall, "at_side_wall": at_wall, "away_from_walls": off_wall}


def identify_brick_contact(params: ShadowParams, suite: dict) -> dict:
    """The ball's extent the game's brick collision uses, (width, dx, dy): the candidate with the longest
    median replay agreement (the wall synced from ALE's RAM at each serve)."""
    scores = {}
    for w, dx, dy in BRICK_CONTACTS:
        p = params.model_copy(update={"brick_contact_w": w, "brick_contact_dx": dx, "brick_contact_dy": dy})
        scores[(w, dx, dy)] = replay_agreement(p, suite)["ball_frames_to_divergence_median"]
    best = max(BRICK_CONTACTS, key=lambda k: scores[k])  # ties: the first listed
    return {
        "brick_contact_w": best[0],
        "brick_contact_dx": best[1],
        "brick_contact_dy": best[2],
        "replay_median_by_candidate": {f"w{w:g}_dx{dx:g}_dy{dy:g}": v for (w, dx, dy), v in scores.items()},
    }


def identify_brick_probe(suite: dict, probe_dy: int = PROBE_DY) -> dict:
    """Which ball line selects the removed brick, and which lines of a brick band collide, for a rising ball:
    on every in-play frame with the ball moving up, the brick (if live) under column x and line y - probe_dy
    of last frame's drawn ball, counted by the line's offset in its 6-line band, split into frames with a
    removal of exactly that brick (hits) and frames with no removal (misses). Hits from above (a ball over
    the wall) are counted apart: they are not all selected by this line."""
    hits, misses, up, down = [0] * BRICK_H, [0] * BRICK_H, 0, 0
    for _spec, arr in suite.values():
        s = trace.signals(arr["ram"])
        _vx, vy = trace.ball_velocity(arr["ram"])
        walls = brick_flags(arr["ram"])
        for t in range(1, len(walls)):
            gone = walls[t - 1].astype(int) - walls[t].astype(int)
            if not (s["in_play"][t - 1] and s["in_play"][t]) or (gone < 0).any():
                continue
            if vy[t - 1] > 0:
                down += int(gone.sum())
                continue
            up += int(gone.sum())
            under = _brick_under_probe(s, walls[t - 1], t - 1, probe_dy)
            if under:
                r, c, band_line = under
                (hits if gone[r, c] > 0 else misses)[band_line] += 1
    solid = next(k for k in range(BRICK_H, 0, -1) if hits[k - 1] >= misses[k - 1] or k == 1)
    return {
        "probe_dy": probe_dy,
        "removals": up,
        "removals_from_above": down,
        "selected_by_probe": sum(hits),
        "hits_by_band_line": hits,
        "misses_by_band_line": misses,
        "brick_solid_h": solid,
    }


def identify_brick_rearm(suite: dict) -> dict:
    """What turns the ball between two consecutive brick removals of one ball: a paddle bounce (vy turns up)
    or a ceiling bounce (vy turns down above the wall). A removal with neither in between would refute
    'after a brick, bricks wait for a paddle or ceiling bounce'. Also counts the frames where a live brick
    (not a band's bottom line) sat under the probe line y - 2 without a removal, by whether the
    ball had hit a brick since its last paddle/ceiling bounce (disarmed) or not (armed)."""
    between, misses = Counter(), Counter()
    for _spec, arr in suite.values():
        s = trace.signals(arr["ram"])
        _vx, vy = trace.ball_velocity(arr["ram"])
        walls = brick_flags(arr["ram"])
        state = "serve"
        for t in range(1, len(walls)):
            if not (s["in_play"][t - 1] and s["in_play"][t]):
                state = "serve"
                continue
            gone = walls[t - 1].astype(int) - walls[t].astype(int)
            if (gone > 0).any() and not (gone < 0).any():
                between[state] += 1
                state = "brick"
                continue
            if vy[t - 1] > 0 > vy[t]:
                state = "paddle"
            elif vy[t - 1] < 0 < vy[t] and s["ball_y"][t - 1] < BRICK_TOP and state == "brick":
                state = "ceiling"
            under = _brick_under_probe(s, walls[t - 1], t - 1, PROBE_DY)
            if under and under[2] != BRICK_H - 1:
                misses["disarmed" if state == "brick" else "armed"] += 1
    return {
        "removal_after": dict(sorted(between.items())),
        "missed_live_brick_frames": dict(sorted(misses.items())),
        "holds": between.get("brick", 0) == 0,
    }
