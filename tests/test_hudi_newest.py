"""What only a Hudi that writes table version 9 writes (issue 68): Hudi 1.1.1's and 1.2.0's record-level
indexes, global and partitioned, and 1.2.0's change-data logs written at compaction time, each written by
that Hudi and checked against the rows written and what that Hudi reads back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expressions import parse_sql
from listers import changes, plan
from listers.verify import verify_plan
from metadata import HudiTable
from tests.hudi_oracle import NEWEST, RELEASES, Shape, record_cells
from tests.hudi_oracle.pruning import against_hudi
from tests.test_hudi_conformance import REPORT, _cell, _ids, _rows, _written

pytestmark = [pytest.mark.services, pytest.mark.slow]
NEWER = [release for release, versions in RELEASES.items() if 9 in versions]
CASES = [pytest.param(release, shape, id=f"{release}-{shape.name}") for release in NEWER for shape in NEWEST]


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    """These cells join each release's conformance.json (the conformance module wrote its own already)."""
    yield
    for release in NEWER:
        record_cells(release, REPORT.get(release, {}))


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
        pruning = against_hudi(table, predicate, list(planned.files), truth, oracle, lambda slices: _rows(table, slices))
        _cell(release, shape, f"plan {predicate}", f"equal{pruning or f', {len(kept)} file group(s) kept'}" if all(h == truth for h in hudi)
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


UPGRADED = ["cow_v8_simple", "mor_v8_complex_added_column"]


@pytest.mark.parametrize("name", UPGRADED)
def test_hudi_1_2_upgrades_a_version_8_table_whose_metadata_table_we_built(name: str, tmp_path: Path) -> None:
    """A version 8 table Hudi 1.0.2 wrote, its metadata table built by hudi-bridge: Hudi 1.2.0 reads it with data
    skipping on, writes on top (upgrading it to version 9), and we read it after; then our compaction of the metadata
    table at version 9 is read back by Hudi 1.2.0 with data skipping on, and it writes on top again."""
    from dataclasses import replace

    from listers import plan as plan_files
    from metadata.mdt.validate import validate_metadata
    from metadata.mdt.write.writer import MetadataTableWriter
    from tests.hudi_oracle import HUDI_VERSION, SHAPES, go_on, missing_setup, with_our_metadata_table
    from tests.needs import require

    require(missing_setup("1.2.0"), "Hudi 1.2.0's upgrade of a version 8 table")
    shape = next(s for s in SHAPES if s.name == name)
    source, oracle = _written(HUDI_VERSION)[name]
    path = with_our_metadata_table(source, shape, tmp_path / name)
    nine = replace(shape, version=9)
    first = go_on([(path, nine, oracle)], ("upsert:0,5", "insert:20-23", "delete:6"), tmp_path, "1.2.0")[name]
    assert "error" not in first, first.get("error")
    table = HudiTable.open(str(path))
    assert table.config.version == 9
    right = [p for p in oracle["truth"] if oracle["hudi_data_skipping"][p] == oracle["truth"][p]]
    assert all(first["hudi_on_ours"][p] == oracle["truth"][p] for p in right)  # Hudi 1.2 through our version 8 metadata table
    assert all(first["hudi_after_write"][p] == first["truth_after"][p] for p in right)
    assert validate_metadata(str(path)).ok
    for predicate, expected in first["truth_after"].items():
        assert _ids(_rows(table, list(plan_files(str(path), predicate).files)), predicate) == expected, predicate

    MetadataTableWriter(str(path)).compact(force=True)  # ours, at version 9
    assert validate_metadata(str(path)).ok
    again = tmp_path / "again"
    again.mkdir()
    second = go_on([(path, nine, {"expected": first["expected_after"]})], ("upsert:1,7",), again, "1.2.0")[name]
    assert "error" not in second, second.get("error")
    assert all(second["hudi_on_ours"][p] == first["truth_after"][p] for p in right)  # Hudi 1.2 through our version 9 compaction
    assert all(second["hudi_after_write"][p] == second["truth_after"][p] for p in right)
    _cell("1.2.0", nine, "upgrade 8 to 9 over our metadata table", f"Hudi 1.2.0 read, wrote (upgrading) and read again, equal on "
          f"{len(right)} predicate(s); our compaction at version 9 read back by Hudi equal; our plans equal")
