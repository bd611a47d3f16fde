"""The calibration package's structure: its imports run one way (no module of it is part of an import circle,
lazy imports inside functions included), and `policylab breakout calibrate` targets its command module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import policylab

ROOT = Path(policylab.__file__).parent
PACKAGE = "policylab.studies.breakout.fidelity.calibration"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """policylab module -> the policylab modules it imports anywhere in its source (a `from X import Y`
    counts X.Y when that is a module, else X)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps |= {
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                }
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), list(graph[start])
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return False


def test_no_calibration_module_is_in_an_import_circle():
    graph = import_graph()
    ours = sorted(m for m in graph if m.startswith(PACKAGE + "."))
    assert {m.rsplit(".", 1)[1] for m in ours} == {"identify", "metrics", "fit", "calibrate", "report"}
    assert [m for m in ours if _reaches(graph, m, m)] == []


def test_the_cli_targets_the_calibrate_module():
    src = (ROOT / "cli" / "breakout.py").read_text()
    assert f'"{PACKAGE}.calibrate:run"' in src
    module, _, attr = f"{PACKAGE}.calibrate:run".partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
