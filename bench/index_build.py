"""Building and syncing the metadata table (issues 15 and 28).

Builds a v8 table without a metadata table (default 100,000 base files in
1,000 partitions, 3 data columns, copies of one 50-row Parquet file) with the
project's builder, then times, each in a fresh process so that its peak RSS
is its own:

- `index build` (files, column_stats, partition_stats) with the local
  engine: on threads only, then (after a drop) with a process per core as
  the CLI runs it, and their ratio;
- with --spark, a rebuild with the Spark engine (with --spark-only, the
  first build) on `local[2]` (footers read
  and column_stats records encoded on the executors): seconds (the
  session's start apart) and the driver's peak RSS (its Python process);
- the `sync` of one commit touching 10 files (local), as seconds and as a
  ratio to the full build; the `sync` of one commit of a file in every
  partition (local: every partition's statistics rolled up again);
- with --spark, the `sync` of one commit touching --sync-files files
  (default 10,000) with the Spark engine.

Prints a JSON report.

    python -m bench.index_build [--partitions 1000] [--files 100000] [--spark | --spark-only] [--sync-files 10000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from functools import partial
from typing import Any

import pyarrow as pa

from bench.common import finish, in_fresh_process, peak_rss_mib, progress
from metadata.mdt.stats_engine import LocalStatsEngine
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("fare", pa.float64()), ("rider", pa.string())])


def _rows(ids: range, partitions: int) -> list[dict[str, object]]:
    return [{"id": i, "part": f"{i % partitions:05d}", "fare": i * 0.5, "rider": f"rider-{i % 97}"} for i in ids]


def _build_local(path: str, parallelism: int, processes: int | None) -> int:
    return MetadataTableWriter(path, engine=LocalStatsEngine(parallelism=parallelism, processes=processes)).build().files_indexed


def _sync_local(path: str) -> int:
    """A sync with the local engine (in a fresh process: seconds and peak RSS its own, no heap tracing slowing it)."""
    return len(MetadataTableWriter(path).sync().instants)


def _with_spark(path: str, build: bool) -> tuple[int, float, float]:
    """(files indexed, seconds, driver peak RSS) of a Spark rebuild or sync."""
    from engine_bridge.spark import local_spark_session
    from engine_bridge.spark.index_engine import SparkStatsEngine

    spark = local_spark_session(app_name="bench-index", cores=2)
    try:
        spark.sparkContext.parallelize([0], 2).count()  # executors' Python workers up before the clock
        writer = MetadataTableWriter(path, engine=SparkStatsEngine(spark), progress=progress)
        start = time.perf_counter()
        done = writer.build(rebuild=True) if build else writer.sync()
        return done.files_indexed, time.perf_counter() - start, peak_rss_mib()
    finally:
        spark.stop()


def _write_spread(builder: TableBuilder, files: int, partitions: int) -> None:
    """One commit of `files` new base files across the partitions."""
    per_partition, extra = divmod(files, partitions)
    counts = {f"part={p:05d}": per_partition + (1 if p < extra else 0) for p in range(partitions)}
    builder.write_copies({p: n for p, n in counts.items() if n}, _rows(range(50), partitions))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--spark", action="store_true", help="also build with the Spark engine (local[2])")
    parser.add_argument("--spark-only", action="store_true", help="build with the Spark engine only (no local build to compare)")
    parser.add_argument("--sync-files", type=int, default=10_000, help="files of the commit synced with the Spark engine")
    args = parser.parse_args()
    path = tempfile.mkdtemp(prefix="bench-index-") + "/t"
    builder = TableBuilder(path, SCHEMA, partition_fields=["part"], version=8)
    progress(f"writing {args.files} base files in {args.partitions} partitions")
    per_partition, extra = divmod(args.files, args.partitions)
    for start in range(0, args.partitions, 100):  # one bulk insert per 100 partitions
        counts = {f"part={p:05d}": per_partition + (1 if p < extra else 0) for p in range(start, min(start + 100, args.partitions))}
        builder.write_copies(counts, _rows(range(start, start + 50), args.partitions))
    report: dict[str, Any] = {"files": args.files, "partitions": args.partitions}
    if not args.spark_only:
        progress("building the metadata table (local engine, threads only), then dropping it")
        files_indexed, seconds, peak = in_fresh_process(partial(_build_local, path, args.parallelism, 1))
        report.update(build_local_threads_seconds=seconds, build_local_threads_peak_rss_mib=peak)
        MetadataTableWriter(path).drop(["files"])
        progress("building the metadata table (local engine, a process per core, as `index build` does)")
        files_indexed, seconds, peak = in_fresh_process(partial(_build_local, path, args.parallelism, None))
        report.update(build_local_seconds=seconds, build_local_peak_rss_mib=peak,
                      build_local_files_per_second=round(files_indexed / seconds, 1),
                      processes_vs_threads_build_time=round(seconds / float(report["build_local_threads_seconds"]), 2))
    if args.spark or args.spark_only:
        progress("building with the Spark engine" if args.spark_only else "rebuilding with the Spark engine")
        built, seconds, driver_rss = in_fresh_process(partial(_with_spark, path, True))[0]
        report.update(build_spark_seconds=round(seconds, 3), build_spark_driver_peak_rss_mib=round(driver_rss, 1),
                      build_spark_files_per_second=round(built / seconds, 1))
        if not args.spark_only:
            report["spark_vs_local_build_time"] = round(seconds / float(report["build_local_seconds"]), 2)
    builder.write_copies({"part=00000": 10}, _rows(range(10), args.partitions))  # one commit, 10 files
    _, report["sync_one_commit_seconds"], report["sync_one_commit_peak_rss_mib"] = in_fresh_process(partial(_sync_local, path))
    built_seconds = float(report.get("build_local_seconds", report.get("build_spark_seconds", 1)))
    report["sync_to_build_ratio"] = round(float(report["sync_one_commit_seconds"]) / built_seconds, 5)
    progress(f"one commit of a file in each of the {args.partitions} partitions, synced (local)")
    _write_spread(builder, args.partitions, args.partitions)
    _, report["sync_spread_commit_seconds"], report["sync_spread_commit_peak_rss_mib"] = in_fresh_process(partial(_sync_local, path))
    if args.spark or args.spark_only:
        progress(f"one commit of {args.sync_files} files, synced with the Spark engine")
        _write_spread(builder, args.sync_files, args.partitions)
        synced, seconds, driver_rss = in_fresh_process(partial(_with_spark, path, False))[0]
        report["sync_spark"] = {"files_in_commit": args.sync_files, "seconds": round(seconds, 3),
                                "driver_peak_rss_mib": round(driver_rss, 1)}
    shutil.rmtree(path.rsplit("/", 1)[0], ignore_errors=True)
    finish(report)


if __name__ == "__main__":
    main()
