"""One plan per command: the request models check the schema alone, and each command's `plan(request)`
resolves the checkpoint (on its robot, with its command) and the grid or rows once, raising one `BadInput`
that names the field; the stages take the plan and resolve nothing again."""

from __future__ import annotations

import json

import pytest

from policylab.config import validated
from policylab.errors import BadInput
from policylab.rollout.store import Store
from policylab.studies.boundary import checkpoint, records, requests, search, sweep, threshold_data, verify
from tests.support.boundary_fixtures import cli

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
