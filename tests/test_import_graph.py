"""The import graph keeps its shape: the contracts in pyproject.toml's [tool.importlinter] hold.

import-linter reads the graph statically (function-level imports included), so an import that only
hides a circle inside a function still breaks the contract. It runs in this process (its own entry
point, without the cost of starting one).
"""

from importlinter.cli import lint_imports

from tests.support.paths import ROOT


def test_import_contracts_hold(capsys):
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
