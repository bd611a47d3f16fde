"""A file written from parts (`atomic_write_bytes`) is their join, written atomically."""

import numpy as np

from policylab.fileio import atomic_write_bytes


def test_a_file_written_from_parts_is_their_join(tmp_path):
    rng = np.random.default_rng(0)
    parts = [rng.bytes(int(n)) for n in rng.integers(0, 3000, size=2500)]  # more parts than one writev takes
    atomic_write_bytes(tmp_path / "f", parts)
    assert (tmp_path / "f").read_bytes() == b"".join(parts)
    assert [p.name for p in tmp_path.iterdir()] == ["f"]  # no temp file left
