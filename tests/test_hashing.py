"""Canonical JSON, the one encoder of keys and records: every kind of value, on every path the encoder
takes, gives the reference bytes; a `FrozenJSON` part is spliced as the text it carries and stays
read-only; hashes are of those bytes."""

from __future__ import annotations

import collections
import enum
import json
import pickle

import numpy as np
import pytest

from policylab.envs.breakout.params import load_preset
from policylab.hashing import FrozenJSON, _plain, canonical_json, hash_obj, sha256_hex


def _reference(value) -> str:
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


class _Level(enum.IntEnum):
    HIGH = 3


def test_every_path_of_the_encoder_writes_the_reference_bytes():
    """The C encoder's path, the walk that splices `FrozenJSON` text and the made-plain path write what the
    reference (the value made plain, then json.dumps with sorted keys and compact separators) writes."""
    physics = load_preset("atari-cal").physics()
    values = [
        None,
        True,
        False,
        0,
        -7,
        2**70,
        1.5,
        -0.0,
        1e-310,
        1e300,
        float("nan"),
        float("inf"),
        -float("inf"),
        "plain",
        '\u00e9\u4e2d\U0001f600 "quoted" \\ \n\t\x00',
        "",
        [],
        {},
        (),
        [1, (2, 3.5), [None]],
        {"b": 1, "a": {"d": [1.0, {"z": True}], "c": None}, "": 0},
        {1: "int key", "1": "str key"},
        {True: 1, None: 2, 2.5: 3},  # non-str keys: canonical_json decides
        np.float32(1.1),
        np.int64(3),
        np.bool_(True),
        np.arange(3),
        {"a": np.float64(np.nan)},
        _Level.HIGH,
        collections.OrderedDict([("b", 1), ("a", 2)]),
        {"s": type("S", (str,), {})("sub")},
        physics,
        {"physics": FrozenJSON(physics), "seed": 7, "list": [FrozenJSON({"x": 1})]},
    ]
    for value in values:
        assert canonical_json(value) == _reference(value), value


def test_a_frozen_part_is_read_only_pickles_and_hashes_as_its_dict():
    frozen = FrozenJSON({"b": [1, 2.5], "a": None})
    assert frozen.canonical == '{"a":null,"b":[1,2.5]}' == canonical_json(dict(frozen))
    with pytest.raises(TypeError):
        frozen["c"] = 1
    assert pickle.loads(pickle.dumps(frozen)).canonical == frozen.canonical
    assert hash_obj({"x": frozen}) == sha256_hex(b'{"x":{"a":null,"b":[1,2.5]}}')[:16] == hash_obj({"x": dict(frozen)})
