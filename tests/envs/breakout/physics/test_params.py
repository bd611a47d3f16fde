"""The shadow kernel's parameters come from one declaration, `ShadowParams`: the record the kernels read
(`kernel_params`) has a column for every physics field (and the length of every list), holds each shipped
preset's values, and the kernel reads no name the declaration lacks. The calibration writes presets for this
kernel, so a field it fits that never reached the kernel would be fitted for nothing."""

from __future__ import annotations

import inspect
import re
import typing
from typing import Literal

import numpy as np
import pytest

from policylab.envs.breakout.params import load_preset, preset_names
from policylab.envs.breakout.physics import kernel as physics_kernel
from policylab.envs.breakout.physics.params import KERNEL_DTYPE, KERNEL_FIELDS, ShadowParams, kernel_params

PHYSICS_PRESETS = [n for n in preset_names() if isinstance(load_preset(n), ShadowParams)]


def test_every_physics_field_has_a_column_every_list_its_length_and_every_choice_its_flag():
    kinds = {k: typing.get_origin(v.annotation) for k, v in KERNEL_FIELDS.items()}
    choices = {
        f"{k}_{c}" for k, v in KERNEL_FIELDS.items() if kinds[k] is Literal for c in typing.get_args(v.annotation)
    }
    assert set(KERNEL_FIELDS) == set(ShadowParams.model_fields) - {"name"}
    assert set(KERNEL_DTYPE.names) == (
        {k for k in KERNEL_FIELDS if kinds[k] is not Literal}
        | choices
        | {f"n_{k}" for k in KERNEL_FIELDS if kinds[k] is list}
    )


@pytest.mark.parametrize("preset", PHYSICS_PRESETS)
def test_the_record_holds_the_preset(preset):
    p = load_preset(preset)
    rec = kernel_params(p)
    for name, info in KERNEL_FIELDS.items():
        value = getattr(p, name)
        if typing.get_origin(info.annotation) is Literal:
            assert [rec[f"{name}_{c}"] for c in typing.get_args(info.annotation)] == [
                c == value for c in typing.get_args(info.annotation)
            ], name
        elif typing.get_origin(info.annotation) is list:
            n = len(value)
            assert rec[f"n_{name}"] == n and np.array_equal(
                rec[name][:n], np.asarray(value).reshape(rec[name][:n].shape)
            )
            assert not rec[name][n:].any(), name
        else:
            assert np.array_equal(rec[name], value), name


def test_the_kernel_reads_only_declared_names():
    read = set(re.findall(r"\bp\.(\w+)", inspect.getsource(physics_kernel)))
    assert read and read <= set(KERNEL_DTYPE.names)


def test_preset_digests_are_unchanged():
    """A world's key hashes the preset's physics (`digest`): stores keyed on these stay valid only while they
    hold (docs/design.md, "Key versions"). `ale-exact` is keyed by its `RomParams` (key version 2); its
    version-1 digest is checked in tests/envs/breakout/rom/test_params.py."""
    assert {n: load_preset(n).digest() for n in preset_names()} == {
        "atari": "6370268ec781c31a",
        "atari-cal": "94bc393353af701c",
        "go-v1": "291aede04a34cadf",
        "ale-exact": "c46e18502e2614bb",
    }
