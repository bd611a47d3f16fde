"""Canonical JSON and content hashes: everything hashed goes through `canonical_json`.

`FrozenJSON` carries a large shared part's canonical JSON (a shadow world's 3 KB physics), serialized once."""

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


def _dumps(plain: Any) -> str:
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON of `obj` (ASCII-escaped strings, the repr of ints and finite floats); NaN
    and infinities become null, numpy values and tuples their plain JSON, other keys text.

    The one encoder of keys and records. Plain JSON (exact dict with str keys, list, tuple, str, int,
    float, bool, None) goes through the json module's C encoder; a `FrozenJSON` part is spliced in as the
    text it carries; anything else is made plain first. The bytes are the same whichever way a value goes
    (tests/test_hashing.py)."""
    if _str_keys(obj):
        try:
            return _c_encode(obj)
        except ValueError:  # a NaN or an infinity, written as null below
            pass
    parts: list[str] = []
    _walk(obj, parts)
    return "".join(parts)


class FrozenJSON(dict):
    """A read-only dict that carries its canonical JSON (`.canonical`), computed once, here.

    `canonical_json` (and so `rollout_key` and `Store.put`) splices that text in instead of serializing
    the dict again. Its values must not be changed after construction (the dict itself refuses).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.canonical = canonical_json(dict(self))

    def _read_only(self, *args: Any, **kwargs: Any):
        raise TypeError("FrozenJSON is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore

    def __reduce__(self):
        return FrozenJSON, (dict(self),)


# The json module's C encoder writes what `_walk` writes for plain JSON whose keys are all str
# (other keys it would turn into text after sorting them), about ten times faster. Called directly
# (`json.JSONEncoder.encode` makes one per call), with no check for cycles: plain JSON has none.
_C_ENCODER = json.encoder.c_make_encoder(
    None, None, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, False
)


def _c_encode(obj: Any) -> str:
    return "".join(_C_ENCODER(obj, 0))


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _str_keys(obj: Any) -> bool:
    """Whether `obj` is plain JSON (dict, list, tuple, str, int, float, bool, None; subclasses
    count as other types) with str keys at every level. A `FrozenJSON` part is not: `_walk`
    splices its text in, faster than encoding it again."""
    t = type(obj)
    if t is dict:
        for k, v in obj.items():
            if type(k) is not str or (type(v) not in _SCALARS and not _str_keys(v)):
                return False
        return True
    if t is list or t is tuple:
        for v in obj:
            if type(v) not in _SCALARS and not _str_keys(v):
                return False
        return True
    return t in _SCALARS


json_string = json.encoder.encode_basestring_ascii  # one str as canonical JSON writes it


def _walk(obj: Any, out: list) -> None:
    t = type(obj)
    if t is str:
        out.append(json_string(obj))
    elif t is FrozenJSON:
        out.append(obj.canonical)
    elif t is dict and all(type(k) is str for k in obj):
        out.append("{")
        for i, k in enumerate(sorted(obj)):
            out.append(("," if i else "") + json_string(k) + ":")
            _walk(obj[k], out)
        out.append("}")
    elif t is list or t is tuple:
        out.append("[")
        for i, v in enumerate(obj):
            if i:
                out.append(",")
            _walk(v, out)
        out.append("]")
    elif t is int:
        out.append(int.__repr__(obj))
    elif t is float:
        out.append(float.__repr__(obj) if math.isfinite(obj) else "null")
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    else:
        out.append(_dumps(_plain(obj)))


def pretty_json(obj: Any) -> str:
    """Indented, sorted JSON for files a person reads; same content rules as `canonical_json`."""
    return json.dumps(_plain(obj), sort_keys=True, indent=2, allow_nan=False) + "\n"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_obj(obj: Any, length: int = 16) -> str:
    """Short content hash of a JSON-able object (hex, `length` characters)."""
    return sha256_hex(canonical_json(obj).encode())[:length]
