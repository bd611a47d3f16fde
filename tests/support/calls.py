"""Counting how often a command resolves its input: each command's plan resolves a name once, so a stage
that resolved it again shows up as a second call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from types import ModuleType

import pytest


def counted_calls(
    monkeypatch: pytest.MonkeyPatch, targets: Iterable[tuple[str, str, tuple[ModuleType, ...]]]
) -> Counter:
    """Calls by kind: for each (kind, name, modules) the function `name` of the first module, counted under
    `kind`, replaces `name` in every module that binds it (a `from ... import name` copy is its own binding)."""
    calls: Counter = Counter()
    for kind, name, homes in targets:
        real = getattr(homes[0], name)

        def call(*args, _kind=kind, _real=real, **kwargs):
            calls[_kind] += 1
            return _real(*args, **kwargs)

        for home in homes:
            monkeypatch.setattr(home, name, call)
    return calls
