"""One plan per Breakout command: the request models check the schema alone, and each command's
`plan(request)` resolves the protocol, the policy (a registered name with its parameters, or a network file)
and the shadow preset once, into a frozen object, raising one `BadInput` that names the field before anything
is written; the stages take the plan and resolve nothing again."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from policylab.cli import invoke
from policylab.config import validated
from policylab.errors import BadInput
from policylab.policies.breakout_net import NetObsSpec
from policylab.studies.breakout import options, requests
from policylab.studies.breakout.audit import audit
from policylab.studies.breakout.episodes import eval as eval_
from policylab.studies.breakout.episodes import runner
from policylab.studies.breakout.learn import plan as learn_plan
from policylab.studies.breakout.learn import transfer
from policylab.studies.breakout.search import train
from tests.support.calls import counted_calls
from tests.support.paths import ROOT

V3 = "breakout_policy_v3"
NETWORK = str(ROOT / "tests" / "data" / "breakout_cnn_ppo.onnx")  # a committed network file, read, never played
PLANS = {
    "eval": (requests.EvalRequest, eval_.plan, {"env": "shadow", "policy": V3, "episodes": 1}),
    "audit": (requests.AuditRequest, audit.plan, {"policy": V3}),
    "transfer": (requests.TransferRequest, transfer.plan, {"policy": NETWORK}),
    "train": (requests.TrainRequest, train.plan, {}),
    "learn": (requests.LearnRequest, learn_plan.plan, {}),
}


def _request(command: str, out, **fields):
    model, _, given = PLANS[command]
    return validated(model, {**given, "out": out, **fields})


@pytest.mark.parametrize("command", PLANS)
def test_a_bad_preset_is_one_bad_input_of_the_plan(tmp_path, command):
    """The model takes any preset string (schema only); the plan resolves it, naming `preset`."""
    req = _request(command, tmp_path / "out", preset="no-such-preset")
    with pytest.raises(BadInput) as exc:
        PLANS[command][1](req)
    assert exc.value.field == "preset" and "no-such-preset" in exc.value.message
    assert not (tmp_path / "out").exists()


def test_transfer_refuses_a_registered_policy_in_its_plan(tmp_path):
    with pytest.raises(BadInput) as exc:
        transfer.plan(_request("transfer", tmp_path / "out", policy=V3))
    assert exc.value.field == "policy" and V3 in exc.value.message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", PLANS)
def test_plans_are_frozen(tmp_path, command):
    p = PLANS[command][1](_request(command, tmp_path / "out"))
    with pytest.raises(FrozenInstanceError):
        p.req = None
    assert p.req.out == tmp_path / "out"


def test_one_protocol_for_the_same_options(tmp_path):
    """learn, which has no --serve, plays the protocol every other command builds (`options.protocol_from`)."""
    for named in ({}, {"protocol": "v5"}, {"max_steps": 50, "sticky": 0.0}):
        protocols = {
            command: PLANS[command][1](_request(command, tmp_path / command, **named)).protocol
            for command in ("train", "learn")
        }
        assert protocols["learn"] == protocols["train"] == options.protocol_from(_request("eval", tmp_path, **named))


@pytest.fixture
def resolutions(monkeypatch):
    """How many times each command resolves a preset (`load_preset`), a registered policy's parameters
    (`load_params`) and a network file (`breakout_net.read`), counted wherever a plan or a stage calls them
    (the request model's own check that a network file reads aside)."""
    return counted_calls(
        monkeypatch,
        (
            ("preset", "load_preset", (options, runner, transfer)),
            ("params", "load_params", (options,)),
            ("network", "read", (options, transfer)),
        ),
    )


def _breakout(*args) -> None:
    assert invoke(["breakout", *map(str, args)]) == 0


def test_eval_and_audit_resolve_their_policy_and_preset_once(tmp_path, resolutions):
    _breakout("eval", "--env", "shadow", "--policy", V3, "--episodes", 1, "--max-steps", 50, "--out", tmp_path / "e")
    assert resolutions == {"preset": 1, "params": 1}
    resolutions.clear()
    _breakout("audit", "--policy", V3, "--episodes", 1, "--max-steps", 50, "--out", tmp_path / "a")
    assert resolutions == {"preset": 1, "params": 1}


@pytest.mark.slow
def test_transfer_resolves_its_network_and_preset_once(tmp_path, resolutions):
    from tests.support.breakout_nets import export, torch_mlp

    spec = NetObsSpec(history=1, wall=False)
    export(torch_mlp(spec, 0), spec, tmp_path / "net.onnx")
    sizes = ("--episodes", 1, "--gap-episodes", 2, "--exact-episodes", 2, "--max-steps", 50)
    _breakout("transfer", "--policy", tmp_path / "net.onnx", *sizes, "--out", tmp_path / "t")
    assert resolutions == {"preset": 1, "network": 1}
