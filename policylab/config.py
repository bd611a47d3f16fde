"""Validated configs at the boundary, and output folders that refuse to mix runs.

Commands build a pydantic model from their options; a validation error becomes a `BadInput` that
names the field, so the CLI prints one line and exits 2 before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, TypeVar

import pydantic

from policylab.errors import BadInput
from policylab.fileio import write_json
from policylab.hashing import canonical_json

M = TypeVar("M", bound=pydantic.BaseModel)


class StrictModel(pydantic.BaseModel):
    """Base for configs: unknown fields are errors, values are validated on assignment."""

    model_config = pydantic.ConfigDict(extra="forbid", validate_assignment=True, frozen=True)


def validated(model: type[M], data: Mapping[str, Any]) -> M:
    """Build `model` from `data`, turning the first validation error into a one-line `BadInput`."""
    try:
        return model.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or model.__name__
        raise BadInput(field, err.get("msg", "invalid value")) from None


def load_json_file(path: str | Path, field: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise BadInput(field, f"file not found: {p}")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise BadInput(field, f"{p} is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def claim_out_dir(out: str | Path, config: Mapping[str, Any], name: str = "config.json") -> Path:
    """Check that `out` is new, empty, or holds a run of this same config; then record the config.

    Call it after every other check passed: it is the first write a command makes.
    """
    out = Path(out)
    cfg_path = out / name
    if out.exists():
        if not out.is_dir():
            raise BadInput("out", f"{out} exists and is not a folder")
        if cfg_path.exists():
            try:
                previous = json.loads(cfg_path.read_text())
            except json.JSONDecodeError:
                previous = None
            if previous is None or canonical_json(previous) != canonical_json(config):
                raise BadInput("out", f"{out} holds a run made with a different config; choose a new --out")
        elif any(out.iterdir()):
            raise BadInput("out", f"{out} is not empty and holds no {name}; choose a new --out")
    write_json(cfg_path, config)
    return out
