"""`policylab export`: one row per rollout of a real sweep, and the DuckDB query docs/design.md
shows (survival per cell) run as written, against the store's own records."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from policylab.cli import invoke
from policylab.rollout.export import HEAD, TAIL
from policylab.rollout.store import Store

DESIGN = Path(__file__).resolve().parents[3] / "docs" / "design.md"


def _docs_query() -> str:
    section = DESIGN.read_text().split("### Store export", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_export_has_a_row_per_rollout_and_the_documented_query_runs(small_sweep, tmp_path, monkeypatch):
    store_root, summary = small_sweep
    out = tmp_path / "sweep.parquet"
    assert invoke(["export", str(store_root), "--out", str(out)]) == 0
    table = pq.read_table(out)
    with Store(store_root) as store:
        records = list(store.records())
    assert table.num_rows == len(records) == 64
    cols = table.column_names
    assert tuple(cols[:5]) == HEAD and tuple(cols[-3:]) == TAIL
    assert {"world_mu", "world_push_pct", "world_seed", "outcome_status", "outcome_t_fail"} <= set(cols)
    rows = table.to_pylist()
    assert [r["key"] for r in rows] == [r.key for r in records]
    for row, rec in zip(rows, records):
        assert row["outcome_status"] == rec.outcome["status"] and row["world_mu"] == rec.data["world"]["mu"]
        assert row["payload_sha256"] == rec.payload_sha256 and row["seed"] == rec.data["world"]["seed"]

    cells = defaultdict(list)
    for rec in records:
        w = rec.data["world"]
        cells[(w["mu"], w["push_pct"])].append(rec.outcome["status"] == "survived")
    expected = sorted((mu, push, sum(v) / len(v)) for (mu, push), v in cells.items())
    monkeypatch.chdir(tmp_path)  # the documented query reads 'sweep.parquet' where it runs
    scope: dict = {}
    exec(_docs_query(), scope)
    assert scope["survival"] == expected  # means of 4 booleans: exact in binary
    assert len(expected) == 16 and 0 < sum(s for *_, s in expected) < 16  # some cells survive, some fall
