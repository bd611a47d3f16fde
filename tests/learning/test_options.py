"""The PPO options are declared once: both studies' learn requests carry the same fields with the same
bounds (their own defaults), and `ppo.Settings` reads its fields from them."""

from __future__ import annotations

import dataclasses

from policylab.learning import options
from policylab.learning.ppo import Settings
from policylab.studies.boundary.requests import LearnRequest as BoundaryLearn
from policylab.studies.breakout.requests import LearnRequest as BreakoutLearn

PPO_FIELDS = (*options.SETTINGS, "gamma", "gae_lambda")


def test_settings_are_the_declared_options():
    assert tuple(f.name for f in dataclasses.fields(Settings)) == options.SETTINGS


def _bounds(field) -> list[tuple[str, object]]:
    return sorted(
        (attr, getattr(m, attr))
        for m in field.metadata
        for attr in ("ge", "gt", "le", "lt")
        if getattr(m, attr, None) is not None
    )


def test_both_learn_requests_share_the_schema():
    for name in PPO_FIELDS:
        a, b = BoundaryLearn.model_fields[name], BreakoutLearn.model_fields[name]
        assert a.annotation == b.annotation and _bounds(a) == _bounds(b) and _bounds(a), name
        assert a.description and b.description, name


def test_settings_of_a_request(tmp_path):
    req = BoundaryLearn(out=tmp_path / "r")
    s = Settings.of(req)
    assert (s.lr, s.epochs, s.minibatch, s.max_grad_norm) == (3e-4, 4, 8192, 1.0)  # the boundary study's defaults
    assert Settings.of(BreakoutLearn(out=tmp_path / "b")).lr == 2.5e-3
