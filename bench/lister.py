"""Listing a wide table through the DirectoryLister vs a plain recursive listing.

Builds a table without a metadata table (default 10,000 partitions and
100,000 files) with the project's builder, then times listing all partitions
and all latest file slices through one DirectoryLister against a recursive
`pyarrow.fs` listing of the same folder. Prints a JSON report.

    python -m bench.lister [--partitions 10000] [--files 100000]
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from bench.common import finish, measured, progress
from listers import DirectoryLister
from metadata.sample_tables.builder import TableBuilder


def build(path: str, partitions: int, files: int) -> None:
    schema = pa.schema([("id", pa.int64()), ("part", pa.string())])
    per_partition = max(files // partitions, 1)
    builder = TableBuilder(path, schema, partition_fields=["part"], version=8, max_rows_per_file=1)
    batch = 1000
    for start in range(0, partitions, batch):
        rows = [{"id": p * per_partition + k, "part": f"{p:05d}"} for p in range(start, min(start + batch, partitions)) for k in range(per_partition)]
        builder.write(rows, operation="bulk_insert")
        progress(f"wrote partitions {start}..{min(start + batch, partitions) - 1}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "lister", "partitions": args.partitions, "files": args.files}
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/wide"
        with measured(report, "build", trace_memory=False):
            build(path, args.partitions, args.files)
        progress("listing through the DirectoryLister")

        def list_all() -> tuple[list[str], dict]:
            lister = DirectoryLister.open(path, use_metadata=False)
            partitions = lister.list_partitions()
            return partitions, lister.list_files_batch(partitions)

        with measured(report, "lister", trace_memory=False):
            partitions, slices = list_all()
        traced: dict[str, Any] = {}
        with measured(traced, "lister"):  # a second, traced run for the Python heap peak
            list_all()
        report["lister_peak_heap_mib"] = traced["lister_peak_heap_mib"]
        report["lister_partitions"] = len(partitions)
        report["lister_file_slices"] = sum(len(v) for v in slices.values())
        progress("plain recursive listing")
        with measured(report, "recursive_listing", trace_memory=False):
            infos = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(path, recursive=True))
            data_files = [i for i in infos if i.type == pafs.FileType.File and i.path.endswith(".parquet")]
        report["recursive_listing_files"] = len(data_files)
        report["lister_over_recursive_ratio"] = round(report["lister_seconds"] / max(report["recursive_listing_seconds"], 1e-9), 2)
    finish(report)


if __name__ == "__main__":
    main()
