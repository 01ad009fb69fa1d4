"""Pruning 1,000,000 files on column statistics with a 4-leaf predicate.

Goal: under 0.5 s. Prints a JSON report with files per second, the time and
the peak Python heap of the evaluation.

    python -m bench.prune_files [--files 1000000]
"""

from __future__ import annotations

import argparse
import random
from datetime import date, timedelta

import pyarrow as pa

from bench.common import finish, measured, progress
from expressions import parse_sql, prune_files

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1_000_000)
    args = parser.parse_args()
    report: dict[str, object] = {"benchmark": "prune_files", "files": args.files, "predicate": PREDICATE, "goal_seconds": 0.5}
    progress(f"building statistics for {args.files:,} files")
    stats = stats_table(args.files)
    expr = parse_sql(PREDICATE, "trino")
    prune_files(expr, stats.slice(0, 1000))  # warm up imports and kernels
    with measured(report, "prune", trace_memory=False):
        kept = prune_files(expr, stats)
    traced: dict[str, object] = {}
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
    finish(report)


if __name__ == "__main__":
    main()
