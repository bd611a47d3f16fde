"""The import graph keeps its shape: the contracts in pyproject.toml's [tool.importlinter] hold.

import-linter reads the graph statically (function-level imports included), so an import that only
hides a circle inside a function still breaks the contract.
"""

import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def test_import_contracts_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint_imports), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
