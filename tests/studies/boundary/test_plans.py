"""One plan per command: the request models check the schema alone, and each command's `plan(request)`
resolves the checkpoint (on its robot, with its command), the grid or rows, or the stored sweep it names
once, raising one `BadInput` that names the field; the stages take the plan and resolve nothing again."""

from __future__ import annotations

import json
import shutil
from dataclasses import FrozenInstanceError

import pytest

from policylab.config import validated
from policylab.errors import BadInput
from policylab.rollout.store import Store
from policylab.studies.boundary import (
    checkpoint,
    diff,
    probe,
    probe_view,
    records,
    reduce,
    replay,
    requests,
    search,
    sweep,
    threshold_data,
    verify,
)
from tests.support.boundary_fixtures import cli, make_sweep
from tests.support.calls import counted_calls

PLANS = {
    "sweep": (requests.SweepRequest, sweep.plan),
    "search": (requests.SearchRequest, search.plan),
    "verify": (requests.VerifyRequest, verify.plan),
    "calibrate": (requests.CalibrateRequest, threshold_data.plan),
}


@pytest.mark.parametrize("command", PLANS)
@pytest.mark.parametrize("spec", ["ant_v9", "missing.npz"])
def test_a_bad_checkpoint_is_one_bad_input_of_the_plan(tmp_path, command, spec):
    """The model takes any checkpoint string (schema only); the plan refuses it, naming `checkpoint`."""
    model, plan = PLANS[command]
    store = tmp_path / "store"
    Store(store).close()  # verify reads a store; the others may resume one
    fields = {"robot": "ant", "checkpoint": spec, "out": tmp_path / "out"}
    if "store" in model.model_fields:
        fields["store"] = store
    req = validated(model, fields)
    with pytest.raises(BadInput) as exc:
        plan(req)
    assert exc.value.field == "checkpoint" and spec in exc.value.message
    assert not (tmp_path / "out").exists()


def test_the_sweep_plan_resolves_the_grid_with_the_options_names(tmp_path):
    req = validated(
        requests.SweepRequest, {"mu_min": 0.05, "mu_max": 0.07, "n_mu": 5, "store": tmp_path / "s", "out": tmp_path}
    )  # five frictions in 0.05-0.07 collide at the resolution 0.01: the grid says so, under --n-mu
    with pytest.raises(BadInput) as exc:
        sweep.plan(req)
    assert exc.value.field == "n_mu"
    bad_rows = validated(requests.SearchRequest, {"rows": ["nope=1:2:3"], "store": tmp_path / "s", "out": tmp_path})
    with pytest.raises(BadInput) as exc:
        search.plan(bad_rows)
    assert exc.value.field == "rows"


@pytest.fixture
def resolutions(monkeypatch):
    """How many times a checkpoint is resolved: every resolution (a committed name, a path, a stored sweep's
    copy) ends in `checkpoint.checkpoint_on`, once."""
    calls = []
    real = checkpoint.checkpoint_on

    def counted(spec, rob):
        calls.append(spec)
        return real(spec, rob)

    monkeypatch.setattr(checkpoint, "checkpoint_on", counted)
    monkeypatch.setattr(records, "checkpoint_on", counted)
    return calls


def test_each_command_resolves_its_checkpoint_once(tmp_path, resolutions):
    store, runs = tmp_path / "store", tmp_path / "runs"
    grid = ["--n-mu", "1", "--n-push", "2", "--seeds-per-cell", "1"]
    ran = cli("sweep", "--robot", "ant", "--checkpoint", "ant_v0", *grid, "--store", store, "--out", runs / "sweep")
    assert ran.returncode == 0, ran.stderr
    assert len(resolutions) == 1
    assert json.loads((runs / "sweep" / "config.json").read_text())["checkpoint"]["name"] == "ant_v0"

    resolutions.clear()  # a stored sweep's name, resolved in the store
    ran = cli("verify", "--checkpoint", "ant_v0", "--store", store, "--sample", "1", "--out", runs / "verify")
    assert ran.returncode == 0, ran.stderr
    assert len(resolutions) == 1

    resolutions.clear()
    ran = cli(
        "search",
        "--robot",
        "ant",
        "--checkpoint",
        "ant_v0",
        "--rows",
        "friction=0.5",
        "--budget",
        "2",
        "--batch",
        "2",
        "--store",
        store,
        "--out",
        runs / "search",
    )
    assert ran.returncode == 0, ran.stderr
    assert len(resolutions) == 1

    resolutions.clear()
    ran = cli("calibrate", "--robot", "ant", "--n-nominal", "1", "--n-pushed", "1", "--out", runs / "calibrate")
    assert ran.returncode == 0, ran.stderr
    assert len(resolutions) == 1


# -- the commands that read a stored sweep: reduce, diff, replay, probe ------------------------------------


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A store holding small sweeps of pd_soft and pd_limp on one grid (with their equivalence gates), and an
    analysis folder of pd_soft, reduced and selected."""
    base = tmp_path_factory.mktemp("plans")
    for name in ("pd_soft", "pd_limp"):
        make_sweep(base, name, (1.0, 1.0), 1, (20, 300), 2, 2)
    for args in (("reduce", "--store", base / "store", "--checkpoint", "pd_soft"), ("select",)):
        ran = cli(*args, "--out", base / "ana")
        assert ran.returncode == 0, ran.stderr
    return base


def _bad(plan, model, fields):
    """The one `BadInput` that `plan` raises on the request `fields` make."""
    with pytest.raises(BadInput) as exc:
        plan(validated(model, fields))
    return exc.value


def test_a_stored_name_is_one_bad_input_of_the_plan(stored, tmp_path):
    """The models take any name (schema only); each plan resolves it in the store, naming the option."""
    store, out = stored / "store", tmp_path / "out"
    bad = _bad(reduce.plan, requests.ReduceRequest, {"store": store, "checkpoint": "nope", "out": out})
    assert bad.field == "checkpoint" and "nope" in bad.message
    for side in ("a", "b"):
        names = {"a": "pd_soft", "b": "pd_limp", side: "nope"}
        bad = _bad(diff.plan, requests.DiffRequest, {"store": store, **names, "out": out})
        assert bad.field == side and "nope" in bad.message
    # the name and the path of one policy file differ as text and resolve to one sweep
    same = {"a": "pd_soft", "b": str(stored / "checkpoints" / "pd_soft.npz")}
    assert _bad(diff.plan, requests.DiffRequest, {"store": store, **same, "out": out}).field == "b"
    other = str(stored / "checkpoints" / "pd_limp.npz")  # not the file the analysed sweep was made with
    bad = _bad(replay.plan, requests.ReplayRequest, {"out": stored / "ana", "checkpoint": other})
    assert bad.field == "checkpoint" and "sha256" in bad.message
    Store(tmp_path / "empty").close()
    assert _bad(probe.plan, requests.ProbeRequest, {"store": tmp_path / "empty", "out": out}).field == "store"
    assert not out.exists() and not (stored / "ana" / "replay").exists()


def test_plans_are_frozen(stored, tmp_path):
    store = stored / "store"
    plans = [
        reduce.plan(validated(requests.ReduceRequest, {"store": store, "checkpoint": "pd_soft", "out": tmp_path})),
        diff.plan(validated(requests.DiffRequest, {"store": store, "a": "pd_soft", "b": "pd_limp", "out": tmp_path})),
        replay.plan(validated(requests.ReplayRequest, {"out": stored / "ana"})),
        probe.plan(validated(requests.ProbeRequest, {"store": store, "out": tmp_path / "probe"})),
    ]
    for p in plans:
        with pytest.raises(FrozenInstanceError):
            p.req = None


@pytest.fixture
def reads(monkeypatch):
    """What each command resolves, by kind: a stored sweep read (`reduce.load_sweep`: its name, robot, grid and
    records), a sweep's robot rebuilt from its meta (`records.robot_from_meta`) and a checkpoint resolved
    (`checkpoint.checkpoint_on`), counted wherever the modules call them."""
    return counted_calls(
        monkeypatch,
        (
            ("sweep", "load_sweep", (reduce,)),
            ("robot", "robot_from_meta", (records, reduce, probe_view)),
            ("checkpoint", "checkpoint_on", (checkpoint, records, probe_view)),
        ),
    )


def test_each_analysis_command_resolves_its_sweep_once(stored, tmp_path, reads):
    store = stored / "store"
    ran = cli("reduce", "--store", store, "--checkpoint", "pd_limp", "--out", tmp_path / "reduce")
    assert ran.returncode == 0, ran.stderr
    assert reads == {"sweep": 1, "robot": 1}

    reads.clear()  # each side once (the sweeps were read twice before the plan: checked, then reduced)
    ran = cli("diff", "--store", store, "--a", "pd_soft", "--b", "pd_limp", "--out", tmp_path / "diff")
    assert ran.returncode == 0, ran.stderr
    assert reads == {"sweep": 2, "robot": 2}

    reads.clear()  # --verify: the sweep's robot and its kept policy file, once
    ana = shutil.copytree(stored / "ana", tmp_path / "ana")  # the module's folder stays unreplayed, in any order
    ran = cli("replay", "--out", ana)
    assert ran.returncode == 0, ran.stderr
    assert reads == {"robot": 1, "checkpoint": 1}

    reads.clear()  # the probe's first playable checkpoint (the maps are the page's, reduced later)
    probe.plan(validated(requests.ProbeRequest, {"store": store, "out": tmp_path / "probe"}))
    assert reads == {"robot": 1, "checkpoint": 1}
