"""The `slow` tier, in one place.

`make test` runs everything; `make test-fast` (`pytest -m "not slow"`) leaves out the modules listed
here, each of which spends over about 15 s of a full run on a loaded 2-core machine (most of it in
real end-to-end runs their tests share: the demo's training loop, Lava Leap's 70 training runs,
calibration fits, ALE audits). A single slow test elsewhere carries `@pytest.mark.slow` itself.
"""

import pytest

SLOW_MODULES = {
    "tests/rollout/test_interrupts.py",
    "tests/studies/boundary/test_sweep_resume.py",
    "tests/studies/boundary/test_verify.py",
    "tests/studies/breakout/audit/test_audit.py",
    "tests/studies/breakout/audit/test_audit_conclusions.py",
    "tests/studies/breakout/episodes/test_network_policy.py",
    "tests/studies/breakout/fidelity/calibration/test_calibrate.py",
    "tests/studies/breakout/fidelity/calibration/test_fit.py",
    "tests/studies/breakout/learn/test_transfer.py",
    "tests/studies/breakout/search/test_train.py",
    "tests/studies/lava_leap/test_claims.py",
    "tests/studies/lava_leap/test_resume.py",
    "tests/studies/lava_leap/test_run_outputs.py",
    "tests/studies/test_demo.py",
}


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
