"""Canonical JSON and content hashes.

Keys and provenance hashes must not depend on dict order, float formatting quirks or the time of
day, so everything that is hashed goes through `canonical_json` first.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np


def _plain(obj: Any) -> Any:
    """Turn numpy scalars/arrays and tuples into plain JSON types (recursively)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        if math.isnan(value) or math.isinf(value):
            return None
        return value
    return obj


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON of `obj`; NaN and infinities become null."""
    return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def pretty_json(obj: Any) -> str:
    """Indented, sorted JSON for files a person reads; same content rules as `canonical_json`."""
    return json.dumps(_plain(obj), sort_keys=True, indent=2, allow_nan=False) + "\n"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_obj(obj: Any, length: int = 16) -> str:
    """Short content hash of a JSON-able object (hex, `length` characters)."""
    return sha256_hex(canonical_json(obj).encode())[:length]
