"""A run the machine cannot hold is refused in plain words, in units that fit the amounts."""

from __future__ import annotations

from collections import namedtuple

import pytest

import policylab.config
from policylab.config import amount, check_resources
from policylab.errors import BadInput

Usage = namedtuple("Usage", "total used free")


def test_amounts_read_plainly():
    assert [amount(n) for n in (0, 1, 999, 1_500, 3_200_000, 2_500_000_000)] == [
        "0 bytes",
        "1 byte",
        "999 bytes",
        "1.5 kB",
        "3.2 MB",
        "2.5 GB",
    ]


def test_a_small_disk_shortfall_is_said_in_megabytes(tmp_path, monkeypatch):
    monkeypatch.setattr(policylab.config.shutil, "disk_usage", lambda path: Usage(10**9, 10**9, 400_000))
    with pytest.raises(BadInput) as err:
        check_resources(0, 3_200_000, tmp_path / "out", "n_mu")
    assert err.value.field == "n_mu"
    assert err.value.message == (
        f"this run writes about 3.2 MB, but only 400.0 kB is free under {tmp_path} "
        "(free some space or make the run smaller)"
    )


def test_a_memory_shortfall_names_both_amounts(tmp_path, monkeypatch):
    monkeypatch.setattr(policylab.config, "available_memory", lambda: 10 * 2**20)
    with pytest.raises(BadInput, match=r"needs about 2\.0 GB of memory, but only 10\.5 MB is available"):
        check_resources(2 * 10**9, 0, tmp_path, "chunk")
