"""Building and syncing the metadata table (issue 15).

Builds a v8 table without a metadata table (default 100,000 base files in
1,000 partitions, 3 data columns, copies of one 50-row Parquet file) with the
project's builder, then times
`index build` (files, column_stats, partition_stats) with the local engine
and, with --spark, with the Spark engine (a rebuild on the same table), and
the `sync` of one commit touching 10 files, as seconds and as a ratio to the
full build. The local build runs in a fresh process so that its peak RSS
is its own. Prints a JSON report.

    python -m bench.index_build [--partitions 1000] [--files 100000] [--spark]
"""

from __future__ import annotations

import argparse
import tempfile
from functools import partial
from typing import Any

import pyarrow as pa

from bench.common import finish, in_fresh_process, measured, progress
from metadata.mdt.stats_engine import LocalStatsEngine
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("fare", pa.float64()), ("rider", pa.string())])


def _rows(ids: range, partitions: int) -> list[dict[str, object]]:
    return [{"id": i, "part": f"{i % partitions:05d}", "fare": i * 0.5, "rider": f"rider-{i % 97}"} for i in ids]


def _build_local(path: str, parallelism: int) -> int:
    return MetadataTableWriter(path, engine=LocalStatsEngine(parallelism=parallelism)).build().files_indexed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--spark", action="store_true", help="also build with the Spark engine (local[2])")
    args = parser.parse_args()
    path = tempfile.mkdtemp(prefix="bench-index-") + "/t"
    builder = TableBuilder(path, SCHEMA, partition_fields=["part"], version=8)
    progress(f"writing {args.files} base files in {args.partitions} partitions")
    per_partition, extra = divmod(args.files, args.partitions)
    for start in range(0, args.partitions, 100):  # one bulk insert per 100 partitions
        counts = {f"part={p:05d}": per_partition + (1 if p < extra else 0) for p in range(start, min(start + 100, args.partitions))}
        builder.write_copies(counts, _rows(range(start, start + 50), args.partitions))
    report: dict[str, Any] = {"files": args.files, "partitions": args.partitions}
    progress("building the metadata table (local engine)")
    files_indexed, seconds, peak = in_fresh_process(partial(_build_local, path, args.parallelism))
    report.update(build_local_seconds=seconds, build_local_peak_rss_mib=peak,
                  build_local_files_per_second=round(files_indexed / seconds, 1))
    if args.spark:
        from engine_bridge.spark import local_spark_session
        from engine_bridge.spark.index_engine import SparkStatsEngine

        spark = local_spark_session(app_name="bench-index")
        with measured(report, "build_spark", trace_memory=False):
            rebuilt = MetadataTableWriter(path, engine=SparkStatsEngine(spark)).build(rebuild=True)
        report["build_spark_files_per_second"] = round(rebuilt.files_indexed / float(report["build_spark_seconds"]), 1)
        spark.stop()
    builder.write_copies({"part=00000": 10}, _rows(range(10), args.partitions))  # one commit, 10 files
    with measured(report, "sync_one_commit"):
        MetadataTableWriter(path).sync()
    report["sync_to_build_ratio"] = round(float(report["sync_one_commit_seconds"]) / float(report["build_local_seconds"]), 5)
    finish(report)


if __name__ == "__main__":
    main()
