"""column_stats of nested fields (`a.b`, as Hudi names them): built on
request from Parquet footers and log records, validated against the
footers, and used by plans, which keep every slice with a match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from expressions import evaluate_rows, parse_sql
from listers import plan
from metadata import HudiTable
from metadata.errors import IndexWriteError
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.table.slice_rows import merged_rows

SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()),
                    ("info", pa.struct([("score", pa.int64()), ("tag", pa.string()), ("at", pa.struct([("day", pa.date32())]))]))])


def _row(i: int, version: int = 0) -> dict[str, Any]:
    from datetime import date

    info = None if i % 7 == 3 else {"score": i + version, "tag": f"t{i}", "at": {"day": date(2024, 1, 1 + i % 28)}}
    return {"id": f"k{i:02d}", "city": ("sf", "la")[i % 2], "info": info}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_nested_stats_prune_and_keep_every_match(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=3)
    builder.write([_row(i) for i in range(18)])
    MetadataTableWriter(str(path)).build(columns=["id", "info.score", "info.tag", "info.at.day"])
    builder.write([_row(i, 100) for i in (2, 9)])  # updates: new base files, or log files on MOR
    MetadataTableWriter(str(path)).sync()
    report = validate_metadata(str(path))
    assert report.ok, report.differences()
    table = HudiTable.open(str(path))
    rows = {(s.partition, s.file_id): merged_rows(table, s) for s in table.file_slices()}
    for where in ("info.score >= 15", "info.score > 100", "info.tag = 't4'", "info.at.day = DATE '2024-01-05'", "info.score IS NULL"):
        planned = plan(str(path), where)
        expression = parse_sql(where, "spark")
        matching = {k for k, found in rows.items() if any(evaluate_rows(expression, found).to_pylist())}
        kept = {(s.partition, s.file_id) for s in planned.files}
        assert matching and matching <= kept, (where, planned.explain())
        stage = next(s for s in planned.stages if s.name == "column_stats")
        assert stage.kept < len(rows) or where == "info.score IS NULL", (where, planned.explain())


def test_an_unknown_nested_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t"
    TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"]).write([_row(1)])
    with pytest.raises(IndexWriteError, match="no column 'info.nope' in the table schema"):
        MetadataTableWriter(str(path)).build(columns=["info.nope"])
