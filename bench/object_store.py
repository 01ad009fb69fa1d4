"""Reading a table on an S3-protocol store, counted request by request (issue 30).

Starts moto's S3 server on 127.0.0.1 with the tests' counting and delaying
proxy in front of it, uploads a v8 table of P partitions (one base file
each, a second commit, a metadata table built by hudi-bridge), and measures
three operations cold, with 0 and with 20 ms of latency added to every
request:

- one_partition: the file slices of one partition (a new DirectoryLister);
- all_slices: every partition's latest file slices;
- plan: `v >= 3 AND v <= 4` (column_stats keep 2 of P files).

Each runs three ways on the same server: hudi-bridge through the metadata
table; hudi-bridge listing storage (`use_metadata=False`: one flat listing
of the table, 1,000 keys a request); hudi-rs (`hudi` on PyPI) with its
metadata table on. One JSON object per operation and size: requests (as the
proxy counted them), bytes read, seconds, and the ratios.

    python -m bench.object_store [--partitions 400 4000] [--latency-ms 0 20]

Needs the test extras (moto): scripts/setup.sh --test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from bench.common import progress
from listers import DirectoryLister, plan
from metadata import HudiTable
from metadata.storage.options import hudi_rs_options
from tests.s3_services import S3Server, partitioned_table, running_s3_server

WHERE = "v >= 3 AND v <= 4"
ONE = "p=p00003"


def _hudi_bridge(uri: str, options: dict[str, str], use_metadata: bool) -> dict[str, Callable[[], int]]:
    def one_partition() -> int:
        with DirectoryLister.open(uri, use_metadata=use_metadata, storage_options=options) as lister:
            return len(lister.list_files(ONE))

    return {
        "one_partition": one_partition,
        "all_slices": lambda: len(HudiTable.open(uri, use_metadata=use_metadata, storage_options=options).file_slices()),
        "plan": lambda: len(plan(uri, WHERE, use_metadata=use_metadata, storage_options=options).files),
    }


def _hudi_rs(uri: str, server: S3Server) -> dict[str, Callable[[], int]]:
    import hudi

    options = hudi_rs_options(uri, server.options(through_proxy=True))  # the same settings, in object_store's names

    def slices(filters: list[tuple[str, str, str]]) -> int:
        table = (hudi.HudiTableBuilder.from_base_uri(uri).with_storage_options(options)
                 .with_hudi_option("hoodie.metadata.enable", "true").build())
        return len(table.get_file_slices(hudi.HudiReadOptions().with_filters(filters)))

    return {"one_partition": lambda: slices([("p", "=", "p00003")]), "all_slices": lambda: slices([]),
            "plan": lambda: slices([("v", ">=", "3"), ("v", "<=", "4")])}


def _measure(server: S3Server, call: Callable[[], int], latency: float) -> dict[str, Any]:
    faults = server.faults
    faults.reset()
    faults.latency_seconds = latency
    start = time.perf_counter()
    try:
        result: Any = call()
    except Exception as exc:  # a failure is a figure too (hudi-rs may refuse an operation)
        result = f"failed: {str(exc).splitlines()[0][:200]}"
    seconds = time.perf_counter() - start
    figures = {"result": result, "requests": sum(faults.counts.values()), "by_kind": dict(faults.counts),
               "bytes": faults.bytes_read, "seconds": round(seconds, 3)}
    faults.reset()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="+", default=[400, 4000])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 20.0])
    parser.add_argument("--skip-hudi-rs", action="store_true")
    args = parser.parse_args()
    with running_s3_server() as server, tempfile.TemporaryDirectory(prefix="hudi-bridge-bench-") as tmp:
        client = server.client()
        client.create_dir("bench")
        for partitions in args.partitions:
            progress(f"building a table of {partitions} partitions")
            local = partitioned_table(Path(tmp) / f"t{partitions}", partitions)
            pafs.copy_files(local, f"bench/t{partitions}", destination_filesystem=client)
            uri = f"s3://bench/t{partitions}"
            options = server.options(through_proxy=True)
            ways = {"metadata_table": _hudi_bridge(uri, options, True), "listing": _hudi_bridge(uri, options, False)}
            if not args.skip_hudi_rs:
                ways["hudi_rs"] = _hudi_rs(uri, server)
            for latency_ms in args.latency_ms:
                for operation in ("one_partition", "all_slices", "plan"):
                    progress(f"{partitions} partitions, {latency_ms:g} ms: {operation}")
                    report: dict[str, Any] = {"partitions": partitions, "latency_ms": latency_ms, "operation": operation}
                    for way, calls in ways.items():
                        report[way] = _measure(server, calls[operation], latency_ms / 1000)
                    ours = report["metadata_table"]["seconds"] or 1e-9
                    report["listing_over_metadata_table"] = round(report["listing"]["seconds"] / ours, 2)
                    if "hudi_rs" in report:
                        report["hudi_rs_over_metadata_table"] = round(report["hudi_rs"]["seconds"] / ours, 2)
                    json.dump(report, sys.stdout)
                    sys.stdout.write("\n")
                    sys.stdout.flush()


if __name__ == "__main__":
    main()
