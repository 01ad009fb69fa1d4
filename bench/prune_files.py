"""Pruning 1,000,000 files on column statistics with a 4-leaf predicate.

Goal: under 0.5 s. Prints a JSON report with files per second, the time and
the peak Python heap of the evaluation; then the same shape through
order-preserving functions; then a record-index lookup: a table of
--records records in 1,000-record files, its record_index built by the
writer, and `id IN (1,000 random keys)` planned (cold, in a new process)
with and without the index, plus the bare key lookup; then a 100,000-key IN
list (built as an expression: SQL text that long is not how such lists come),
lookup and plan, cold (goal: plan under 2 s).

    python -m bench.prune_files [--files 1000000] [--records 1000000] [--large-in 100000] [--table DIR]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.common import finish, in_fresh_process, measured, progress
from expressions import parse_sql, prune_files
from expressions.tree import In, Literal, Ref
from listers.planner import plan
from metadata import MetadataTable
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.indexes import record_locations
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

PREDICATE = "fare > 40 AND city IN ('sf', 'la', 'nyc') AND trip_date >= DATE '2024-03-01' AND NOT (fare > 90)"
# The same shape through order-preserving functions (each evaluated per file's range).
FUNCTIONS_PREDICATE = ("fare * 1.1 > 44 AND lower(city) IN ('sf', 'la', 'nyc') AND date_add(trip_date, 7) >= DATE '2024-03-08' "
                       "AND month(trip_date) = 6")


def stats_table(files: int, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)
    fares = [rng.uniform(0, 100) for _ in range(files)]
    cities = ["ams", "la", "nyc", "sf", "sp"]
    days = [rng.randrange(0, 365) for _ in range(files)]
    city_low = [rng.randrange(0, 5) for _ in range(files)]
    return pa.table({
        "fileName": pa.array([f"file-{i:07d}.parquet" for i in range(files)]),
        "valueCount": pa.array([1000] * files, pa.int64()),
        "fare_minValue": pa.array(fares, pa.float64()),
        "fare_maxValue": pa.array([f + 5 for f in fares], pa.float64()),
        "fare_nullCount": pa.array([0] * files, pa.int64()),
        "city_minValue": pa.array([cities[c] for c in city_low]),
        "city_maxValue": pa.array([cities[min(c + 1, 4)] for c in city_low]),
        "city_nullCount": pa.array([0] * files, pa.int64()),
        "trip_date_minValue": pa.array([date(2024, 1, 1) + timedelta(days=d) for d in days], pa.date32()),
        "trip_date_maxValue": pa.array([date(2024, 1, 1) + timedelta(days=d + 3) for d in days], pa.date32()),
        "trip_date_nullCount": pa.array([0] * files, pa.int64()),
    })


RECORDS_PER_FILE = 1000
LOOKUP_KEYS = 1000
BUILT_MARKER = ".bench-record-index-built"


def record_index_table(path: str, records: int) -> dict[str, object]:
    """A v8 table of `records` upserted records (keys k0000000..) in 10
    partitions, files of 1,000 records, with files and record_index built."""
    marker = Path(path, BUILT_MARKER)
    if marker.exists() and marker.read_text().strip() == str(records):
        return {"reused_build": True}
    builder = TableBuilder(path, pa.schema([("id", pa.string()), ("part", pa.string()), ("v", pa.int64())]),
                           partition_fields=["part"], version=8, max_rows_per_file=RECORDS_PER_FILE)
    ids = [f"k{i:07d}" for i in range(records)]
    rows = pa.table({"id": ids, "part": [f"p{i % 10}" for i in range(records)], "v": list(range(records))})
    progress(f"writing {records:,} records")
    builder.write(rows)
    progress("building files and record_index")
    report: dict[str, Any] = {}
    with measured(report, "record_index_build", trace_memory=False):
        MetadataTableWriter(path, progress=progress).build([MdtPartition.FILES, MdtPartition.RECORD_INDEX])
    marker.write_text(f"{records}\n")
    return report


def _lookup(path: str, keys: list[str]) -> int:
    mdt = MetadataTable.open(path)
    try:
        return len(record_locations(mdt, keys))
    finally:
        mdt.close()


def _plan(path: str, where: str) -> tuple[int, int, float]:
    """(slices kept, slices before the record-index stage, that stage's seconds)."""
    result = plan(path, where)
    stage = next(s for s in result.stages if "record_index" in s.name)
    return len(result.files), stage.total, round(stage.seconds, 4)


def _plan_keys(path: str, keys: list[str]) -> tuple[int, float]:
    """(slices kept, record-index stage seconds) of `id IN (keys)` given as an expression."""
    result = plan(path, In(Ref(("id",)), tuple(Literal(k, "string") for k in keys)))
    stage = next(s for s in result.stages if "record_index" in s.name)
    return len(result.files), round(stage.seconds, 4)


def large_in_case(path: str, records: int, count: int) -> dict[str, object]:
    keys = sorted(f"k{i:07d}" for i in random.Random(4).sample(range(records), count))
    report: dict[str, Any] = {"keys": count}
    report["keys_found"], report["lookup_cold_seconds"], report["lookup_peak_rss_mib"] = in_fresh_process(partial(_lookup, path, keys))
    (kept, stage_seconds), report["plan_cold_seconds"], report["plan_peak_rss_mib"] = in_fresh_process(partial(_plan_keys, path, keys))
    report.update(files_kept=kept, record_index_stage_seconds=stage_seconds, goal_seconds=2.0,
                  meets_goal=report["plan_cold_seconds"] <= 2.0)
    return report


def record_index_case(path: str, records: int, large_in: int = 0) -> dict[str, object]:
    report = record_index_table(path, records)
    keys = sorted(f"k{i:07d}" for i in random.Random(3).sample(range(records), LOOKUP_KEYS))
    where = f"id IN ({', '.join(repr(k) for k in keys)})"
    found, report["lookup_cold_seconds"], _ = in_fresh_process(partial(_lookup, path, keys))
    (kept, total, stage_seconds), report["plan_cold_seconds"], report["plan_peak_rss_mib"] = in_fresh_process(partial(_plan, path, where))
    report.update(records=records, keys=LOOKUP_KEYS, keys_found=found, record_index_stage_seconds=stage_seconds,
                  files_kept=kept, files_before_record_index=total)
    if large_in:
        progress(f"record-index lookup of {large_in:,} keys")
        report["large_in"] = large_in_case(path, records, min(large_in, records))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=1_000_000, help="records of the record-index table (0: skip that case)")
    parser.add_argument("--large-in", type=int, default=100_000, help="keys of the large IN list (0: skip)")
    parser.add_argument("--table", default=None, help="where the record-index table is built, or reused from")
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "prune_files", "files": args.files, "predicate": PREDICATE, "goal_seconds": 0.5}
    progress(f"building statistics for {args.files:,} files")
    stats = stats_table(args.files)
    expr = parse_sql(PREDICATE, "trino")
    prune_files(expr, stats.slice(0, 1000))  # warm up imports and kernels
    with measured(report, "prune", trace_memory=False):
        kept = prune_files(expr, stats)
    traced: dict[str, Any] = {}
    with measured(traced, "prune"):  # a second run, traced, for the Python heap peak
        prune_files(expr, stats)
    report["prune_peak_heap_mib"] = traced["prune_peak_heap_mib"]
    report["files_kept"] = len(kept)
    report["files_per_second"] = round(args.files / report["prune_seconds"])
    report["meets_goal"] = report["prune_seconds"] < 0.5
    progress("pruning through functions")
    functions = parse_sql(FUNCTIONS_PREDICATE, "spark")
    report["functions_predicate"] = FUNCTIONS_PREDICATE
    with measured(report, "prune_functions", trace_memory=False):
        report["functions_files_kept"] = len(prune_files(functions, stats))
    report["functions_to_plain_ratio"] = round(report["prune_functions_seconds"] / report["prune_seconds"], 1)
    if args.records:
        progress("record-index lookup")
        if args.table:
            report["record_index"] = record_index_case(args.table, args.records, args.large_in)
        else:
            with tempfile.TemporaryDirectory(prefix="bench-record-index-") as folder:
                report["record_index"] = record_index_case(str(Path(folder, "t")), args.records, args.large_in)
    finish(report)


if __name__ == "__main__":
    main()
