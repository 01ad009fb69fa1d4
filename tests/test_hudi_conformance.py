"""Conformance with Apache Hudi itself: tables of every shape in
`tests/hudi_oracle.SHAPES`, written by Hudi's Spark datasource (Hudi 1.0.2,
PySpark 3.5, in a virtualenv of their own), read by this project and
compared with what Hudi and Spark read back.

Per shape: the snapshot equals Hudi's; for each predicate, the rows of the
file slices a plan keeps, filtered, are exactly the rows Spark selects from
Hudi's snapshot (no dropped file, the same row semantics); the change feed
replays to the live records; incremental pulls answer or refuse; `table
validate` accepts the metadata table Hudi wrote. Where Hudi's own filtered
read differs from the truth, the report names it (a Hudi bug, not ours).
The report is written to `.cache/hudi-tables/<version>/conformance.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from expressions import evaluate_rows, parse_sql
from listers import changes, incremental, plan
from listers.incremental import IncrementalRangeError
from metadata import HudiTable
from metadata.mdt.validate import validate_metadata
from metadata.slice_rows import conform, merged_rows, table_read_schema
from tests.hudi_oracle import CACHE, HUDI_VERSION, SHAPES, Shape, go_on, missing_setup, tables, with_our_metadata_table

pytestmark = [pytest.mark.services, pytest.mark.slow]
REPORT: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def written() -> dict[str, tuple[Path, dict[str, Any]]]:
    reason = missing_setup()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Hudi conformance tier: {reason}")
        pytest.skip(reason)
    found = tables()
    yield found
    out = CACHE / "hudi-tables" / HUDI_VERSION / "conformance.json"
    out.write_text(json.dumps(REPORT, indent=1, sort_keys=True))


def _rows(table: HudiTable, slices: list[Any]) -> list[dict[str, Any]]:
    schema = table_read_schema(table)
    rows: list[dict[str, Any]] = []
    for piece in slices:
        read = merged_rows(table, piece)
        if read.num_rows:
            rows += conform(read, schema, piece.base_file or piece.partition).to_pylist()
    return rows


def _ids(rows: list[dict[str, Any]], predicate: str) -> list[int]:
    import pyarrow as pa

    if not rows:
        return []
    table = pa.Table.from_pylist(rows)
    return sorted(r["id"] for r, keep in zip(rows, evaluate_rows(parse_sql(predicate), table).to_pylist()) if keep)


def _cell(shape: Shape, check: str, outcome: str) -> None:
    REPORT.setdefault(shape.name, {})[check] = outcome


def _same(ours: dict[int, dict[str, Any]], theirs: list[dict[str, Any]], what: str) -> None:
    assert sorted(ours) == sorted(r["id"] for r in theirs), f"{what}: ids"
    for row in theirs:
        mine = {c: ours[row["id"]].get(c) for c in row}
        assert {c: str(v) for c, v in mine.items()} == {c: str(v) for c, v in row.items()}, f"{what}: id {row['id']}"


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_a_shape_hudi_wrote_reads_and_plans_as_hudi_reads_it(written: dict[str, tuple[Path, dict[str, Any]]], shape: Shape) -> None:
    path, oracle = written[shape.name]
    if shape.hudi_write_fails:
        assert shape.hudi_write_fails in oracle.get("write_error", ""), f"{shape.name}: Hudi now writes it: {oracle}"
        _cell(shape, "write", f"Hudi {HUDI_VERSION} fails to write it: {oracle['write_error'][:160]}")
        return
    assert "write_error" not in oracle, f"Hudi refused to write {shape.name}: {oracle['write_error']}"
    table = HudiTable.open(str(path))

    ours = {r["id"]: r for r in _rows(table, table.file_slices())}
    _same(ours, oracle["expected"], f"{shape.name} snapshot vs the rows written")
    if shape.hudi_read_fails:
        assert shape.hudi_read_fails in oracle.get("read_error", ""), f"{shape.name}: Hudi now reads it: {oracle.get('read_error')}"
        _cell(shape, "snapshot", f"equal to the rows written; Hudi {HUDI_VERSION} fails to read it: {oracle['read_error'][:160]}")
    else:
        assert "read_error" not in oracle, f"Hudi cannot read {shape.name}: {oracle['read_error']}"
        _same(ours, oracle["rows"], f"{shape.name} snapshot vs Hudi's")
        _cell(shape, "snapshot", "equal (to the rows written and to Hudi's snapshot)")

    for predicate, expected in oracle["truth"].items():
        kept = plan(str(path), predicate).files
        assert _ids(_rows(table, list(kept)), predicate) == expected, f"{shape.name}: {predicate}"
        if "hudi" not in oracle:
            _cell(shape, f"plan {predicate}", "equal")
            continue
        hudi_said = oracle["hudi"][predicate], oracle["hudi_data_skipping"][predicate]
        _cell(shape, f"plan {predicate}", "equal" if all(h == expected for h in hudi_said)
              else f"equal; Hudi's own read differs: {hudi_said[0]} (skipping off), {hudi_said[1]} (on), truth {expected}")

    live = sorted(r["id"] for r in oracle["expected"])
    feed = changes(str(path), "0")
    state: dict[tuple[str, str], int] = {}
    for op, before, after in zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()):
        image = json.loads(after or before)
        key = (image["_hoodie_partition_path"], image["_hoodie_record_key"])
        if op == "d":
            state.pop(key)
        else:
            state[key] = image["id"]
    assert sorted(state.values()) == live, f"{shape.name}: the change feed replays to {sorted(state.values())}"
    _cell(shape, "changes", "equal")

    if shape.meta_fields:
        assert {s.file_id for s in incremental(str(path), "0").files} <= {s.file_id for s in table.file_slices()}
        _cell(shape, "incremental", "answered")
    else:
        with pytest.raises(IncrementalRangeError, match="populate.meta.fields=false"):
            incremental(str(path), "0")
        _cell(shape, "incremental", "refused in one line (as Hudi refuses)")

    report = validate_metadata(str(path))
    assert report.ok, f"{shape.name}: {report.differences()}"
    _cell(shape, "validate (Hudi's metadata table)", f"agrees; column_stats of {report.stats_files_checked} file(s) equal the footers")


# Writes both ways: hudi-bridge builds the metadata table of a table Hudi wrote, Hudi reads through it and writes on top.
GO_ON = ["cow_v8_simple", "mor_v8_complex_added_column", "cow_v8_simple_virtual_keys", "cow_v6_timestamp", "mor_v6_nonpartitioned"]
MORE_STEPS = ("upsert:0,5", "insert:20-23", "delete:6")


@pytest.fixture(scope="module")
def hudi_on_ours(written: dict[str, tuple[Path, dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ours")
    todo = []
    for name in GO_ON:
        source, oracle = written[name]
        shape = next(s for s in SHAPES if s.name == name)
        path = with_our_metadata_table(source, shape, root / name)
        assert validate_metadata(str(path)).ok
        todo.append((path, shape, oracle))
    seen = go_on(todo, MORE_STEPS, root)
    return {name: (path, oracle, seen[name]) for (path, shape, oracle), name in zip(todo, GO_ON)}


@pytest.mark.parametrize("name", GO_ON)
def test_hudi_reads_and_writes_through_the_metadata_table_we_built(hudi_on_ours: dict[str, Any], name: str) -> None:
    path, oracle, seen = hudi_on_ours[name]
    shape = next(s for s in SHAPES if s.name == name)
    assert "error" not in seen, f"Hudi on our metadata table of {name}: {seen.get('error')}"
    hudi_right = [p for p in oracle["truth"] if oracle["hudi_data_skipping"][p] == oracle["truth"][p]]  # where Hudi is right at all
    for predicate in hudi_right:
        assert seen["hudi_on_ours"][predicate] == oracle["truth"][predicate], f"{name}: Hudi through our metadata table, {predicate}"
        assert seen["hudi_after_write"][predicate] == seen["truth_after"][predicate], f"{name}: after Hudi wrote on top, {predicate}"
    _cell(shape, "Hudi reads through our metadata table, then writes on top", f"equal on {len(hudi_right)} predicate(s)")
    report = validate_metadata(str(path))
    assert report.ok, f"{name}: after Hudi wrote on top of our metadata table: {report.differences()}"
    table = HudiTable.open(str(path))
    for predicate, expected in seen["truth_after"].items():
        assert _ids(_rows(table, list(plan(str(path), predicate).files)), predicate) == expected, f"{name} after Hudi's write: {predicate}"
    _cell(shape, "our plans after Hudi wrote on top of our metadata table", "equal")
