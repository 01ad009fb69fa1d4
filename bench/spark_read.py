"""Reading a Hudi table in Spark with a selective predicate, four ways, in one run.

The table: `--files` base files (default 1,000) in 10 partitions, with a
metadata table (files, column_stats); the predicate matches about 1% of the
files. Reported for each way: wall seconds (median of `--runs`), rows, and
files opened, plus ratios to plain `spark.read.parquet`:
  (a) `format("hudi")` with pushed filters pruning (a fresh DataFrame per query);
  (a0) `format("hudi")` with this Spark's default (no pruning when Spark reuses pushdown plans);
  (b) the `engine_bridge.spark.read` fast path (plan, then spark.read.parquet of the candidates);
  (c) `spark.read.parquet` of every base file with the same filter;
  (d) hudi-rs `HudiTable.read` with the same filters.
Then the last commit (an upsert of one partition) read two ways: (e) the
plain incremental read and (f) its change feed (`incremental.format=cdc`,
before and after images), in rows per second.

    python -m bench.spark_read [--files 1000] [--runs 3] [--table DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from bench.common import finish, progress
from engine_bridge.spark import local_spark_session, read, register
from engine_bridge.spark.options import BEGIN, END, INCREMENTAL_FORMAT, PRUNE_PUSHED, QUERY_TYPE, ReadOptions
from engine_bridge.spark.scan import plan_scan
from expressions import parse_sql
from listers.incremental import range_key
from metadata import HudiTable
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

PARTITIONS = 10
ROWS_PER_FILE = 200


def build(path: str, files: int) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("p", pa.string())])
    rows = files * ROWS_PER_FILE
    per_partition = rows // PARTITIONS
    builder = TableBuilder(path, schema, partition_fields=["p"], version=8, metadata_table=True, max_rows_per_file=ROWS_PER_FILE)
    builder.write(pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "v": pa.array([i * 0.5 for i in range(rows)], pa.float64()),
        "p": pa.array([f"p{i // per_partition:02d}" for i in range(rows)]),
    }), operation="bulk_insert")
    builder.write(pa.table({  # an upsert of the first partition: the commit the change-feed reads measure
        "id": pa.array(range(per_partition), pa.int64()),
        "v": pa.array([i * 0.5 + 1 for i in range(per_partition)], pa.float64()),
        "p": pa.array(["p00"] * per_partition),
    }))
    MetadataTableWriter(path).build()



def timed(runs: int, call: Callable[[], int]) -> tuple[float, int]:
    seconds, rows = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        rows = call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--table", default=None, help="Reuse (or build once into) this folder.")
    args = parser.parse_args()
    path = args.table or os.path.join(tempfile.mkdtemp(prefix="bench-spark-read-"), "t")
    if not os.path.exists(os.path.join(path, ".hoodie")):
        progress(f"building {args.files} base files at {path}")
        build(path, args.files)
    table = HudiTable.open(path)
    slices = table.file_slices()
    low = (len(slices) * ROWS_PER_FILE) // 2
    width = max(1, len(slices) // 100) * ROWS_PER_FILE  # about 1% of the files
    where = f"id >= {low} AND id < {low + width}"
    base_files = [os.path.join(path, s.base_file) for s in slices if s.base_file]

    progress("starting Spark")
    spark = local_spark_session(app_name="bench-spark-read")
    name = register(spark).name
    spark.read.format(name).load(path).limit(1).collect()  # start the Python workers once

    def hudi_pruned() -> int:
        return spark.read.format(name).option(PRUNE_PUSHED, "true").load(path).where(where).count()

    def hudi_default() -> int:
        return spark.read.format(name).load(path).where(where).count()

    def fast_path() -> int:
        return read(spark, path, where=where).count()

    def parquet_all() -> int:
        return spark.read.parquet(*base_files).where(where).count()

    def hudi_rs() -> int:
        import hudi

        options = hudi.HudiReadOptions(filters=[("id", ">=", str(low)), ("id", "<", str(low + width))])
        batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(options)
        return sum(b.filter(pa.compute.and_(pa.compute.greater_equal(b.column("id"), low), pa.compute.less(b.column("id"), low + width))).num_rows
                   for b in batches)

    report: dict[str, Any] = {"files": len(base_files), "predicate": where, "runs": args.runs}
    ways = {"a_hudi_pruned": hudi_pruned, "a0_hudi_default": hudi_default, "b_fast_path": fast_path,
            "c_parquet_all": parquet_all, "d_hudi_rs": hudi_rs}
    for key, call in ways.items():
        progress(f"timing {key}")
        seconds, rows = timed(args.runs, call)
        report[f"{key}_seconds"] = round(seconds, 3)
        report[f"{key}_rows"] = rows
    predicate = parse_sql(where, "spark")
    pruned = plan_scan(ReadOptions.parse({"path": path, PRUNE_PUSHED: "true"}), predicate)
    import hudi

    rs_slices = hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices(
        hudi.HudiReadOptions(filters=[("id", ">=", str(low)), ("id", "<", str(low + width))]))
    report["a_hudi_pruned_files_opened"] = sum(s.file_count for s in pruned.slices)
    report["a0_hudi_default_files_opened"] = len(base_files)
    report["b_fast_path_files_opened"] = len(read(spark, path, where=where).inputFiles())
    report["c_parquet_all_files_opened"] = len(base_files)
    report["d_hudi_rs_files_opened"] = len(rs_slices)
    report["rows_agree"] = len({report[f"{k}_rows"] for k in ways}) == 1
    commits = sorted(range_key(table, i) for i in table.timeline.commits())
    incremental_options = {QUERY_TYPE: "incremental", BEGIN: commits[-2], END: commits[-1]}
    feeds = {"e_incremental": lambda: spark.read.format(name).options(**incremental_options).load(path).count(),
             "f_change_feed": lambda: spark.read.format(name).options(**incremental_options, **{INCREMENTAL_FORMAT: "cdc"}).load(path).count()}
    for key, call in feeds.items():
        progress(f"timing {key}")
        seconds, rows = timed(args.runs, call)
        report[f"{key}_seconds"], report[f"{key}_rows"] = round(seconds, 3), rows
        report[f"{key}_rows_per_second"] = round(rows / seconds) if seconds else None
    report["change_feed_time_vs_incremental"] = round(report["f_change_feed_seconds"] / report["e_incremental_seconds"], 2)
    for key in ("a_hudi_pruned", "a0_hudi_default", "b_fast_path", "d_hudi_rs"):
        report[f"{key}_time_vs_parquet_all"] = round(report[f"{key}_seconds"] / report["c_parquet_all_seconds"], 3)
        report[f"{key}_files_vs_parquet_all"] = round(report[f"{key}_files_opened"] / len(base_files), 4)
    finish(report)


if __name__ == "__main__":
    main()
