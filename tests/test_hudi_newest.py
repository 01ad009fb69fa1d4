"""What only a Hudi that writes table version 9 writes (issue 68): Hudi 1.1.1's and 1.2.0's record-level
indexes, global and partitioned, and 1.2.0's change-data logs written at compaction time, each written by
that Hudi and checked against the rows written and what that Hudi reads back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from expressions import parse_sql
from listers import changes, plan
from listers.verify import verify_plan
from metadata import HudiTable
from tests.hudi_oracle import CACHE, NEWEST, RELEASES, Shape
from tests.test_hudi_conformance import REPORT, _cell, _ids, _rows, _written

pytestmark = [pytest.mark.services, pytest.mark.slow]
NEWER = [release for release, versions in RELEASES.items() if 9 in versions]
CASES = [pytest.param(release, shape, id=f"{release}-{shape.name}") for release in NEWER for shape in NEWEST]


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    """These cells join each release's conformance.json (the conformance module wrote its own already)."""
    yield
    for release in NEWER:
        out = CACHE / "hudi-tables" / release / "conformance.json"
        held = json.loads(out.read_text()) if out.is_file() else {}
        out.write_text(json.dumps({**held, **REPORT.get(release, {})}, indent=1, sort_keys=True))


def _holding(table: HudiTable, ids: list[int]) -> set[str]:
    """The file groups whose latest slice holds one of `ids`."""
    return {piece.file_id for piece in table.file_slices() if {r["id"] for r in _rows(table, [piece])} & set(ids)}


@pytest.mark.parametrize("release,shape", CASES)
def test_plans_keep_every_matching_row_and_a_key_lookup_keeps_only_its_file(release: str, shape: Shape) -> None:
    path, oracle = _written(release)[shape.name]
    assert "write_error" not in oracle, oracle.get("write_error")
    table = HudiTable.open(str(path))
    assert table.config.version == 9
    assert sorted(r["id"] for r in _rows(table, table.file_slices())) == sorted(r["id"] for r in oracle["expected"])
    for predicate, truth in oracle["truth"].items():
        planned = plan(str(path), predicate)
        assert _ids(_rows(table, list(planned.files)), predicate) == truth, f"{release} {shape.name}: {predicate}"
        assert verify_plan(table, planned, parse_sql(predicate)).ok, f"{release} {shape.name}: {predicate}"
        kept = {piece.file_id for piece in planned.files}
        if predicate.startswith("key = ") or predicate.startswith("key IN"):  # the record index answers exactly
            assert kept == _holding(table, truth), f"{release} {shape.name}: {predicate} keeps {len(kept)} file group(s)"
        hudi = oracle.get("hudi", {}).get(predicate), oracle.get("hudi_data_skipping", {}).get(predicate)
        _cell(release, shape, f"plan {predicate}", f"equal, {len(kept)} file group(s) kept" if all(h == truth for h in hudi)
              else f"equal; Hudi's own read differs: {hudi[0]} (skipping off), {hudi[1]} (on), truth {truth}")


@pytest.mark.parametrize("release", NEWER)
def test_compaction_time_cdc_logs_are_not_changes(release: str) -> None:
    """Hudi 1.2 writes `.cdc` logs when it compacts a MERGE_ON_READ table with CDC on; a compaction changes no
    record, and Hudi's CDC query reads none of them: our change feed equals Hudi's across the compaction."""
    shape = next(s for s in NEWEST if s.name == "mor_v9_cdc_across_compaction")
    path, oracle = _written(release)[shape.name]
    table = HudiTable.open(str(path))
    compactions = [i for i in table.timeline.commits() if i.planned_action is not None]
    assert compactions
    feed = changes(table, oracle["begin"])
    ours = sorted((op, json.loads(after or before)["id"]) for op, before, after in
                  zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()))
    assert ours == sorted((op, i) for op, i, _, _ in oracle["cdc"])
    compaction = compactions[0]
    alone = changes(table, _before(table, compaction), compaction.completion_time or compaction.requested_time)
    assert alone.num_rows == 0, f"{release}: the compaction alone gave {alone.num_rows} change(s)"
    _cell(release, shape, "CDC", f"equal to Hudi's across a compaction ({len(ours)} changes; the compaction alone: none)")


def _before(table: HudiTable, instant: Any) -> str:
    """The range key just before `instant` (completion times on version 8 and later)."""
    key = instant.completion_time or instant.requested_time
    return str(int(key) - 1)
