"""Configs and output folders are validated at the boundary."""

import json

import pytest

from policylab.config import StrictModel, claim_out_dir, validated
from policylab.errors import BadInput


class Cfg(StrictModel):
    episodes: int
    name: str = "x"


def test_validated_names_the_field():
    assert validated(Cfg, {"episodes": 3}).episodes == 3
    with pytest.raises(BadInput) as exc:
        validated(Cfg, {"episodes": 3, "bogus": 1})
    assert exc.value.field == "bogus"


def test_claim_out_dir(tmp_path):
    out = tmp_path / "run"
    claim_out_dir(out, {"a": 1})
    assert json.loads((out / "config.json").read_text()) == {"a": 1}
    claim_out_dir(out, {"a": 1})  # same config: fine (resume)
    with pytest.raises(BadInput, match="different config"):
        claim_out_dir(out, {"a": 2})
    other = tmp_path / "full"
    other.mkdir()
    (other / "x.txt").write_text("hi")
    with pytest.raises(BadInput, match="not empty"):
        claim_out_dir(other, {"a": 1})
