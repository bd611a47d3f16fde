"""One store, several commands: two sweeps started at once (real processes) either share the work
(same grid) or one is refused (another grid), never both writing their meta; an archived read-only
store is analysed without a write; a damaged payload stops a command with one line naming
`policylab store check`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from policylab.rollout.store import Store
from policylab.studies.boundary.records import meta_name
from tests.support.boundary_fixtures import cli

SWEEP = [
    sys.executable,
    "-m",
    "policylab.cli",
    "boundary",
    "sweep",
    "--checkpoint",
    "ant_v0",
    "--n-push",
    "2",
    "--seeds-per-cell",
    "2",
    "--chunk",
    "2",
]


def _both(store: Path, tmp: Path, grids: tuple[str, str]) -> list[subprocess.CompletedProcess]:
    procs = [
        subprocess.Popen(
            SWEEP + ["--n-mu", n, "--store", str(store), "--out", str(tmp / f"out{i}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, n in enumerate(grids)
    ]
    return [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]


def test_two_sweeps_of_other_grids_at_once_one_is_refused(tmp_path):
    done = _both(tmp_path / "store", tmp_path, ("2", "3"))
    codes = [c for c, _, _ in done]
    assert sorted(codes) == [0, 2], done
    winner = codes.index(0)
    refused = done[1 - winner][2].strip().splitlines()
    assert len(refused) == 1 and "another grid" in refused[0]
    with Store(tmp_path / "store") as store:
        assert len(store.get_meta(meta_name("ant_v0"))["grid"]["mus"]) == (2, 3)[winner]
        assert len(store.keys()) == (2, 3)[winner] * 2 * 2
    rerun = subprocess.run(
        SWEEP
        + ["--n-mu", ("2", "3")[winner], "--store", str(tmp_path / "store"), "--out", str(tmp_path / f"out{winner}")],
        capture_output=True,
        text=True,
    )
    assert rerun.returncode == 0, rerun.stderr  # the winner's sweep resumes as before


def test_two_sweeps_of_one_grid_at_once_share_the_store(tmp_path):
    done = _both(tmp_path / "store", tmp_path, ("2", "2"))
    assert [c for c, _, _ in done] == [0, 0], done
    alone = subprocess.run(
        SWEEP + ["--n-mu", "2", "--store", str(tmp_path / "alone"), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert alone.returncode == 0, alone.stderr
    with Store(tmp_path / "store") as a, Store(tmp_path / "alone") as b:
        assert a.fingerprint() == b.fingerprint() and len(a.keys()) == 8
        assert [a.get(k).data for k in a.keys()] == [b.get(k).data for k in b.keys()]


def _read_only_copy(store_root: Path, copy: Path) -> Path:
    """A copy nobody can write: folders 0555, files 0444."""
    shutil.copytree(store_root, copy)
    for p in sorted(copy.rglob("*"), reverse=True) + [copy]:
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    return copy


def _without_override() -> list[str]:
    """Root ignores permission bits (CAP_DAC_OVERRIDE): as root, the commands run without it, so the
    copy is as read-only to them as to anyone else."""
    if os.getuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search,-fowner"
    return [shutil.which("setpriv") or "setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_analysis_of_a_read_only_store(small_sweep, tmp_path):
    store_root, _ = small_sweep
    copy = _read_only_copy(store_root, tmp_path / "archived")
    out = tmp_path
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in copy.rglob("*")}
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    for args in (
        [
            "boundary",
            "reduce",
            "--store",
            str(copy),
            "--checkpoint",
            "ant_v0",
            "--resamples",
            "100",
            "--out",
            str(out / "a"),
        ],
        [
            "boundary",
            "verify",
            "--checkpoint",
            "ant_v0",
            "--store",
            str(copy),
            "--sample",
            "2",
            "--out",
            str(out / "v"),
        ],
        ["store", "check", str(copy)],
        ["export", str(copy), "--out", str(out / "t.parquet")],
    ):
        r = subprocess.run(
            [*_without_override(), sys.executable, "-m", "policylab.cli", *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert r.returncode == 0, (args, r.stderr)
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in copy.rglob("*")} == before
    assert not any(p.name.endswith(("-wal", "-shm")) for p in copy.iterdir())


def test_a_damaged_payload_stops_a_command_with_one_line(small_sweep, tmp_path):
    store_root, _ = small_sweep
    copy = tmp_path / "store"
    shutil.copytree(store_root, copy)
    with Store(copy) as store:
        rec = store.require(store.keys()[5])
    (copy / rec.payload_path).unlink()
    r = cli("reduce", "--store", copy, "--checkpoint", "ant_v0", "--resamples", "100", "--out", tmp_path / "a")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "is damaged" in line and f"policylab store check {copy} --repair" in line
