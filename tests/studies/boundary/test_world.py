"""The seed scheme, world keys and clamp ranges, checked against stored sweep records."""

import pytest

from policylab.errors import BadInput
from policylab.rollout.seeds import world_seed
from policylab.rollout.store import Store
from policylab.studies.boundary.world import Grid, World, cache_key


def test_default_grid_matches_the_spec():
    g = Grid.build()
    assert g.rows[0] == 0.05 and g.rows[-1] == 1.0 and len(g.rows) == 20
    assert g.rows[1] == 0.10 and g.cols == tuple(float(p) for p in range(10, 201, 10))
    assert g.n_rollouts == 6400
    # rollout index = (mu_idx * n_push + push_idx) * S + seed_idx; seed = 1_000_000 + index
    assert g.rollout_index(3, 7, 5) == (3 * 20 + 7) * 16 + 5
    assert g.seed(3, 7, 5) == 1_000_000 + (3 * 20 + 7) * 16 + 5
    assert g.seed(19, 19, 15) == 1_000_000 + 6399
    worlds = list(g.worlds())
    assert [w.rollout_index for w in worlds] == list(range(6400))
    assert len({w.world.seed for w in worlds}) == 6400


def test_cache_key_format():
    assert World(0.5, 80.0, 90.0, 2.0, 1_000_123).key == "v2|mu=0.5000|push=80.00|dir=90.00|t0=2.00|seed=1000123"
    assert cache_key(None, 0.0, 0.0, 2.0, 7) == "v2|mu=default|push=0.00|dir=0.00|t0=2.00|seed=7"


def test_rounding_and_clamp_ranges():
    g = Grid.build((0.051, 0.999), 2, (10.4, 199.6), 2, 1, push_dir=-272.0, push_t0=2.04)
    assert g.rows == (0.05, 1.0) and g.cols == (10.0, 200.0)
    assert g.push_dir == 90.0 and g.push_t0 == 2.0
    for kwargs, field in [
        (dict(mu_range=(0.01, 1.0)), "mu_range"),
        (dict(mu_range=(0.05, 2.5)), "mu_range"),
        (dict(push_range=(10, 400)), "push_range"),
        (dict(push_range=(-5, 100)), "push_range"),
        (dict(push_t0=4.5), "push_t0"),
        (dict(seeds_per_cell=0), "seeds_per_cell"),
        (dict(mu_range=(0.05, 0.07), n_mu=5), "mu_range"),  # values collide at 0.01
    ]:
        with pytest.raises(BadInput) as err:
            Grid.build(**kwargs)
        assert err.value.field == field


def test_stored_records_follow_the_seed_scheme(small_sweep, small_grid):
    store_root, _ = small_sweep
    n_push, spc = len(small_grid.cols), small_grid.seeds_per_cell
    with Store(store_root) as store:
        records = list(store.records("boundary"))
    assert len(records) == small_grid.n_rollouts
    for rec in records:
        w = rec.data["world"]
        cell = w["mu_idx"] * n_push + w["push_idx"]
        assert w["rollout_index"] == cell * spc + w["seed_idx"]
        assert w["seed"] == world_seed("boundary", cell, w["seed_idx"], seeds_per_cell=spc)
        assert w["seed"] == 1_000_000 + w["rollout_index"]
        assert w["cache_key"] == cache_key(w["mu"], w["push_pct"], w["push_dir"], w["push_t0"], w["seed"])
        assert w["mu"] == small_grid.rows[w["mu_idx"]] and w["push_pct"] == small_grid.cols[w["push_idx"]]


def test_world_from_checks_every_axis_by_name():
    from policylab.studies.boundary.axes import CATALOGUE
    from policylab.studies.boundary.world import world_from

    ok = {a.field: a.default for a in CATALOGUE if a.always_keyed}
    assert world_from({**ok, "mu": 0.734, "push_dir": 93}, 5_000_000) == World(0.73, 0.0, 95.0, 2.0, 5_000_000)
    for name, bad in (("mu", 2.5), ("push_pct", -1), ("push_t0", 9)):
        with pytest.raises(BadInput) as exc:
            world_from({**ok, name: bad}, 0)
        assert exc.value.field == name
    with pytest.raises(BadInput, match="push_t0: is required"):
        world_from({k: v for k, v in ok.items() if k != "push_t0"}, 0)
    with pytest.raises(BadInput, match="gravity: is not an axis of the world; the axes are mu, push_pct, "):
        world_from({**ok, "gravity": 1.0}, 0)
