"""The `hudi` Python data source over Spark Connect: a server started from
the PySpark distribution on 127.0.0.1, a client session in this process.
Batch reads, filters, the change feed, `read()` and a stream all work; the
server's Python workers must import hudi-bridge (PYSPARK_PYTHON there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine_bridge.spark import read, register
from engine_bridge.spark.options import BEGIN, INCREMENTAL_FORMAT, QUERY_TYPE
from listers import changes
from metadata.sample_tables.builder import TableBuilder

pytestmark = [pytest.mark.services, pytest.mark.slow]
SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])


def test_the_source_reads_over_spark_connect(spark_connect: str, tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"])
    builder.write([{"id": f"k{i}", "city": ("sf", "la")[i % 2], "fare": float(i)} for i in range(6)])
    builder.write([{"id": "k1", "city": "la", "fare": 10.5}])
    session: Any = SparkSession.builder.remote(spark_connect).create()
    try:
        registration = register(session)
        source = registration.name
        frame = session.read.format(source).load(path)
        assert sorted((r.id, r.fare) for r in frame.select("id", "fare").collect()) == sorted(
            [(f"k{i}", float(i)) for i in range(6) if i != 1] + [("k1", 10.5)])  # the log merged: k1's update
        assert frame.where("fare > 4").count() == 2
        feed = session.read.format(source).options(**{QUERY_TYPE: "incremental", INCREMENTAL_FORMAT: "cdc",
                                                      BEGIN: "00000000000000000"}).load(path)
        assert sorted(r.op for r in feed.collect()) == sorted(changes(path, "0").column("op").to_pylist())
        assert read(session, path, where="city = 'sf'").count() == 3
        query = (session.readStream.format(source).load(path).writeStream.format("memory").queryName("connect_stream")
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert session.sql("SELECT count(*) AS n FROM connect_stream").collect()[0]["n"] == 6  # one batch: the rows as they are now
    finally:
        session.stop()
