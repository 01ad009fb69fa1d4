"""The `hudi` Python data source over Spark Connect: a server started from
the PySpark distribution on 127.0.0.1, a client in its own process (a
Connect client changes PySpark's shared session builder, so it stays out
of this process and its local session). Batch reads, filters, the change
feed, `read()` and a stream all work; the server's Python workers must
import hudi-bridge (PYSPARK_PYTHON there)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from listers import changes
from metadata.sample_tables.builder import TableBuilder

pytestmark = [pytest.mark.services, pytest.mark.slow]
SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])
REPO = Path(__file__).resolve().parents[1]

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from engine_bridge.spark import read, register
    from engine_bridge.spark.options import BEGIN, INCREMENTAL_FORMAT, QUERY_TYPE

    url, path = sys.argv[1], sys.argv[2]
    session = SparkSession.builder.remote(url).getOrCreate()
    source = register(session).name
    frame = session.read.format(source).load(path)
    feed = session.read.format(source).options(**{QUERY_TYPE: "incremental", INCREMENTAL_FORMAT: "cdc",
                                                  BEGIN: "00000000000000000"}).load(path)
    query = (session.readStream.format(source).load(path).writeStream.format("memory").queryName("connect_stream")
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    print(json.dumps({
        "rows": sorted([r.id, r.fare] for r in frame.select("id", "fare").collect()),
        "filtered": frame.where("fare > 4").count(),
        "ops": sorted(r.op for r in feed.collect()),
        "read": read(session, path, where="city = 'sf'").count(),
        "streamed": session.sql("SELECT count(*) AS n FROM connect_stream").collect()[0]["n"],
    }))
    session.stop()
""")


def test_the_source_reads_over_spark_connect(spark_connect: str, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"])
    builder.write([{"id": f"k{i}", "city": ("sf", "la")[i % 2], "fare": float(i)} for i in range(6)])
    builder.write([{"id": "k1", "city": "la", "fare": 10.5}])
    ran = subprocess.run([sys.executable, "-c", CLIENT, spark_connect, path], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["rows"] == sorted([[f"k{i}", float(i)] for i in range(6) if i != 1] + [["k1", 10.5]])  # the log merged
    assert result["filtered"] == 2
    assert result["ops"] == sorted(changes(path, "0").column("op").to_pylist())
    assert result["read"] == 3
    assert result["streamed"] == 6  # one batch: the rows as they are now
