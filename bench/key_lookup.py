"""Record keys looked up through a record index of 10M keys: on the driver
and as a Spark join (`engine_bridge.spark.lookup_keys`), in one run.

A v8 table whose record index holds --index-keys keys (`key-000000000`
...) in --files data files of one partition is built once (kept under
~/.cache/hudi-bridge-bench/key-lookup-<keys>), metadata-only: one real
commit, and a record index naming file groups that do not exist (a lookup
reads the index only); the report says so. Then, each in a fresh process:

- spark: a local[2] session; a DataFrame of every 10th key made on the
  executors (`spark.range`), tagged through the record index and counted
  there, for each --lookups size; seconds (the session's start apart), the
  driver's peak RSS (its Python process; the JVM is its own), keys found;
- local: `metadata.mdt.indexes.record_locations` of the same keys on one
  process, for sizes up to --local-up-to; seconds and peak RSS.

    python -m bench.key_lookup [--index-keys 10000000] [--lookups 100000,1000000] [--local-up-to 1000000]
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc

from bench.common import finish, in_fresh_process, peak_rss_mib, progress
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.record_keys import FileKeys
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

BUILT_MARKER = ".bench-key-lookup-built"
SCHEMA = pa.schema([("key", pa.string()), ("part", pa.string()), ("v", pa.int64())])
STRIDE = 10  # every 10th key is looked up


def key_text(i: int) -> str:
    return f"key-{i:09d}"


def build_index(path: str, keys: int, files: int) -> None:
    """A table with one real file and a record index of `keys` synthetic keys
    in `files` data file groups that exist in the index only."""
    builder = TableBuilder(path, SCHEMA, partition_fields=["part"], record_key="key", version=8)
    ts, _ = builder.write_copies({"part=p": 1}, [{"key": "real", "part": "p", "v": 0}])
    per_file = -(-keys // files)

    def synthetic_keys(self: Any) -> list[FileKeys]:
        found = []
        for n in range(files):
            numbers = pa.array(range(n * per_file, min(keys, (n + 1) * per_file)), pa.int64())
            texts = pc.binary_join_element_wise("key-", pc.utf8_lpad(pc.cast(numbers, pa.string()), 9, "0"), "")
            found.append(FileKeys("part=p", f"{n:08d}-0000-0000-0000-000000000000-0", ts, texts))
        progress(f"{keys} synthetic keys in {files} files")
        return found

    with mock.patch.object(BuildSnapshot, "file_keys", synthetic_keys):
        MetadataTableWriter(path, progress=progress).build(partitions=[MdtPartition.FILES, MdtPartition.RECORD_INDEX])
    Path(path, BUILT_MARKER).write_text(f"{keys} {files} metadata-only\n")


def _spark(path: str, sizes: list[int]) -> list[dict[str, Any]]:
    from engine_bridge.spark import local_spark_session, lookup_keys

    spark = local_spark_session(app_name="bench-key-lookup", cores=2)
    try:
        lookup_keys(spark, path, spark.range(1).selectExpr("'key-000000000' AS key")).count()  # workers and the JVM's classes warm
        results = []
        for size in sizes:
            keys_df = spark.range(0, size * STRIDE, STRIDE).selectExpr("format_string('key-%09d', id) AS key")
            start = time.perf_counter()
            tagged = lookup_keys(spark, path, keys_df)
            found = tagged.count()
            seconds = time.perf_counter() - start
            results.append({"keys": size, "found": found, "seconds": round(seconds, 3), "tasks": tagged.rdd.getNumPartitions(),
                            "driver_peak_rss_mib": round(peak_rss_mib(), 1)})
            progress(f"spark: {size} keys in {seconds:.1f} s")
        return results
    finally:
        spark.stop()


def _local(path: str, size: int) -> tuple[int, float]:
    from metadata import MetadataTable
    from metadata.mdt.indexes import record_locations

    keys = [key_text(i) for i in range(0, size * STRIDE, STRIDE)]
    start = time.perf_counter()
    found = record_locations(MetadataTable.open(path), keys)
    return len(found), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index-keys", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--lookups", default="100000,1000000")
    parser.add_argument("--local-up-to", type=int, default=1_000_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.lookups.split(",")]
    if max(sizes) * STRIDE > args.index_keys:
        parser.error(f"--lookups: every {STRIDE}th key is looked up, so at most {args.index_keys // STRIDE} keys")
    path = os.path.join(os.path.expanduser("~/.cache/hudi-bridge-bench"), f"key-lookup-{args.index_keys}")
    if not Path(path, BUILT_MARKER).exists():
        progress(f"building a record index of {args.index_keys} keys at {path}")
        (_, build_seconds, build_rss) = in_fresh_process(partial(build_index, path, args.index_keys, args.files))
        progress(f"built in {build_seconds:.0f} s, peak {build_rss:.0f} MiB")
    report: dict[str, Any] = {"benchmark": "key_lookup", "index_keys": args.index_keys, "data_files": args.files,
                              "table": "metadata-only: a record index naming data files that do not exist (lookups read the index only)"}
    spark, _, _ = in_fresh_process(partial(_spark, path, sizes))
    report["spark"] = spark
    report["local"] = []
    for size in (s for s in sizes if s <= args.local_up_to):
        progress(f"local: {size} keys")
        (found, seconds), _, rss = in_fresh_process(partial(_local, path, size))
        report["local"].append({"keys": size, "found": found, "seconds": round(seconds, 3), "peak_rss_mib": round(rss, 1)})
    report["spark_driver_rss_growth_mib"] = round(spark[-1]["driver_peak_rss_mib"] - spark[0]["driver_peak_rss_mib"], 1)
    finish(report)


if __name__ == "__main__":
    main()
