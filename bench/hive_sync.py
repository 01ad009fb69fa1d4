"""Hive sync of a wide table into a real metastore (the embedded one).

Builds a table with a metadata table (default 10,000 partitions), starts the
metastore PySpark's jars provide, and times: the first sync (batched
partition calls), a no-op re-sync, an incremental sync after one commit
touching a few partitions, and the same first sync with one partition per
call (the anchor's serial behaviour) on a smaller slice to get the ratio.
Prints a JSON report.

    python -m bench.hive_sync [--partitions 10000] [--batch-size 1000]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import pyarrow as pa

from bench.common import finish, measured, progress
from hive_sync import EmbeddedMetastore, SyncOptions, sync
from hive_sync.hms import HmsClient
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder


def build(path: str, partitions: int) -> TableBuilder:
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    builder = TableBuilder(path, schema, name="wide", version=8, partition_fields=["day"], metadata_table=True)
    builder.write([{"id": i, "day": f"d{i:05d}"} for i in range(partitions)], operation="bulk_insert")
    return builder


def partition_calls(calls: dict[str, int]) -> int:
    return sum(v for k, v in calls.items() if "partition" in k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=1_000)
    parser.add_argument("--serial-sample", type=int, default=1_000, help="partitions synced one per call for the ratio")
    args = parser.parse_args()
    report: dict[str, object] = {"benchmark": "hive_sync", "partitions": args.partitions, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="hudi-bridge-bench-") as tmp:
        progress(f"building {args.partitions} partitions ...")
        builder = build(str(Path(tmp) / "wide"), args.partitions)
        small = build(str(Path(tmp) / "small"), args.serial_sample)
        progress("starting the metastore ...")
        with EmbeddedMetastore(Path(tmp) / "metastore") as metastore, HmsClient(metastore.uri) as client:
            options = SyncOptions(database="bench", batch_size=args.batch_size)
            with measured(report, "first_sync"):
                first = sync(HudiTable.open(builder.storage.uri), client, options)
            report["first_sync_partition_calls"] = partition_calls(first.calls)
            report["partition_call_limit"] = math.ceil(args.partitions / args.batch_size)
            client.calls.clear()
            with measured(report, "noop_resync"):
                noop = sync(HudiTable.open(builder.storage.uri), client, options)
            report["noop_resync_calls"] = dict(noop.calls)
            report["noop_resync_wrote"] = noop.applied
            builder.write([{"id": 10**9 + i, "day": d} for i, d in enumerate(["d00001", "new1", "new2"])])
            client.calls.clear()
            with measured(report, "incremental_sync"):
                incremental = sync(HudiTable.open(builder.storage.uri), client, options)
            report["incremental_sync_calls"] = dict(incremental.calls)
            progress(f"syncing {args.serial_sample} partitions batched and one per call ...")
            with measured(report, "sample_batched", trace_memory=False):
                sync(HudiTable.open(small.storage.uri), client, SyncOptions(database="bench_batched", batch_size=args.batch_size))
            with measured(report, "sample_serial", trace_memory=False):
                sync(HudiTable.open(small.storage.uri), client, SyncOptions(database="bench_serial", batch_size=1))
    report["serial_over_batched"] = round(float(report["sample_serial_seconds"]) / float(report["sample_batched_seconds"]), 2)  # type: ignore[arg-type]
    report["first_sync_over_noop_resync"] = round(float(report["first_sync_seconds"]) / float(report["noop_resync_seconds"]), 1)  # type: ignore[arg-type]
    finish(report)


if __name__ == "__main__":
    main()
