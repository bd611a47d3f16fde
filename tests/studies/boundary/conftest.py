"""Session fixtures of the boundary study's tests: one small real sweep (4 x 4 x 4 worlds) per session."""

import pytest

from policylab.studies.boundary import sweep
from policylab.studies.boundary.checkpoint import resolve_checkpoint
from policylab.studies.boundary.world import Grid

SMALL = dict(mu_range=(0.05, 1.00), n_mu=4, push_range=(10, 200), n_push=4, seeds_per_cell=4)


@pytest.fixture(scope="session")
def small_grid():
    return Grid.build(**SMALL)


@pytest.fixture(scope="session")
def v0():
    return resolve_checkpoint("ant_v0")


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory, small_grid, v0):
    """(store root, summary) of an uninterrupted 64-world sweep of ant_v0, chunks of 16."""
    root = tmp_path_factory.mktemp("boundary")
    summary = sweep.run_sweep(small_grid, v0, root / "store", root / "out", chunk=16)
    return root / "store", summary
