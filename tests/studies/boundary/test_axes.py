"""The perturbation axes: the catalogue's contract, keys of worlds that set no new axis unchanged (pinned
from before the axes existed), and each new axis changing the simulation per world without touching
its neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from policylab.errors import BadInput
from policylab.rollout.seeds import RANGES, named_range, search_seed
from policylab.studies.boundary import axes
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.records import search_world_record, sweep_keys
from policylab.studies.boundary.simulation import simulate_worlds
from policylab.studies.boundary.world import Grid, World

# rollout keys and world names of the default grid, written by the code before the axes catalogue
PINNED = {
    "go1_v0": [
        (0, "3825ce320fef523b8210614035046962", "v2|mu=0.0500|push=10.00|dir=90.00|t0=2.00|seed=1000000"),
        (1234, "a1ac46ae43474da0919392a37535bedb", "v2|mu=0.2000|push=180.00|dir=90.00|t0=2.00|seed=1001234"),
        (6399, "d7e68b6c286f398075fc88369b0c46d7", "v2|mu=1.0000|push=200.00|dir=90.00|t0=2.00|seed=1006399"),
    ],
    "ant_v0": [
        (0, "10755c618be2552e72cec05805cc4cc9", "v2|mu=0.0500|push=10.00|dir=90.00|t0=2.00|seed=1000000"),
        (1234, "c5f106410a3e06d78d37b65eee477b2d", "v2|mu=0.2000|push=180.00|dir=90.00|t0=2.00|seed=1001234"),
        (6399, "774cf77d47f0c03aa2a56abc3e97cfb1", "v2|mu=1.0000|push=200.00|dir=90.00|t0=2.00|seed=1006399"),
    ],
}


def test_catalogue_lists_every_axis_with_range_resolution_and_application():
    assert axes.names() == ["friction", "push", "push_dir", "push_t0", "payload", "motor", "delay", "slope", "kick"]
    for a in axes.CATALOGUE:
        d = a.as_dict()
        assert d["lo"] <= d["default"] <= d["hi"] and d["resolution"] > 0 and len(d["applied"]) > 40
        assert hasattr(World(0.5, 10.0, 90.0, 2.0, 1), a.field)
    assert "gravity" in axes.axis("slope").applied and "payload" in axes.axis("push").applied


def test_check_rounds_and_refuses_out_of_range():
    assert axes.axis("payload").check(2.04) == 2.0
    assert axes.axis("push_dir").check(-90) == 270.0
    with pytest.raises(BadInput) as exc:
        axes.axis("motor").check(2.0, "rows")
    assert exc.value.field == "rows"
    with pytest.raises(BadInput):
        axes.axis("nope")
    with pytest.raises(BadInput):
        axes.parse_rows(["push=10:20:3"])
    assert axes.parse_rows(["friction=0.2:0.4:3", "delay=0,2"])[1][1] == (0.0, 2.0)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_grid_keys_are_unchanged(name):
    keys = sweep_keys(Grid.build(), resolve_checkpoint(name))
    for i, key, world_key in PINNED[name]:
        assert (keys[i][0], keys[i][1].world.key) == (key, world_key)


def test_new_axes_enter_the_key_only_when_set():
    w = World(0.5, 30.0, 90.0, 2.0, 7)
    assert w.extra == {} and w.key == "v2|mu=0.5000|push=30.00|dir=90.00|t0=2.00|seed=7"
    w2 = World(0.5, 30.0, 90.0, 2.0, 7, payload_kg=2.5, action_delay=1)
    assert w2.key == w.key + "|payload=2.50|delay=1"
    ckpt = resolve_checkpoint("go1_v0")
    rec = search_world_record(w2, ckpt, "env")
    assert rec["payload_kg"] == 2.5 and rec["action_delay"] == 1 and "motor_scale" not in rec
    assert World.from_record(rec) == w2
    w3 = World(0.5, 30.0, 90.0, 2.0, 7, kick_mps=axes.axis("kick").check(1.234))
    assert w3.key == w.key + "|kick=1.23" and World(0.5, 30.0, 90.0, 2.0, 7, kick_mps=0.0).key == w.key
    assert World.from_record(search_world_record(w3, ckpt, "env")) == w3
    with pytest.raises(BadInput, match="kick 3.5 m/s outside the clamp range 0-3"):
        axes.axis("kick").check(3.5)


def test_search_seeds_come_from_their_own_range():
    r = named_range("boundary", "search")
    assert search_seed(0, 0, 0) == r.base and search_seed(99, 9_999, 9_999) == r.stop - 1
    assert not any(r.overlaps(o) for (study, _), o in RANGES.items() if study == "boundary" and o is not r)
    with pytest.raises(BadInput):
        search_seed(100, 0, 0)


def test_axes_change_their_world_alone():
    """Each new axis changes its own world's trajectory; a world that sets none runs bit for bit as it does
    beside worlds that set them, alone, and in another order."""
    ckpt = resolve_checkpoint("go1_v0")
    base = World(0.6, 30.0, 90.0, 2.0, 1_000_000)
    changed = [
        World(0.6, 30.0, 90.0, 2.0, 1_000_000, **kw)
        for kw in (
            {"payload_kg": 3.0},
            {"motor_scale": 0.7},
            {"action_delay": 2},
            {"slope_deg": 5.0},
            {"kick_mps": 0.8},
        )
    ]
    together = simulate_worlds(str(ckpt.path), [base, *changed], ckpt.robot, 2)
    alone = simulate_worlds(str(ckpt.path), [base], ckpt.robot, 1)[0]
    reversed_ = simulate_worlds(str(ckpt.path), [*changed[::-1], base], ckpt.robot, 1)
    assert np.array_equal(together[0][1]["qpos"], alone[1]["qpos"])
    for (_, p), (_, q) in zip(together[1:], reversed_[:-1][::-1]):
        assert np.array_equal(p["qpos"], q["qpos"])  # a changed world alike in any batch
    for _, p in together[1:]:
        n = min(len(p["qpos"]), len(alone[1]["qpos"]))
        assert not np.array_equal(p["qpos"][:n], alone[1]["qpos"][:n])
    # delay: the first two control steps hold the home pose (the zero action)
    delayed = together[3][1]["ctrl"]
    assert np.array_equal(delayed[0], delayed[1]) and np.array_equal(delayed[0], ckpt.robot.ctrl(np.zeros((1, 12)))[0])
    # payload: the push's %BW counts it
    pushed = together[1][1]["push"]
    peak = np.hypot(pushed[:, 0], pushed[:, 1]).max()
    assert peak == pytest.approx(0.3 * ckpt.robot.body_weight_n(3.0))
    # kick: the same states as the unchanged world up to the push start, then another trajectory
    k0 = int(round(2.0 / ckpt.robot.control_dt))
    kicked = together[5][1]
    assert kicked["qvel"][: k0 + 1].tobytes() == alone[1]["qvel"][: k0 + 1].tobytes()
    assert not np.array_equal(kicked["qvel"][k0 + 1], alone[1]["qvel"][k0 + 1])
