"""`scan()` against hudi-rs and DuckDB: a 1% predicate on 1,000 base files in
10 partitions, COW and MOR (the MOR table has log files on a tenth of its
file groups). Each reader runs cold, in a new process:

- `scan()`: plans with the metadata table's column_stats and reads the kept
  slices (base files by pyarrow, MOR slices merged by hudi-rs);
- hudi-rs: `read(HudiReadOptions(filters=..., projection=...))` with the same range (it prunes
  on partitions and Parquet footers), its rows filtered after;
- DuckDB: `read_parquet` over every latest base file with the filter in SQL
  (read-optimized on MOR: DuckDB cannot merge logs).

Reported per table type: files opened (slices planned for scan; every base
file for DuckDB), rows, seconds cold (a new process's first run: imports
included) and warm (the same run again in that process), each the median of
--runs new processes (the readers take turns, each round starting with the
next one, so a slow minute falls on all of them) with the range, peak RSS,
and the ratios of the medians. A single cold run is not a measure here: in
one bench run, the cold scan took 0.068 to 0.235 s and DuckDB's 0.15 to
0.25 s. Goal: scan() opens only the planned files and is at least 2x faster
than DuckDB.

    python -m bench.scan [--files 1000] [--rows-per-file 1000] [--runs 5] [--table-dir DIR]   (tables kept in DIR are reused)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.common import finish, in_fresh_process, progress
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

PARTITIONS = 10


def one_percent(files: int, rows_per_file: int) -> tuple[int, int]:
    """The `ts` range of the middle insert: 1% of the rows, in 10 of the files."""
    per_write = rows_per_file * PARTITIONS
    middle = (files // PARTITIONS // 2) * per_write
    return middle, middle + per_write - 1


def build(path: str, table_type: str, files: int, rows_per_file: int) -> None:
    """`files` base files over 10 partitions, one insert per tenth of the `ts` range."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("fare", pa.float64()), ("rider", pa.string()), ("p", pa.string())])
    builder = TableBuilder(path, schema, partition_fields=["p"], version=8, table_type=table_type)
    writes = files // PARTITIONS
    per_write = rows_per_file * PARTITIONS
    for w in range(writes):
        ids = pa.array(range(w * per_write, (w + 1) * per_write), pa.int64())
        builder.write(pa.table({"id": ids, "ts": ids, "fare": pa.array([float(i % 997) for i in range(per_write)]),
                                "rider": pa.array([f"rider-{i % 50}" for i in range(per_write)]),
                                "p": pa.array([f"p{i % PARTITIONS}" for i in range(per_write)])}), operation="insert")
        if w % 20 == 0:
            progress(f"  {table_type}: {(w + 1) * PARTITIONS} of {files} files")
    if table_type == "MERGE_ON_READ":  # logs on a tenth of the file groups: an update in every tenth write
        updates = [w * per_write + k for w in range(0, writes, 10) for k in range(0, per_write, 97)]
        builder.write(pa.table({"id": pa.array(updates, pa.int64()), "ts": pa.array(updates, pa.int64()),
                                "fare": pa.array([-1.0] * len(updates)), "rider": pa.array(["updated"] * len(updates)),
                                "p": pa.array([f"p{u % per_write % PARTITIONS}" for u in updates])}))
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS])


def warm(run: Any, path: str, lo: int, hi: int) -> dict[str, Any]:
    """The run cold (the process's first: imports and all), then the seconds of the same run again (warm)."""
    import time

    result = run(path, lo, hi)
    start = time.perf_counter()
    again = run(path, lo, hi)
    assert again == result
    return {**result, "warm_seconds": round(time.perf_counter() - start, 4)}


def run_scan(path: str, lo: int, hi: int) -> dict[str, Any]:
    from listers import scan

    result = scan(path, where=f"ts BETWEEN {lo} AND {hi}", columns=["id", "ts", "fare", "rider"])
    rows = result.to_table()
    return {"files_opened": len(result.slices), "rows": rows.num_rows, "fare_sum": round(sum(rows.column("fare").to_pylist()), 2)}


def run_hudi_rs(path: str, lo: int, hi: int) -> dict[str, Any]:
    import hudi
    import pyarrow.compute as pc

    options = hudi.HudiReadOptions(filters=[("ts", ">=", str(lo)), ("ts", "<=", str(hi))], projection=["id", "ts", "fare", "rider"])
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(options)
    table = pa.Table.from_batches(batches)
    rows = table.filter(pc.and_(pc.greater_equal(table.column("ts"), lo), pc.less_equal(table.column("ts"), hi)))
    return {"rows": rows.num_rows, "fare_sum": round(sum(rows.column("fare").to_pylist()), 2)}


def run_duckdb(path: str, lo: int, hi: int) -> dict[str, Any]:
    import duckdb

    from metadata import HudiTable

    files = [str(Path(path) / s.base_file) for s in HudiTable.open(path).file_slices() if s.base_file]
    connection = duckdb.connect()
    found = connection.sql(f"SELECT count(*), round(sum(fare), 2) FROM read_parquet({files!r}) WHERE ts BETWEEN {lo} AND {hi}")
    count, fare_sum = found.fetchone()  # type: ignore[misc]
    return {"files_opened": len(files), "rows": count, "fare_sum": fare_sum}


def _medians(runs: list[tuple[dict[str, Any], float, float]]) -> dict[str, Any]:
    """One reader's runs: its answer (the same in every run), the medians of its cold and warm seconds with their
    ranges, and its largest peak RSS."""
    answers = [{k: v for k, v in result.items() if k != "warm_seconds"} for result, _, _ in runs]
    assert all(a == answers[0] for a in answers), answers
    cold = [seconds for _, seconds, _ in runs]
    warm_ = [result["warm_seconds"] for result, _, _ in runs]
    return {**answers[0], "cold_seconds": round(statistics.median(cold), 4), "cold_range": [round(min(cold), 4), round(max(cold), 4)],
            "warm_seconds": round(statistics.median(warm_), 4), "warm_range": [round(min(warm_), 4), round(max(warm_), 4)],
            "peak_rss_mib": max(peak for _, _, peak in runs), "runs": len(runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rows-per-file", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="new processes per reader (medians reported)")
    parser.add_argument("--table-dir", default=None)
    args = parser.parse_args()
    root = Path(args.table_dir or tempfile.mkdtemp(prefix="bench-scan-"))
    report: dict[str, Any] = {"files": args.files, "partitions": PARTITIONS, "rows_per_file": args.rows_per_file,
                              "predicate": "ts BETWEEN lo AND hi (1% of the rows, in 1% of the files)"}
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = str(root / f"{table_type.lower()}-{args.files}-{args.rows_per_file}")
        if not (Path(path) / ".hoodie" / "hoodie.properties").is_file():  # a table built before (--table-dir) is reused
            progress(f"building {table_type} with {args.files} base files")
            build(path, table_type, args.files, args.rows_per_file)
            # the build's writes flushed before the readers run: three times, the first reader right after a build
            # took 1.3 to 5.9 s cold (once DuckDB too), against 0.1 to 0.2 s; most likely the disk busy writing back
            os.sync()
        lo, hi = one_percent(args.files, args.rows_per_file)
        readers = [("scan", run_scan), ("hudi_rs", run_hudi_rs), ("duckdb", run_duckdb)]
        runs: dict[str, list[tuple[dict[str, Any], float, float]]] = {name: [] for name, _ in readers}
        for round_ in range(args.runs):
            progress(f"  round {round_ + 1} of {args.runs}")
            for name, run in readers[round_ % len(readers):] + readers[: round_ % len(readers)]:
                result, seconds, peak = in_fresh_process(partial(warm, run, path, lo, hi))
                runs[name].append((result, seconds - result["warm_seconds"], peak))
        measured: dict[str, Any] = {name: _medians(found) for name, found in runs.items()}
        if table_type == "COPY_ON_WRITE":
            assert measured["scan"]["rows"] == measured["duckdb"]["rows"] == measured["hudi_rs"]["rows"], measured
        else:
            assert measured["scan"]["rows"] == measured["hudi_rs"]["rows"], measured
        for when in ("cold_seconds", "warm_seconds"):
            measured[f"duckdb_over_scan_{when.split('_')[0]}"] = round(measured["duckdb"][when] / measured["scan"][when], 2)
            measured[f"hudi_rs_over_scan_{when.split('_')[0]}"] = round(measured["hudi_rs"][when] / measured["scan"][when], 2)
        report[table_type.lower()] = measured
    finish(report)


if __name__ == "__main__":
    main()
