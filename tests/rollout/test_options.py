"""The executor option group is declared once and means the same in every study's requests."""

from __future__ import annotations

import typing

import pytest

from policylab.config import Request, validated
from policylab.errors import BadInput
from policylab.rollout import executors
from policylab.rollout.options import MAX_RAY_ADDRESS, Executor, ExecutorOption, RayAddress
from policylab.studies.boundary import requests as boundary
from policylab.studies.breakout import requests as breakout


def test_the_choices_are_the_executors():
    assert typing.get_args(Executor) == executors.EXECUTORS


def test_every_request_with_an_executor_declares_the_group():
    """One schema for --executor and --ray-address (one Ray address length) wherever a request has them."""
    models = [
        m
        for module in (boundary, breakout)
        for m in vars(module).values()
        if isinstance(m, type) and issubclass(m, Request) and "executor" in m.model_fields
    ]
    assert boundary.SweepRequest in models and breakout.TrainRequest in models
    for model in models:
        field = model.model_fields["executor"]
        assert field.annotation == Executor and field.description, model.__name__
        if "ray_address" in model.model_fields:
            meta = model.model_fields["ray_address"].metadata
            assert any(getattr(m, "max_length", None) == MAX_RAY_ADDRESS for m in meta), model.__name__


class _Runs(Request):
    executor: ExecutorOption = "local"
    ray_address: RayAddress = None


def test_the_address_is_bounded_and_checked_with_the_executor():
    with pytest.raises(BadInput) as exc:
        validated(_Runs, {"executor": "ray", "ray_address": "x" * (MAX_RAY_ADDRESS + 1)})
    assert exc.value.field == "ray_address"
    req = validated(_Runs, {"ray_address": "127.0.0.1:1"})  # the pairing is the plan's check
    with pytest.raises(BadInput) as exc:
        executors.check_executor(req.executor, req.ray_address)
    assert exc.value.field == "ray_address"
