"""The slow tier names real modules: a renamed or moved module would otherwise fall silently into
the fast tier."""

from tests.conftest import SLOW_MODULES
from tests.support.paths import ROOT


def test_every_slow_module_exists():
    missing = sorted(m for m in SLOW_MODULES if not (ROOT / m).is_file())
    assert not missing, f"tests/conftest.py lists modules that do not exist: {missing}"
