"""`scan()`: rows read from only the planned slices, equal to hudi-rs's
snapshot with the same filter on every fixture table, through Arrow, DuckDB
and Polars. The filter's oracle is DuckDB's SQL over hudi-rs's rows."""

from __future__ import annotations

from typing import Any

import duckdb
import hudi
import pyarrow as pa
import pytest

from listers import QueryType, ScanError, scan
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures

polars = pytest.importorskip("polars")


def hudi_rs_rows(path: str) -> pa.Table | None:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return pa.Table.from_batches(batches) if batches else None


def _data_columns(table: pa.Table) -> list[str]:
    return [c for c in table.column_names if not c.startswith("_hoodie_")]


def _comparable(rows: Any, columns: list[str]) -> list[tuple[str, ...]]:
    """Rows as sorted tuples of text (hudi-rs and pyarrow may differ in a timestamp's unit or a decimal's scale)."""
    table = rows if isinstance(rows, pa.Table) else rows.to_arrow()
    return sorted(tuple(str(r[c]) for c in columns) for r in table.select(columns).to_pylist())


def _predicates(theirs: pa.Table, path: str) -> list[str]:
    """For each of a few scalar data columns: `col >= median`, and `col = first value` (as SQL literals)."""
    partition_fields = set(HudiTable.open(path).config.partition_fields)
    found = []
    for name in _data_columns(theirs):
        column = theirs.column(name)
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_string(column.type)):
            continue
        values = sorted(v for v in column.to_pylist() if v is not None)
        if not values:
            continue
        literal = (lambda v: "'" + v.replace("'", "''") + "'") if pa.types.is_string(column.type) else repr
        found += [f"{name} >= {literal(values[len(values) // 2])}", f"{name} = {literal(values[0])}"]
        if len(found) >= 6 + 2 * (name in partition_fields):
            break
    return found


@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_scan_equals_hudi_rs_with_the_same_filter_through_arrow_duckdb_and_polars(fixture_table: str) -> None:
    theirs = hudi_rs_rows(fixture_table)
    everything = scan(fixture_table)
    if theirs is None:
        assert everything.to_table().num_rows == 0
        return
    columns = _data_columns(theirs)
    assert _comparable(everything.to_table(), columns) == _comparable(theirs, columns)
    predicates = _predicates(theirs, fixture_table)
    assert predicates, "the fixture has no column to filter on"
    oracle = duckdb.connect()
    oracle.register("theirs", theirs)
    for predicate in predicates:
        expected = _comparable(oracle.sql(f"SELECT * FROM theirs WHERE {predicate}").arrow(), columns)
        result = scan(fixture_table, where=predicate)
        assert _comparable(result.to_table(), columns) == expected, predicate
        connection = result.to_duckdb("ours")
        through_duckdb = connection.sql("SELECT * FROM ours").arrow()
        assert _comparable(through_duckdb, columns) == expected, f"DuckDB: {predicate}"
        assert _comparable(result.to_polars(), columns) == expected, f"Polars: {predicate}"
        planned = {s.base_file or s.log_files[0] for s in result.slices}
        assert len(planned) <= len(everything.slices)


def _trips(path: str) -> str:
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]), partition_fields=["p"],
                           version=8, table_type="MERGE_ON_READ")
    builder.write([{"id": i, "v": "a", "p": f"p{i % 3}"} for i in range(12)])
    builder.write([{"id": 1, "v": "b", "p": "p1"}, {"id": 20, "v": "c", "p": "p2"}])
    return path


def test_projection_query_types_and_refusals(tmp_path: Any) -> None:
    path = _trips(str(tmp_path / "trips"))
    result = scan(path, where="v <> 'a'", columns=["ID", "v"])
    assert result.schema.names == ["id", "v"]
    assert sorted(result.to_table().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "b"}, {"id": 20, "v": "c"}]
    read_optimized = scan(path, columns=["id", "v"], query_type=QueryType.READ_OPTIMIZED).to_table()
    assert sorted(r["id"] for r in read_optimized.to_pylist() if r["v"] == "a") == list(range(12))  # logs left unmerged
    commits = HudiTable.open(path).timeline.commits()
    pulled = scan(path, columns=["id"], query_type="incremental", begin=commits[0].completion_time).to_table()
    assert sorted(pulled.column("id").to_pylist()) == [1, 20]
    assert scan(path, where="id = 99").to_table().num_rows == 0
    with pytest.raises(ScanError, match="no column nope"):
        scan(path, columns=["nope"])
    with pytest.raises(ScanError, match="no column nope"):
        scan(path, where="nope = 1")
    with pytest.raises(ScanError, match="needs begin"):
        scan(path, query_type="incremental")
    reader = scan(path, where="p = 'p1'").to_reader()
    assert isinstance(reader, pa.RecordBatchReader) and sum(b.num_rows for b in reader) == 4
    assert scan(path, where="p = 'p1'").to_pandas().shape[0] == 4


def test_the_readme_scan_sample_prints_what_the_readme_shows(tmp_path: Any) -> None:
    """The README's Python block for scan(), run on a fresh demo table, prints the text block after it."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from engine_bridge.cli import main

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Reading rows from Python"):]
    code, shown = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", section, re.S).groups()  # type: ignore[union-attr]
    table = tmp_path / "trips"
    assert CliRunner().invoke(main, ["demo", "--path", str(table), "--no-spark", "--no-sync"]).exit_code == 0
    run = subprocess.run([sys.executable, "-c", code.replace("/tmp/trips", str(table))], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip() == shown.rstrip()
