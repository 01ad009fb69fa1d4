"""The `hudi` Spark source's change feed (hoodie.datasource.query.incremental.format=cdc):
Hudi's CDC rows, equal to listers.changes (itself equal to hudi-rs snapshot diffs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine_bridge.spark.options import BEGIN, END, INCREMENTAL_FORMAT, QUERY_TYPE
from listers import CDC_SCHEMA, changes
from listers.incremental import range_key
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import requires_fixtures
from tests.test_spark_source import source  # noqa: F401  (module fixture)

pytestmark = [pytest.mark.services, pytest.mark.slow]
SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])


def _cdc(spark: Any, name: str, path: str, begin: str, end: str | None = None) -> Any:
    reader = spark.read.format(name).option(QUERY_TYPE, "incremental").option(INCREMENTAL_FORMAT, "cdc").option(BEGIN, begin)
    return (reader.option(END, end) if end else reader).load(path)


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["ts_ms"], r["op"], r["before"] or "", r["after"] or "") for r in rows)


@requires_fixtures
@pytest.mark.parametrize("fixture_table", ["quickstart_trips_table__mor__avro__v8_trips_8i3u1d"], indirect=True)
def test_every_one_commit_range_reads_the_commits_changes(fixture_table: str, spark: Any, source: str) -> None:  # noqa: F811
    table = HudiTable.open(fixture_table)
    done = sorted(table.timeline.completed(), key=lambda i: range_key(table, i))
    checked = 0
    for previous, instant in zip([None, *done], done):
        if not instant.action.writes_data:
            continue
        begin, end = range_key(table, previous) if previous else "00000000000000000", range_key(table, instant)
        frame = _cdc(spark, source, fixture_table, begin, end)
        assert [f.name for f in frame.schema.fields] == CDC_SCHEMA.names
        expected = changes(fixture_table, begin, end).to_pylist()
        assert _sorted([r.asDict() for r in frame.collect()]) == _sorted(expected), instant
        checked += 1
    assert checked >= 7  # 3 updates and a delete among them: ops u and d read through Spark
    ops = {r["op"] for r in _cdc(spark, source, fixture_table, "00000000000000000").collect()}
    assert ops == {"i", "u", "d"}


def test_a_range_reads_each_commit_once_and_an_empty_range_is_empty(tmp_path: Path, spark: Any, source: str) -> None:  # noqa: F811
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"], max_rows_per_file=2)
    builder.write([{"id": f"k{i}", "city": "sf" if i % 2 else "la", "fare": float(i)} for i in range(5)])
    builder.write([{"id": "k1", "city": "sf", "fare": 9.5}])
    builder.delete(["k2"])
    frame = _cdc(spark, source, str(path), "00000000000000000")
    rows = [r.asDict() for r in frame.collect()]
    assert _sorted(rows) == _sorted(changes(str(path), "0").to_pylist())
    assert sorted(r["op"] for r in rows) == ["d", "i", "i", "i", "i", "i", "u"]
    frame.createOrReplaceTempView("feed")
    assert spark.sql("SELECT count(*) AS n FROM feed WHERE op = 'u'").collect()[0]["n"] == 1
    table = HudiTable.open(str(path))
    last = range_key(table, table.timeline.completed()[-1])
    empty = _cdc(spark, source, str(path), last)
    assert empty.count() == 0 and [f.name for f in empty.schema.fields] == CDC_SCHEMA.names


def test_cdc_needs_an_incremental_query(tmp_path: Path, spark: Any, source: str) -> None:  # noqa: F811
    path = tmp_path / "t"
    TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"]).write([{"id": "k1", "city": "sf", "fare": 1.0}])
    with pytest.raises(Exception, match="incremental.format=cdc applies to hoodie.datasource.query.type=incremental only"):
        spark.read.format(source).option(INCREMENTAL_FORMAT, "cdc").load(str(path)).count()


def test_a_change_stream_gives_each_change_once_across_a_restart(tmp_path: Path, spark: Any, source: str) -> None:  # noqa: F811
    from engine_bridge.spark.stream import MAX_COMMITS, START_OFFSET

    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, version=8, partition_fields=["city"], max_rows_per_file=2)
    builder.write([{"id": f"k{i}", "city": "sf", "fare": float(i)} for i in range(3)])
    builder.write([{"id": "k1", "city": "sf", "fare": 7.5}])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[int]:
        stream = (spark.readStream.format(source).option(INCREMENTAL_FORMAT, "cdc").option(MAX_COMMITS, "1")
                  .option(START_OFFSET, "earliest").load(path)
                  .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
                  .trigger(availableNow=True).start())
        stream.awaitTermination(180)
        rows = [p["numInputRows"] for p in stream.recentProgress if p["numInputRows"] > 0]
        stream.stop()
        return rows

    assert run() == [3, 1]  # a commit a batch: three inserts, then an update
    builder.delete(["k0"])
    builder.write([{"id": "k9", "city": "la", "fare": 9.0}])
    assert run() == [1, 1]  # the delete, then an insert: nothing delivered twice
    written = [r.asDict() for r in spark.read.parquet(str(out)).collect()]
    assert _sorted(written) == _sorted(changes(path, "0").to_pylist())


def test_read_and_pull_give_the_change_feed(tmp_path: Path, spark: Any, source: str) -> None:  # noqa: F811
    from engine_bridge.spark import read
    from engine_bridge.spark.pull import pull

    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, version=8, partition_fields=["city"])
    builder.write([{"id": f"k{i}", "city": "sf", "fare": float(i)} for i in range(3)])
    builder.write([{"id": "k2", "city": "sf", "fare": 5.0}])
    builder.delete(["k0"])
    everything = _sorted(changes(path, "0").to_pylist())
    frame = read(spark, path, query_type="incremental", begin="00000000000000000", incremental_format="cdc", where="op <> 'i'")
    assert _sorted([r.asDict() for r in frame.collect()]) == [r for r in everything if r[1] != "i"]
    result = pull(spark, path, str(tmp_path / "out"), output_format="cdc", checkpoint=str(tmp_path / "checkpoint.json"))
    assert result.rows == 5 and result.output is not None
    assert _sorted([r.asDict() for r in spark.read.parquet(result.output).collect()]) == everything
