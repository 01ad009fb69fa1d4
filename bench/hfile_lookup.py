"""HFile prefix lookups vs a full scan on a column_stats-shaped HFile.

Writes an HFile of N column-stats records with the project's writer, then
looks up the records of 1,000 files by key prefix and compares that with a
full scan that filters the same keys. Prints a JSON report.

    python -m bench.hfile_lookup [--records 1000000] [--lookups 1000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from bench.common import finish, measured, progress
from metadata.mdt import keys
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.record_builders import column_stats_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.write.hfile_writer import HFileWriter
from metadata.storage.storage import Storage

COLUMNS = ("fare", "ts", "rider", "driver")


def build(path: Path, records: int) -> list[str]:
    """Records for records/len(COLUMNS) files in 100 partitions; returns file names."""
    files = records // len(COLUMNS)
    names = [f"{i:08d}-0000-0000-0000-000000000000-0_0-1-1_20240101000000000.parquet" for i in range(files)]
    cells = []
    for i, name in enumerate(names):
        partition = f"city={i % 100}"
        for column in COLUMNS:
            key = keys.column_stats_key(column, partition, name)
            cells.append((key.encode(), encode_record(column_stats_record(key, name, column, i, i + 10, 1000, 0))))
        if i % 50000 == 0:
            progress(f"encoded {i * len(COLUMNS):,} of {records:,} records")
    cells.sort()
    writer = HFileWriter()
    writer.add_all(cells)
    path.write_bytes(writer.finish({b"schema": METADATA_RECORD_SCHEMA_JSON.encode()}))
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=1000)
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "hfile_lookup", "records": args.records, "lookups": args.lookups}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "col-stats-0000-0_0-1-1_00000000000000000.hfile"
        with measured(report, "write", trace_memory=False):
            names = build(path, args.records)
        report["file_mib"] = round(path.stat().st_size / 2**20, 1)
        rng = random.Random(42)
        wanted = rng.sample(range(len(names)), args.lookups)
        prefixes = sorted(
            (keys.column_index_id("fare") + keys.partition_index_id(f"city={i % 100}") + keys.file_index_id(names[i])).encode()
            for i in wanted
        )
        storage = Storage.open(folder)
        progress("prefix lookups")
        with measured(report, "prefix_lookup"):
            reader = HFileReader.open(storage, path.name)
            found = list(reader.scan_prefixes(prefixes))
        report["prefix_lookup_blocks_read"] = reader.blocks_read
        report["data_blocks"] = len(reader.data_index)
        progress("full scan")
        with measured(report, "full_scan"):
            scanner = HFileReader.open(storage, path.name)
            wanted_set = set(prefixes)
            scanned = [(row, value) for row, value in scanner.iter_all() if row in wanted_set]
        assert found == scanned and len(found) == args.lookups, "prefix lookup and scan disagree"
        report["records_found"] = len(found)
        report["scan_over_lookup_ratio"] = round(report["full_scan_seconds"] / max(report["prefix_lookup_seconds"], 1e-9), 2)
    finish(report)


if __name__ == "__main__":
    main()
