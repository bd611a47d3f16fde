"""The episode runner: a policy played in either Breakout environment, one store record per episode.

An `EpisodeTask` goes in, one `Episode` per seed comes out; keys hash the resolved physics, never a preset's
name (docs/breakout.md, "Module notes"; docs/design.md, "Key versions")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from policylab.envs.breakout.ale import AleBreakout, Protocol
from policylab.envs.breakout.contract import FIRE, NOOP, F
from policylab.envs.breakout.key_versions import former_physics
from policylab.envs.breakout.params import ShadowParams, load_preset
from policylab.envs.breakout.rom.kernel import brick_flags
from policylab.hashing import FrozenJSON, canonical_json, hash_obj
from policylab.policies.breakout_net import NetworkFile
from policylab.rollout.ensure import Planned, ensure
from policylab.rollout.payloads import EncodedArrays
from policylab.rollout.store import Store, rollout_key
from policylab.studies.breakout.episodes.features import episode_features
from policylab.studies.breakout.sizes import SHADOW_BATCH

STUDY = "breakout"
ENVS = ("ale", "shadow")


@dataclass(frozen=True)
class EpisodeTask:
    """`seeds` of `policy` (with `params`) on `env` under `protocol`.

    With `network` set, the task plays that network: `policy` is then its file name (a label for
    reports and the record) and `params` is empty.

    Shadow only: `shadow` is the world's resolved physics and `preset` the name it was resolved
    under (a label, recorded but not keyed). Given a `preset` name or .json path alone, the task
    resolves it here, once (for scripts; commands resolve theirs in their plan).
    """

    env: str
    seeds: tuple[int, ...]
    policy: str
    params: dict
    protocol: dict  # Protocol.model_dump()
    shadow: ShadowParams | None = None
    preset: str | None = None
    capture_every: int = 0  # > 0: keep every k-th frame (for video) in the payload
    network: NetworkFile | None = None

    def __post_init__(self) -> None:
        if self.network is not None and self.params:
            raise ValueError("a network task has no parameters")
        if self.env == "shadow" and self.shadow is None:
            if self.preset is None:
                raise ValueError("a shadow task needs its physics (shadow) or a preset to resolve")
            object.__setattr__(self, "shadow", load_preset(self.preset))
        if self.env == "ale" and (self.shadow is not None or self.preset is not None):
            raise ValueError("an ALE task has no shadow physics")
        if self.pixels:
            if self.env == "shadow" and self.shadow.model != "rom":
                raise ValueError("a pixel network plays on the exact shadow (the ROM model) only")
            if self.capture_every:
                raise ValueError("a pixel network's episodes record no video frames")

    @property
    def pixels(self) -> bool:
        """Whether the task plays a pixel (CNN) network (`episodes.pixels`)."""
        return self.network is not None and self.network.pixels

    @cached_property
    def world(self) -> dict:
        """The seed-free part of the key's world: the ALE game, or the shadow's physics (frozen, so its
        3 KB of canonical JSON is serialized once per task, not per key and record)."""
        if self.env == "ale":
            return {"env": "ale", "game": "breakout", "rom": "breakout"}
        return {"env": "shadow", "physics": FrozenJSON(self.shadow.physics()), "physics_hash": self.shadow.digest()}

    @cached_property
    def former_worlds(self) -> tuple[dict, ...]:
        """The seed-free world as earlier key versions hashed it (`key_versions.former_physics`;
        docs/design.md, "Key versions")."""
        if self.env == "ale":
            return ()
        return tuple(
            {"env": "shadow", "physics": FrozenJSON(f), "physics_hash": hash_obj(f)}
            for f in former_physics(self.shadow)
        )

    @cached_property
    def policy_record(self) -> FrozenJSON:
        """The record's policy (`policy_of`), frozen once per task: a tracker's name and parameters, or a
        network's content hash and observation."""
        if self.network is not None:
            return FrozenJSON({"network": self.network.record})
        return FrozenJSON({"name": self.policy, "params": self.params})

    @property
    def policy_id(self) -> str:
        """What tells two tasks' policies apart: the network's hash, or the tracker's name."""
        return self.network.sha256 if self.network is not None else self.policy

    @cached_property
    def protocol_record(self) -> FrozenJSON:
        """The protocol fields that act on this env (ALE: all; shadow: horizon and serve rule), frozen."""
        p = dict(self.protocol)
        out = p if self.env == "ale" else {"max_steps": p["max_steps"], "serve": p["serve"]}
        if self.pixels:
            from policylab.studies.breakout.episodes.pixels import PIXEL_RULES

            out = {**out, "agent_env": PIXEL_RULES}
        if self.capture_every:
            out = {**out, "capture_every": self.capture_every}
        return FrozenJSON(out)


@dataclass
class Episode:
    seed: int
    outcome: dict
    payload: dict[str, np.ndarray]


def serve_actions(actions: np.ndarray, in_play: np.ndarray, served: np.ndarray | None, rule: str) -> np.ndarray:
    """Apply the serve rule to a batch of policy actions.

    auto: FIRE whenever no ball is in play, so every life is played (`served` is not read).
    never: FIRE until the first ball is in play (`served`: whether each env has had one); afterwards
    FIRE becomes NOOP, so a lost ball is never re-served (the original's one-ball Atari episodes).
    """
    waiting = ~in_play
    if rule == "auto":
        return np.where(waiting, FIRE, actions)
    first = waiting & ~served
    out = np.where(first, FIRE, actions)
    return np.where(~first & (out == FIRE), NOOP, out)


# -- records --------------------------------------------------------------------------------------
def world_key(task: EpisodeTask, seed: int) -> dict:
    """The world as its key hashes it (docs/breakout.md, "Module notes")."""
    return {**task.world, "seed": int(seed)}


def protocol_of(task: EpisodeTask) -> dict:
    """The protocol fields that act on this env (ALE: all; shadow: horizon and serve rule)."""
    return task.protocol_record


def key_of(task: EpisodeTask, seed: int) -> str:
    return rollout_key(world_key(task, seed), policy_of(task), protocol_of(task))


def policy_of(task: EpisodeTask) -> dict:
    return task.policy_record


# -- policies and the shadow env (built by the policies / shadow modules) ---------------------------
# Imported where they are used, so a worker loads only what its episodes need: the shadow's numba
# kernels are never loaded for ALE episodes, nor the tracker registry for a network policy.
def policy_fn(name: str) -> Callable[..., np.ndarray]:
    """`fn(obs, params, serve) -> actions` from the policy registry."""
    from policylab.policies import breakout as policies

    return policies.get_policy(name)


def policy_actions(
    tasks: Sequence[EpisodeTask], auto: bool
) -> Callable[[np.ndarray, Callable[[], np.ndarray]], np.ndarray]:
    """`act(obs, walls) -> actions` for one batch of the tasks' seeds, in order, called once per agent
    step from the episode's first observation on. A tracker runs per task on its rows, with its
    parameters; a network (every task of a group shares it) runs once on the whole batch and calls
    `walls()` (the (N, 108) brick flags) only when its observation has the wall."""
    head = tasks[0]
    n = sum(len(t.seeds) for t in tasks)
    if head.network is not None:
        actor = head.network.policy().actor(n)
        return lambda obs, walls: actor(obs, walls() if actor.wall else None)
    policy = policy_fn(head.policy)
    bounds = np.cumsum([0] + [len(t.seeds) for t in tasks])

    def act(obs: np.ndarray, walls: Callable[[], np.ndarray]) -> np.ndarray:
        out = np.empty(n, dtype=np.int64)
        for k, task in enumerate(tasks):
            out[bounds[k] : bounds[k + 1]] = policy(obs[bounds[k] : bounds[k + 1]], task.params, auto)
        return out

    return act


# -- running -------------------------------------------------------------------------------------
def run_task(task: EpisodeTask) -> list[Episode]:
    """Play every seed of `task`; top-level so process pools and Ray can pickle it."""
    if task.pixels:
        return _run_pixels([task])[0]
    if task.env == "ale":
        return [_run_ale(task, seed) for seed in task.seeds]
    return _run_shadow(task)


def _run_pixels(tasks: Sequence[EpisodeTask]) -> list[list[Episode]]:
    """A pixel network's tasks, played by `episodes.pixels` (imported here: no numba kernel nor ale-py vector
    env for other policies)."""
    from policylab.studies.breakout.episodes import pixels

    return [[Episode(*ep) for ep in eps] for eps in pixels.run_group(tasks)]


def _run_ale(task: EpisodeTask, seed: int) -> Episode:
    protocol = Protocol(**task.protocol)
    act = policy_actions([task], protocol.serve == "auto")
    env = AleBreakout(protocol, seed)
    obs = [env.reset()]
    rams = [env.ram()]
    frames = [env.frame()] if task.capture_every else []
    acts, pol_acts, rewards = [], [], []
    served = np.zeros(1, dtype=bool)
    done = False
    for t in range(protocol.max_steps):
        o = obs[-1][None, :]
        a_pol = act(o, lambda: brick_flags(rams[-1][None]).reshape(1, -1))
        a = serve_actions(a_pol, o[:, F["ball_in_play"]] > 0, served, protocol.serve)
        o2, r, done = env.step(int(a[0]))
        served |= o2[F["ball_in_play"]] > 0
        obs.append(o2)
        rams.append(env.ram())
        pol_acts.append(a_pol[0])
        acts.append(a[0])
        rewards.append(r)
        if task.capture_every and (t + 1) % task.capture_every == 0:
            frames.append(env.frame())
        if done:
            break
    payload = {
        "obs": np.asarray(obs, dtype=np.float32),
        "ram": np.asarray(rams, dtype=np.uint8),
        "action": np.asarray(acts, dtype=np.int8),
        "policy_action": np.asarray(pol_acts, dtype=np.int8),
        "reward": np.asarray(rewards, dtype=np.float32),
    }
    if task.capture_every:
        payload["frames"] = np.asarray(frames, dtype=np.uint8)
    return Episode(seed, episode_features(payload["obs"], payload["reward"], done), payload)


def _run_shadow(task: EpisodeTask) -> list[Episode]:
    return run_shadow_group([task])[0]


def run_shadow_group(tasks: Sequence[EpisodeTask], *, fused: bool = True) -> list[list[Episode]]:
    """Play several shadow tasks in ONE vectorized batch; they may differ only in seeds and params.

    Every env keeps its own seed stream, so an episode is bit-identical whichever group it runs
    in (tests check it); grouping amortises the per-call cost over thousands of envs, which is what
    makes a 216-candidate search take seconds. The built-in policies are played by the fused numba
    loop (`shadow_loop.play`: no Python per agent step); a capture task (video frames), a network and
    a policy without a `TrackerForm` take the Python loop (`fused=False` forces it; tests compare the
    two).
    """
    head = tasks[0]
    assert all(_group_key(t) == _group_key(head) for t in tasks), "tasks of one group share env settings"
    if head.pixels:
        return _run_pixels(tasks)
    tracker = None if head.network is not None else policy_fn(head.policy).tracker
    capture = bool(head.capture_every) and len(tasks) == 1
    if fused and tracker is not None and not capture:
        return _run_shadow_fused(tasks, tracker)
    return _run_shadow_python(tasks, capture)


def _run_shadow_fused(tasks: Sequence[EpisodeTask], tracker) -> list[list[Episode]]:
    from policylab.envs.breakout.shadow import ShadowBreakout
    from policylab.studies.breakout.episodes.shadow_loop import play_batch

    head = tasks[0]
    protocol = Protocol(**head.protocol)
    seeds = np.concatenate([np.asarray(t.seeds, dtype=np.int64) for t in tasks])
    env = ShadowBreakout(seeds.size, head.shadow, seeds=seeds)
    prm = np.stack([tracker.vector(t.params) for t in tasks])
    env_prm = np.repeat(np.arange(len(tasks)), [len(t.seeds) for t in tasks])
    obs, acts, pol_acts, rewards, length, done = play_batch(
        env, prm, env_prm, tracker.planner, protocol.serve == "auto", protocol.serve, protocol.max_steps
    )
    out, i = [], 0
    for task in tasks:
        episodes = []
        for seed in task.seeds:
            n = int(length[i])
            payload = {
                "obs": obs[i, : n + 1],
                "action": acts[i, :n],
                "policy_action": pol_acts[i, :n],
                "reward": rewards[i, :n],
            }  # contiguous views of the batch's env-major arrays
            features = episode_features(payload["obs"], payload["reward"], bool(done[i]))
            episodes.append(Episode(int(seed), features, payload))
            i += 1
        out.append(episodes)
    return out


def _run_shadow_python(tasks: Sequence[EpisodeTask], capture: bool) -> list[list[Episode]]:
    """The reference loop: one policy call, serve rule and env step per agent step, from Python."""
    from policylab.envs.breakout.shadow import ShadowBreakout

    head = tasks[0]
    protocol = Protocol(**head.protocol)
    act = policy_actions(tasks, protocol.serve == "auto")
    bounds = np.cumsum([0] + [len(t.seeds) for t in tasks])
    seeds = np.concatenate([np.asarray(t.seeds, dtype=np.int64) for t in tasks])
    b = seeds.size
    env = ShadowBreakout(b, head.shadow, seeds=seeds)
    o = np.asarray(env.reset(), dtype=np.float64)
    horizon = protocol.max_steps
    obs = np.zeros((horizon + 1, b, o.shape[1]), dtype=np.float32)
    obs[0] = o
    acts = np.zeros((horizon, b), dtype=np.int8)
    pol_acts = np.zeros((horizon, b), dtype=np.int8)
    rewards = np.zeros((horizon, b), dtype=np.float32)
    length = np.full(b, horizon, dtype=np.int64)
    finished = np.zeros(b, dtype=bool)
    served = np.zeros(b, dtype=bool)
    frames = [env.render(0)] if capture else []
    for t in range(horizon):
        a_pol = act(o, lambda: env.walls)
        a = serve_actions(a_pol, o[:, F["ball_in_play"]] > 0, served, protocol.serve)
        o, r, d, _, _ = env.step(a)
        o = o.astype(np.float64)
        live = ~finished
        obs[t + 1, live] = o[live]
        acts[t, live] = a[live]
        pol_acts[t, live] = a_pol[live]
        rewards[t, live] = r[live]
        served |= o[:, F["ball_in_play"]] > 0
        if capture and not finished[0] and (t + 1) % head.capture_every == 0:
            frames.append(env.render(0))
        newly = live & d.astype(bool)
        length[newly] = t + 1
        finished |= newly
        if finished.all():
            break
    out = []
    for k, task in enumerate(tasks):
        episodes = []
        for j, seed in enumerate(task.seeds):
            i = bounds[k] + j
            n = int(length[i])
            payload = {
                "obs": np.ascontiguousarray(obs[: n + 1, i]),
                "action": np.ascontiguousarray(acts[:n, i]),
                "policy_action": np.ascontiguousarray(pol_acts[:n, i]),
                "reward": np.ascontiguousarray(rewards[:n, i]),
            }
            if capture and i == 0:
                payload["frames"] = np.asarray(frames, dtype=np.uint8)
            features = episode_features(payload["obs"], payload["reward"], bool(finished[i]))
            episodes.append(Episode(int(seed), features, payload))
        out.append(episodes)
    return out


def _group_key(task: EpisodeTask) -> tuple:
    """Tasks with equal keys can share one vectorized batch (labels may differ: records keep each task's)."""
    return (task.env, task.policy_id, canonical_json(task.protocol), task.world.get("physics_hash"), task.capture_every)


def work_units(tasks: Sequence[EpisodeTask]) -> list[list[EpisodeTask]]:
    """Split tasks into units of work for the executors.

    ALE: one seed per unit (one emulator per process). Shadow: tasks that share env settings are
    packed together, whole tasks at a time, up to SHADOW_BATCH envs per unit; a capture task
    (video frames of one env) stays alone.
    """
    return [[part for _, part in unit] for unit in _split(tasks)]


def _split(tasks: Sequence[EpisodeTask]) -> list[list[tuple[int, EpisodeTask]]]:
    """`work_units`, each part with the index of the task it came from."""
    units: list[list[tuple[int, EpisodeTask]]] = []
    open_units: dict[tuple, list[tuple[int, EpisodeTask]]] = {}
    for ti, task in enumerate(tasks):
        if task.env == "ale":
            units.extend([(ti, _with_seeds(task, (s,)))] for s in task.seeds)
            continue
        for i in range(0, len(task.seeds), SHADOW_BATCH):
            part = _with_seeds(task, task.seeds[i : i + SHADOW_BATCH])
            key = _group_key(part)
            unit = open_units.get(key)
            if (
                task.capture_every
                or unit is None
                or sum(len(t.seeds) for _, t in unit) + len(part.seeds) > SHADOW_BATCH
            ):
                unit = [(ti, part)]
                units.append(unit)
                open_units[key] = unit
            else:
                unit.append((ti, part))
    return units


def run_unit(unit: list[EpisodeTask]) -> list[tuple[dict, EncodedArrays]]:
    """Run one unit of work: (outcome, payload) per seed, task by task; top-level so process pools
    and Ray can pickle it. Payloads come encoded (`EncodedArrays`): compression runs where the unit
    runs, on background threads, while the next unit simulates and the store's writer writes."""
    groups = [run_task(t) for t in unit] if unit[0].env == "ale" else run_shadow_group(unit)
    episodes = [ep for group in groups for ep in group]
    return list(zip([ep.outcome for ep in episodes], EncodedArrays.in_background([ep.payload for ep in episodes])))


class EpisodeRunner:
    """Breakout's batch runner for `rollout.ensure`: the missing (task, seed) pairs are regrouped
    into their tasks and packed by `work_units` (one ALE seed, or up to SHADOW_BATCH shadow seeds)."""

    run = staticmethod(run_unit)

    def pack(self, todo: Sequence[Planned]) -> list[tuple[list[Planned], list[EpisodeTask]]]:
        by_task: dict[int, tuple[EpisodeTask, dict[int, Planned]]] = {}
        for p in todo:
            task, seed = p.detail
            by_task.setdefault(id(task), (task, {}))[1][seed] = p
        groups = list(by_task.values())
        units = _split([_with_seeds(task, list(planned_by_seed)) for task, planned_by_seed in groups])
        return [
            ([groups[ti][1][s] for ti, part in unit for s in part.seeds], [part for _, part in unit]) for unit in units
        ]


def planned(task: EpisodeTask, seed: int) -> Planned:
    labels = {} if task.env == "ale" else {"preset": task.preset}
    return Planned(
        STUDY,
        world_key(task, seed),
        policy_of(task),
        protocol_of(task),
        labels,
        detail=(task, seed),
        former_worlds=tuple({**w, "seed": int(seed)} for w in task.former_worlds),
    )


def _with_seeds(task: EpisodeTask, seeds: Sequence[int]) -> EpisodeTask:
    return replace(task, seeds=tuple(int(s) for s in seeds))


def ensure_episodes(
    store: Store,
    tasks: Iterable[EpisodeTask],
    *,
    executor: str = "local",
    ray_address: str | None = None,
    label: str = "episodes",
) -> dict[tuple[int, int], Any]:
    """Every (task, seed) as a store record, running only those the store lacks (`rollout.ensure`).

    Returns {(task index, seed): record}. A key that several tasks share (the same physics under two
    preset names, a candidate equal to the audited policy) is played once, by the first task that
    has it, whose label its record keeps.
    """
    tasks = list(tasks)
    plan = [planned(task, s) for task in tasks for s in task.seeds]
    records = ensure(store, plan, EpisodeRunner(), executor=executor, ray_address=ray_address, label=label)
    keys = iter(p.key for p in plan)
    return {(ti, s): records[next(keys)] for ti, task in enumerate(tasks) for s in task.seeds}
