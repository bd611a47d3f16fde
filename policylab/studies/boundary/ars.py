"""Train a walking policy for any robot spec with Augmented Random Search (ARS V2-t), resumably.

The recipe, rewards and checkpoint files: docs/boundary.md, "The Go1 policy: training recipe" and "The Ant:
policy and training"."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from policylab.envs.robots.batch import run_closed_loop
from policylab.envs.robots.robot import Robot, robot
from policylab.fileio import arrays_to_bytes, atomic_write_bytes, read_arrays
from policylab.hashing import canonical_json, hash_obj
from policylab.policies import linear
from policylab.progress import progress_bar
from policylab.rollout.seeds import named_range
from policylab.studies.boundary.constants import CHECKPOINT_DIR
from policylab.studies.boundary.robot_policies import TrainConfig

TRAIN_SEEDS = named_range("boundary", "training")
EVAL_SEEDS = named_range("boundary", "evaluation")


def episode_worlds(cfg: TrainConfig, rob: Robot, rng: np.random.Generator) -> dict:
    n = cfg.directions
    seeds = rng.integers(TRAIN_SEEDS.base, TRAIN_SEEDS.stop, size=n)
    mus = (
        [None] * n
        if cfg.friction_range is None
        else [round(float(x), 2) for x in rng.uniform(*cfg.friction_range, size=n)]
    )
    if cfg.push_pct_max > 0:
        force = rng.uniform(0.0, cfg.push_pct_max, size=n) / 100.0 * rob.body_weight_n()
        direction = np.where(rng.random(n) < 0.5, 90.0, -90.0)
        lo, hi = (int(round(t / rob.control_dt)) for t in cfg.push_window_s)
        k0 = rng.integers(lo, hi, size=n)
    else:
        force, direction, k0 = np.zeros(n), np.zeros(n), np.full(n, -1)
    return {"seeds": seeds, "mus": mus, "force": force, "dir": direction, "k0": k0}


def gait_returns(cfg: TrainConfig, rob: Robot, traj: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode return and the alive mask (B, T) (True while the world has not failed)."""
    qpos, qvel = traj["qpos"], traj["qvel"]
    t = qpos.shape[1] - 1
    alive = np.arange(1, t + 1)[None, :] < (traj["n_states"][:, None] - 1)
    # a world that stopped at step k has states 0..k; its last step (the fall) pays nothing
    full = traj["n_states"] == t + 1
    alive[full, -1] = True
    v = qvel[:, 1:, rob.root_dof : rob.root_dof + 3]
    wz = qvel[:, 1:, rob.root_dof + 5]
    r = (
        np.minimum(v[..., 0], cfg.target_speed)
        - cfg.lateral_cost * np.abs(v[..., 1])
        - cfg.yaw_cost * np.abs(wz)
        + cfg.alive_bonus
        - cfg.ctrl_cost * np.sum(traj["action"] ** 2, axis=2)
    )
    return np.where(alive, np.nan_to_num(r), 0.0).sum(axis=1), alive


ANT_UP_TERMINATE = 0.3
ANT_Z_HEALTHY = (0.2, 1.0)  # Ant-v5's healthy torso height range, m


def ant_v5_returns(cfg: TrainConfig, rob: Robot, traj: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode return and alive mask (B, T) under Ant-v5's reward (rewards stop at termination)."""
    qpos = traj["qpos"]
    x = qpos[:, :, rob.root_qpos]
    vx = (x[:, 1:] - x[:, :-1]) / rob.control_dt
    reward = vx - cfg.ctrl_cost * np.sum(traj["action"] ** 2, axis=2)
    z, up = rob.torso_z(qpos[:, 1:]), rob.uprightness(qpos[:, 1:])
    bad = (up < ANT_UP_TERMINATE) | (z < ANT_Z_HEALTHY[0]) | (z > ANT_Z_HEALTHY[1]) | ~np.isfinite(reward)
    alive = np.cumsum(bad, axis=1) == 0
    return np.where(alive, np.nan_to_num(reward), 0.0).sum(axis=1), alive


REWARDS = {"gait": gait_returns, "ant_v5": ant_v5_returns}


def returns(cfg: TrainConfig, rob: Robot, traj: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode return and alive mask (B, T) under the config's reward."""
    return REWARDS[cfg.reward](cfg, rob, traj)


class Whitener:
    """Running mean / std of observations (sum and sum of squares, float64)."""

    def __init__(self, dim: int):
        self.n, self.s, self.ss = 0, np.zeros(dim), np.zeros(dim)

    def update(self, obs: np.ndarray) -> None:
        self.n += len(obs)
        self.s += obs.sum(axis=0)
        self.ss += (obs * obs).sum(axis=0)

    def stats(self) -> tuple[np.ndarray, np.ndarray]:
        if self.n < 2:
            return np.zeros_like(self.s), np.ones_like(self.s)
        mean = self.s / self.n
        var = np.maximum(self.ss / self.n - mean * mean, 0.0)
        return mean, np.maximum(np.sqrt(var), 1e-2)


def evaluate_nominal(cfg: TrainConfig, rob: Robot, policy: linear.LinearPolicy, nthread: int) -> dict:
    """Survival (no episode end under the config's reward) and mean forward speed over `cfg.eval_seeds`
    nominal worlds (model friction, no push) on the evaluation seeds 900,000 + i (never a sweep seed).
    The gait recipe averages the speed over survivors, the Ant's over every world, as each was frozen."""
    seeds = list(EVAL_SEEDS.first(cfg.eval_seeds))
    n_steps = cfg.eval_steps or cfg.horizon_steps
    traj = run_closed_loop(rob, policy.act, [None] * len(seeds), seeds, n_steps=n_steps, nthread=nthread)
    _, alive = returns(cfg, rob, traj)
    survived = alive[:, -1]
    x = traj["qpos"][:, :, rob.root_qpos]
    if cfg.reward == "ant_v5":
        speed = (x[:, -1] - x[:, 0]) / (traj["time"][:, -1] - traj["time"][:, 0])
        return {"survival": float(survived.mean()), "speed_mps": float(speed.mean())}
    speed = (x[:, -1] - x[:, 0]) / (n_steps * rob.control_dt)
    return {"survival": float(survived.mean()), "speed_mps": float(speed[survived].mean()) if survived.any() else None}


def prior_weights(cfg: TrainConfig, rob: Robot) -> np.ndarray:
    """Raw-observation weights of the gait prior (zeros when it is off): a trot on the clock features."""
    w = np.zeros((rob.act_dim, rob.obs_dim))
    if not (cfg.prior_thigh or cfg.prior_knee):
        return w
    col, clock = 0, None
    for t in rob.terms:
        if t.spec.term == "phase":
            clock = col
        col += t.width
    if clock is None:
        raise ValueError(f"a gait prior needs a phase term in {rob.spec.name}'s observation")
    for th, kn, off in zip(cfg.prior_thigh_idx, cfg.prior_knee_idx, cfg.prior_leg_offset):
        # sin(phi + off) = cos(off) sin(phi) + sin(off) cos(phi); cos(phi + off) = cos(off) cos(phi) - sin(off) sin(phi)
        w[th, clock], w[th, clock + 1] = cfg.prior_thigh * np.cos(off), cfg.prior_thigh * np.sin(off)
        w[kn, clock], w[kn, clock + 1] = -cfg.prior_knee * np.sin(off), cfg.prior_knee * np.cos(off)
    return w


def _start(cfg: TrainConfig, rob: Robot, rng: np.random.Generator, whiten: Whitener, nthread: int) -> np.ndarray:
    """Initial weights: the gait prior, played once in `prior_worlds` nominal training worlds to seed the
    whitening statistics, then expressed on whitened observations (so the first policy is the prior)."""
    raw = prior_weights(cfg, rob)
    if not raw.any():
        return raw
    seeds = [int(s) for s in rng.integers(TRAIN_SEEDS.base, TRAIN_SEEDS.stop, size=cfg.prior_worlds)]
    traj = run_closed_loop(
        rob,
        lambda obs: linear.act(raw, np.zeros(rob.obs_dim), np.ones(rob.obs_dim), obs),
        [None] * len(seeds),
        seeds,
        n_steps=cfg.horizon_steps,
        nthread=nthread,
    )
    ok = np.isfinite(traj["time"])
    whiten.update(rob.observe(traj["qpos"][ok], traj["qvel"][ok], traj["time"][ok]))
    mean, std = whiten.stats()
    return raw * std[None, :]  # W z = W_raw (obs - mean) ... plus W_raw mean, which is ~0 for the clock


def _state_hash(cfg: TrainConfig) -> str:
    """What a saved state belongs to: the config and the robot (spec and MJCF files), so a changed robot
    never resumes a stale training."""
    return hash_obj({"config": cfg.model_dump(), "robot": robot(cfg.robot).identity})


def _state_paths(out_dir: Path, name: str) -> tuple[Path, Path]:
    # not .npz: a checkpoint folder lists its policies by suffix
    return out_dir / f"{name}.train-state.arrays", out_dir / f"{name}.train-state.json"


def _save_state(out_dir: Path, cfg: TrainConfig, it: int, weights, whiten: Whitener, rng, log) -> None:
    npz, js = _state_paths(out_dir, cfg.name)
    atomic_write_bytes(npz, arrays_to_bytes({"weights": weights, "s": whiten.s, "ss": whiten.ss}))
    state = {
        "config_hash": _state_hash(cfg),
        "iteration": it,
        "whiten_n": whiten.n,
        "rng": rng.bit_generator.state,
        "curve": log,
    }
    atomic_write_bytes(js, (json.dumps(state, sort_keys=True) + "\n").encode())


def _load_state(out_dir: Path, cfg: TrainConfig):
    npz, js = _state_paths(out_dir, cfg.name)
    if not (npz.is_file() and js.is_file()):
        return None
    state = json.loads(js.read_text())
    if state["config_hash"] != _state_hash(cfg):
        return None
    arrays = read_arrays(npz)
    return state, arrays


def train(cfg: TrainConfig, out_dir: Path, nthread: int = 2) -> tuple[linear.LinearPolicy, list[dict]]:
    rob = robot(cfg.robot)
    rng = np.random.default_rng(cfg.seed)
    weights = np.zeros((rob.act_dim, rob.obs_dim))
    whiten = Whitener(rob.obs_dim)
    frozen: tuple[np.ndarray, np.ndarray] | None = None
    if cfg.init_from is not None:
        start_policy = linear.load(CHECKPOINT_DIR / f"{cfg.init_from}.npz", rob.obs_dim, rob.act_dim)
        frozen = (start_policy.obs_mean, start_policy.obs_std)
    log: list[dict] = []
    start = 0
    resumed = _load_state(out_dir, cfg)
    if resumed is None:
        weights = start_policy.weights.copy() if frozen else _start(cfg, rob, rng, whiten, nthread)
    if resumed is not None:
        state, arrays = resumed
        start, log = state["iteration"], state["curve"]
        weights = arrays["weights"]
        whiten.n, whiten.s, whiten.ss = state["whiten_n"], arrays["s"], arrays["ss"]
        rng.bit_generator.state = state["rng"]
    n_push = int(round(cfg.push_duration_s / rob.control_dt))
    with progress_bar(f"ARS {cfg.name}", cfg.iterations, "iter") as bar:
        if start:
            bar.already(start)
        for it in range(start, cfg.iterations):
            mean, std = frozen or whiten.stats()
            delta = rng.standard_normal((cfg.directions,) + weights.shape)
            w = episode_worlds(cfg, rob, rng)
            batch_w = np.concatenate([weights + cfg.noise * delta, weights - cfg.noise * delta])
            traj = run_closed_loop(
                rob,
                lambda obs, ids: linear.act(batch_w[ids], mean, std, obs),  # noqa: B023 (called in this iteration)
                w["mus"] * 2,
                [int(s) for s in np.concatenate([w["seeds"], w["seeds"]])],
                n_steps=cfg.horizon_steps,
                force_n=np.concatenate([w["force"], w["force"]]),
                dir_deg=np.concatenate([w["dir"], w["dir"]]),
                push_k0=np.concatenate([w["k0"], w["k0"]]),
                n_push=n_push,
                nthread=nthread,
                policy_ids=True,
            )
            ret, alive = returns(cfg, rob, traj)
            r_pos, r_neg = ret[: cfg.directions], ret[cfg.directions :]
            order = np.argsort(-np.maximum(r_pos, r_neg), kind="stable")[: cfg.top]
            sigma = np.concatenate([r_pos[order], r_neg[order]]).std()
            step = np.tensordot(r_pos[order] - r_neg[order], delta[order], axes=1)
            weights = weights + cfg.step_size / (cfg.top * max(sigma, 1e-6)) * step
            states = np.zeros(traj["qpos"].shape[:2], dtype=bool)
            states[:, :-1] = alive
            states[:, 0] = True
            obs = rob.observe(traj["qpos"][states], traj["qvel"][states], traj["time"][states])
            whiten.update(obs[np.isfinite(obs).all(axis=1)])
            row = {
                "iteration": it + 1,
                "return_mean": float(ret.mean()),
                "return_max": float(ret.max()),
                "episode_steps_mean": float(traj["n_states"].mean() - 1),
            }
            if cfg.eval_every and ((it + 1) % cfg.eval_every == 0 or it + 1 == cfg.iterations):
                m, s = frozen or whiten.stats()
                row["eval"] = evaluate_nominal(cfg, rob, linear.LinearPolicy(weights, m, s), nthread)
            log.append(row)
            if (it + 1) % cfg.save_every == 0 or it + 1 == cfg.iterations:
                _save_state(out_dir, cfg, it + 1, weights, whiten, rng, log)
            bar.advance()
    mean, std = frozen or whiten.stats()
    return linear.LinearPolicy(weights, mean, std), log


def train_and_save(cfg: TrainConfig, out_dir: Path, nthread: int) -> dict:
    t0 = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    policy, log = train(cfg, out_dir, nthread=nthread)
    sha = linear.save(out_dir / f"{cfg.name}.npz", policy)
    info = {
        "config": json.loads(canonical_json(cfg.model_dump())),
        "checkpoint_sha256": sha,
        "curve": log,
        "robot": robot(cfg.robot).identity,
    }
    (out_dir / f"{cfg.name}.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    timing = out_dir / f"{cfg.name}.timing.json"
    prev = json.loads(timing.read_text()).get("train_wall_s_sessions", []) if timing.is_file() else []
    timing.write_text(json.dumps({"train_wall_s_sessions": prev + [round(time.perf_counter() - t0, 1)]}) + "\n")
    return info
