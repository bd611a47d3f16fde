"""The `slow` tier, in one place; and the lock that keeps a local Ray to one test at a time.

`make test` runs everything; `make test-fast` (`pytest -m "not slow"`) leaves out the modules listed
here, each of which spends over about 15 s of a full run on a loaded 2-core machine (most of it in
real end-to-end runs their tests share: the demo's training loop, Lava Leap's 70 training runs,
calibration fits, ALE audits). A single slow test elsewhere carries `@pytest.mark.slow` itself.
"""

import fcntl
import os

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


@pytest.fixture
def one_local_ray(tmp_path_factory):
    """Held while a test starts a local Ray of its own. Under pytest-xdist (`make test` runs two
    workers) the workers share their base temp folder's parent: a second Ray test waits on the lock
    there, so two local Rays (each with its GCS, raylet and workers, both under /tmp/ray) never run
    at once."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    with open(shared / "local-ray.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield
