"""Runs under Apache Hudi's own Spark bundle (see tests/hudi_oracle/__init__.py):
a live Hudi pipeline for the concurrency tests. It upserts N commits into one
table, one after another, as a streaming job would, recording which commits
Hudi completed and which failed (with Hudi's error), and the live rows after
each. Then it waits for the test to say `go` (a file), and reads every
committed key back through Hudi with data skipping on (the metadata table as
it is then): the keys Hudi's own read finds.

Usage: python live_writer.py SPEC.json BUNDLE.jar
SPEC: {"path", "table_type", "commits", "first", "writer_options": {...}, "out", "go", "started"}
Imports nothing of hudi-bridge: this interpreter has only PySpark.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import traceback

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType
from write_tables import hudi_spark  # beside this script: its folder is on the path

REGIONS = ("us", "eu", "in")
SCHEMA = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()),
                     StructField("v", LongType()), StructField("seq", LongType())])


def options(spec):
    opts = {
        "hoodie.table.name": "live",
        "hoodie.datasource.write.table.type": spec["table_type"],
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.precombine.field": "seq",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.metadata.enable": "true",
        "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2",
    }
    opts.update(spec.get("writer_options", {}))
    return opts


def batch(n):
    """Commit n: 6 new ids and 2 updated ones, so files are both added and rewritten."""
    new = range(n * 6, n * 6 + 6)
    old = [(n * 5) % max(n * 6, 1), (n * 11) % max(n * 6, 1)] if n else []
    return [(i, REGIONS[i % 3], (i * 7 + n * 13) % 100, n) for i in [*new, *old]]


def reason(exc):
    """The error in one line: for Hudi's (Java) errors, the chain of causes."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        causes = []
        while java is not None and len(causes) < 6:
            causes.append(str(java.toString())[:300])
            java = java.getCause()
        return " <- ".join(causes)
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[0][:600] if text else type(exc).__name__


def main():
    spec = json.load(open(sys.argv[1]))
    # The bundle on the driver's class path too: with spark.jars alone, Hudi 1.0.2 reads metadata-table delete blocks
    # on ForkJoin threads that cannot see its Avro classes (ClassCastException ... HoodieDeleteRecord, apache/hudi#13410).
    spark = hudi_spark(sys.argv[2], "hudi-live-writer", on_driver_class_path=True)
    path, opts = spec["path"], options(spec)
    live, commits = {}, []
    first = spec.get("first", 0)  # commits an earlier writer made (its rows replayed, not written)
    for n in range(first):
        for i, region, v, _ in batch(n):
            live[i] = {"id": i, "region": region, "v": v}
    with open(spec["started"], "w") as out:
        out.write("started")
    for n in range(first, first + spec["commits"]):
        rows = batch(n)
        started = time.time()
        try:
            spark.createDataFrame(rows, SCHEMA).write.format("hudi").options(**opts).mode("append").save(path)
        except Exception as exc:
            commits.append({"n": n, "ok": False, "error": reason(exc), "seconds": time.time() - started})
            print(f"commit {n} failed: {reason(exc)}", flush=True)
            continue
        commits.append({"n": n, "ok": True, "seconds": time.time() - started})
        for i, region, v, _ in rows:
            live[i] = {"id": i, "region": region, "v": v}
        print(f"commit {n} ok", flush=True)
    result = {"commits": commits, "live": sorted(live.values(), key=lambda r: r["id"])}
    with open(spec["out"] + ".partial", "w") as out:
        json.dump(result, out)
    os.replace(spec["out"] + ".partial", spec["out"])
    deadline = time.time() + spec.get("go_timeout", 600)
    while not os.path.exists(spec["go"]) and time.time() < deadline:
        time.sleep(0.2)
    found = {}
    try:
        reader = spark.read.format("hudi").option("hoodie.metadata.enable", "true").option("hoodie.enable.data.skipping", "true")
        frame = reader.load(path)
        # One scan per key, each pruned by Hudi's data skipping on its own filter, run as one job.
        scans = [frame.filter(f"v = {row['v']} AND id = {row['id']}").select("id") for row in live.values()]
        counts = {r["id"]: r["count"] for r in functools.reduce(lambda a, b: a.unionByName(b), scans).groupBy("id").count().collect()}
        found = {str(i): counts.get(i, 0) for i in live}
        plain = spark.read.format("hudi").option("hoodie.metadata.enable", "false").load(path)
        result["hudi_snapshot_ids"] = sorted(r["id"] for r in plain.select("id").collect())
    except Exception as exc:
        result["read_error"] = reason(exc)
    result["hudi_found"] = found
    with open(spec["out"] + ".partial", "w") as out:
        json.dump(result, out)
    os.replace(spec["out"] + ".partial", spec["out"])
    spark.stop()


if __name__ == "__main__":
    main()
