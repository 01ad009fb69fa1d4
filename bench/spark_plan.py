"""Planning a wide table locally and on Spark executors, in one run per size.

For each size, a synthetic v8 table (bench.scale's, interleaved: copies of
one small Parquet file, so the data files exist, with a `files` and a
`column_stats` partition of 3 columns whose statistics are synthetic and
known, file i in partition i mod P, so that every partition spans all
values and column_stats, not the partition list, does the pruning) is built
once (kept under ~/.cache/hudi-bridge-bench/spark-plan-<partitions>-<files>),
then a plan
keeping about 1% of the files is made cold, each in a fresh process:

- local: `listers.plan`; seconds and peak RSS;
- spark: a local[2] session, then `engine_bridge.spark.plan_on_spark`; the
  plan's seconds (Spark's start apart), the driver's peak RSS (the Python
  process: the JVM is its own), and the executor tasks;
- files kept and total, and whether both plans are equal.

Sizes above --data-files-up-to are built metadata-only: one real commit,
whose instant names every file, and a metadata table listing files that do
not exist (listing and planning never read them); the report says so.

    python -m bench.spark_plan [--sizes 1000000,3000000,10000000] [--partitions-per-million 10000] [--data-files-up-to 1000000]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common import finish, in_fresh_process, peak_rss_mib, progress
from bench.scale import BUILT_MARKER, COLUMNS, SCHEMA, KnownStats, build, partition_dir
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.write.snapshot import BuildSnapshot, HeldFiles
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.table.file_naming import BaseFileName

PREDICATE = "a > {low} AND b < {high}"


def _predicate(files: int) -> str:
    # file i holds a in [i, i+9] and b in [i/2, i/2+5] (bench.scale): about 1% of the files match
    low = files // 2
    return PREDICATE.format(low=low, high=(low + files // 100) / 2)


def build_metadata_only(path: str, partitions: int, files: int) -> None:
    """An interleaved table of `files` base files that are named in its
    metadata table only (file i in partition i mod P, with bench.scale's
    known statistics), plus one real file whose commit's instant they carry."""
    builder = TableBuilder(path, SCHEMA, partition_fields=["part"], record_key="a", version=8)
    ts, written = builder.write_copies({partition_dir(0): 1}, [{"a": 0, "b": 0.0, "c": "x", "part": "x"}])
    per_partition, extra = divmod(files, partitions)
    names: dict[str, dict[str, int]] = {}
    numbers: dict[str, int] = {}
    for p in range(partitions):
        listed = names.setdefault(partition_dir(p), {})
        for rank in range(per_partition + (1 if p < extra else 0)):
            number = rank * partitions + p
            name = BaseFileName(f"{uuid.UUID(int=number + 1)}-0", "0-0-0", ts, ".parquet").name
            listed[name] = 1000
            numbers[name] = number
        if p % 1000 == 0:
            progress(f"named the files of {p} of {partitions} partitions")
    real = written[0].rsplit("/", 1)[-1]
    names[partition_dir(0)][real] = Path(path, written[0]).stat().st_size
    numbers[real] = files
    take = BuildSnapshot.take

    def synthetic(*args: Any, **kwargs: Any) -> Any:
        snapshot = take(*args, **kwargs)
        snapshot.files = HeldFiles(names)  # what the metadata table lists: the named files, not storage's one
        return snapshot

    with mock.patch.object(BuildSnapshot, "take", synthetic):
        MetadataTableWriter(path, engine=KnownStats(numbers), progress=progress).build(
            partitions=[MdtPartition.FILES, MdtPartition.COLUMN_STATS], columns=list(COLUMNS))
    Path(path, BUILT_MARKER).write_text(f"{partitions} {files} 3 metadata-only\n")


def _local(path: str, where: str) -> tuple[list[str], float]:
    from listers import plan

    start = time.perf_counter()
    planned = plan(path, where)
    return [s.file_id for s in planned.files], time.perf_counter() - start


def _spark(path: str, where: str) -> tuple[list[str], float, float, str]:
    from engine_bridge.spark import local_spark_session, plan_on_spark

    spark = local_spark_session(app_name="bench-spark-plan", cores=2)
    try:
        spark.sparkContext.parallelize([0], 1).count()  # executors' Python workers up before the clock
        start = time.perf_counter()
        planned = plan_on_spark(spark, path, where)
        seconds = time.perf_counter() - start
        note = next((s.note for s in planned.stages if s.name == "column_stats"), "")
        rss = peak_rss_mib()  # the driver's Python process (the JVM is its own)
        return [s.file_id for s in planned.files], seconds, rss, note
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000000,3000000,10000000")
    parser.add_argument("--partitions-per-million", type=int, default=10_000)
    parser.add_argument("--data-files-up-to", type=int, default=1_000_000, help="larger sizes are built metadata-only")
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "spark_plan", "sizes": []}
    for files in (int(s) for s in args.sizes.split(",")):
        partitions = max(1, files * args.partitions_per_million // 1_000_000)
        path = os.path.join(os.path.expanduser("~/.cache/hudi-bridge-bench"), f"spark-plan-{partitions}-{files}")
        metadata_only = files > args.data_files_up_to
        if not Path(path, BUILT_MARKER).exists():
            progress(f"building {files} files in {partitions} partitions at {path}")
            if metadata_only:
                build_metadata_only(path, partitions, files)
            else:
                build(path, partitions, files, 3, interleaved=True)
        where = _predicate(files)
        progress(f"{files} files: local plan")
        local: dict[str, Any]
        try:
            (local_files, local_seconds), _, local_rss = in_fresh_process(partial(_local, path, where))
            local = {"seconds": round(local_seconds, 3), "peak_rss_mib": round(local_rss, 1)}
        except Exception as exc:  # the local plan may not fit: say so
            local_files, local = None, {"failed": f"{type(exc).__name__}: {exc}"}
        progress(f"{files} files: Spark plan")
        (spark_files, spark_seconds, driver_rss, note), _, _ = in_fresh_process(partial(_spark, path, where))
        report["sizes"].append({
            "files_total": files + (1 if metadata_only else 10), "partitions": partitions, "predicate": where,
            "data_files": "absent: metadata-only (named in the metadata table, never read)" if metadata_only else "copies of one file",
            "local_plan": local,
            "spark_plan": {"seconds": round(spark_seconds, 3), "driver_peak_rss_mib": round(driver_rss, 1), "where": note},
            "files_kept": len(spark_files), "plans_equal": local_files is None or sorted(local_files) == sorted(spark_files),
            "spark_vs_local_time": round(spark_seconds / local["seconds"], 2) if "seconds" in local else None,
        })
    if len(report["sizes"]) > 1:
        first, last = report["sizes"][0], report["sizes"][-1]
        report["driver_rss_growth_mib"] = round(last["spark_plan"]["driver_peak_rss_mib"] - first["spark_plan"]["driver_peak_rss_mib"], 1)
    finish(report)


if __name__ == "__main__":
    main()
