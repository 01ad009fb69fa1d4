"""The Spark scan without Spark: options, split grouping, and the rows of
every read against hudi-rs (every pair of instants for incremental)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import hudi
import pyarrow as pa
import pytest

from engine_bridge.spark.options import BEGIN, END, QUERY_TYPE, QueryType, ReadOptions, SparkOptionError, query_instant
from engine_bridge.spark.scan import SliceToRead, conform, group_slices, plan_scan, read_split
from engine_bridge.spark.schema import spark_arrow_schema, spark_schema, table_arrow_schema
from expressions import evaluate_rows
from metadata import HudiTable
from tests.conftest import FIXTURE_ZIPS, requires_fixtures

READ_FIXTURES = [z.stem for z in FIXTURE_ZIPS if "empty" not in z.stem] or ["no-fixtures"]


def _rows(batches: Any, target: pa.Schema) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for b in batches for r in conform(b, target, {}, "t").to_pylist())


def _ours(options: dict[str, str], target: pa.Schema) -> list[str]:
    scan = plan_scan(ReadOptions.parse(options))
    return _rows((b for split in scan.splits for b in read_split(scan.spec, split, target)), target)


def _theirs(path: str, target: pa.Schema, options: Any) -> list[str]:
    return _rows(hudi.HudiTableBuilder.from_base_uri(path).build().read(options), target)


@requires_fixtures
@pytest.mark.fixtures
@pytest.mark.parametrize("fixture_table", READ_FIXTURES, indirect=True)
def test_incremental_scan_equals_hudi_rs_for_every_pair(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table)
    target = spark_arrow_schema(spark_schema(table_arrow_schema(table)))
    keys = ["00000000000000000"] + [c.completion_time or c.requested_time for c in table.timeline.commits()]
    for begin, end in itertools.combinations(keys, 2):
        ours = _ours({"path": fixture_table, QUERY_TYPE: "incremental", BEGIN: begin, END: end}, target)
        options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin).with_end_timestamp(end)
        assert ours == _theirs(fixture_table, target, options), (begin, end)


def test_query_instants_in_hudis_spellings() -> None:
    assert query_instant("20240102030405123", "k") == "20240102030405123"
    assert query_instant("2024-01-02 03:04:05.123", "k") == "20240102030405123"
    assert query_instant("2024-01-02 03:04:05", "k") == "20240102030405000"
    assert query_instant("2024-01-02", "k") == "20240102000000000"
    with pytest.raises(SparkOptionError, match="as.of.instant='yesterday'"):
        ReadOptions.parse({"path": "/t", "as.of.instant": "yesterday"})


def test_options_take_hudis_names_and_refuse_what_cannot_hold() -> None:
    options = ReadOptions.parse({"Path": "/t", "HOODIE.DATASOURCE.QUERY.TYPE": "Incremental", BEGIN: "20240101000000000"})
    assert options.query_type is QueryType.INCREMENTAL and options.begin == "20240101000000000" and options.end is None
    assert ReadOptions.parse({"paths": '["/t"]'}).path == "/t"
    with pytest.raises(SparkOptionError, match="one table at a time"):
        ReadOptions.parse({"paths": '["/a", "/b"]'})
    with pytest.raises(SparkOptionError, match="apply to hoodie.datasource.query.type=incremental only"):
        ReadOptions.parse({"path": "/t", BEGIN: "20240101000000000"})
    with pytest.raises(SparkOptionError, match="hoodie.enable.data.skipping='maybe'"):
        ReadOptions.parse({"path": "/t", "hoodie.enable.data.skipping": "maybe"})


def test_small_slices_share_a_split_up_to_the_target() -> None:
    mib = 1024 * 1024
    slices = [SliceToRead("p", f"p/f{i}.parquet", (), 10 * mib) for i in range(10)]
    splits = group_slices(slices, 64 * mib)  # 10 MiB + 4 MiB open cost each: four per split
    assert [len(s.slices) for s in splits] == [4, 4, 2]
    assert [s for split in splits for s in split.slices] == slices
    assert [len(s.slices) for s in group_slices(slices, 1)] == [1] * 10


def test_conform_casts_fills_partition_values_and_names_a_bad_column() -> None:
    target = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string()), pa.field("added", pa.float64())])
    batch = pa.RecordBatch.from_pydict({"ID": pa.array([1, 2], pa.int32())})
    out = conform(batch, target, {"p": "x"}, "f.parquet")
    assert out.schema == target and out.to_pylist() == [{"id": 1, "p": "x", "added": None}, {"id": 2, "p": "x", "added": None}]
    with pytest.raises(Exception, match="f.parquet: column 'id' of type string cannot be read as int64"):
        conform(pa.RecordBatch.from_pydict({"id": ["a"]}), target, {}, "f.parquet")


def test_row_groups_skipped_only_where_footer_bounds_exclude(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from engine_bridge.spark.scan import row_groups_to_read
    from expressions import parse_sql

    ids = list(range(100))
    names = [None if i % 10 == 3 else f"n{i:03d}" for i in ids]
    fares = [float("nan") if i == 5 else float(i) for i in ids]
    pq.write_table(pa.table({"id": ids, "name": names, "fare": fares}), tmp_path / "f.parquet", row_group_size=10)
    parquet = pq.ParquetFile(tmp_path / "f.parquet")

    def groups(sql: str) -> list[int]:
        return row_groups_to_read(parquet, parse_sql(sql, "spark"))

    assert groups("id > 90") == [9]
    assert groups("id = 42 OR id BETWEEN 75 AND 81") == [4, 7, 8]
    assert groups("name = 'n055'") == [5]
    assert groups("name IS NULL") == list(range(10))  # every group holds a null
    assert groups("id > 90 AND fare > 1000") == [9]  # float bounds are not used: NaN sorts above them in Spark
    assert groups("fare > 1000") == list(range(10))
    assert groups("upper(name) = 'N055'") == list(range(10))  # not order-preserving on these bounds: kept
    for sql in ("id > 90", "name = 'n055'", "id = 42 OR id BETWEEN 75 AND 81"):
        expr = parse_sql(sql, "spark")
        table = parquet.read()
        holding = {i // 10 for i, keep in enumerate(evaluate_rows(expr, table).to_pylist()) if keep}
        assert holding <= set(groups(sql))
