"""`hudi-bridge demo`: the README's main job on a sample table."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, json_requested, print_table, slice_rows
from engine_bridge.cli.sync import render_sync, run_sync
from engine_bridge.cli.table import print_summary, table_summary, timeline_rows
from hive_sync import SyncMode, SyncOptions
from listers import plan
from metadata import HudiTable
from metadata.mdt.writer import MetadataTableWriter
from metadata.testing.sample import build_sample_table

DEMO_QUERY = "city IN ('chennai', 'amsterdam') AND trip_date >= DATE '2024-01-07'"


def spark_read(target: str, query: str) -> dict[str, Any]:
    """The table read by a local Spark through the `hudi` source, pruned by the query."""
    from engine_bridge.spark import register
    from engine_bridge.spark.options import PRUNE_PUSHED, SPLIT_BYTES
    from engine_bridge.spark.session import command_spark_session

    with command_spark_session("hudi-bridge-demo") as spark:
        name = register(spark).name
        # One query on a fresh DataFrame, so pruning on pushed filters is safe; one file slice per task to count them.
        frame = spark.read.format(name).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1").load(target).where(query)
        rows = frame.collect()
        return {
            "source": name,
            "query": query,
            "rows": len(rows),
            "file_slices_read": frame.rdd.getNumPartitions(),
            "file_slices_total": len(HudiTable.open(target).file_slices()),
        }


@main.command()
@click.option("--path", default=None, help="Where to build the sample table (default: a temporary folder).")
@click.option("--no-sync", is_flag=True, help="Skip the Hive sync into an embedded metastore.")
@click.option("--no-spark", is_flag=True, help="Skip reading the table through Spark.")
@command_output
def demo(path: str | None, no_sync: bool, no_spark: bool) -> Output:
    """Build the sample table, plan a query on it, read it through Spark and sync it into an embedded metastore."""
    as_json = json_requested()
    target = path or tempfile.mkdtemp(prefix="hudi-bridge-demo-") + "/trips"
    build_sample_table(target)
    # The metadata table (files, column_stats, partition_stats) is what lets planning skip files.
    index = MetadataTableWriter(target).build()
    t = HudiTable.open(target)
    query = plan(target, DEMO_QUERY, dialect="trino")
    report: dict[str, Any] = {
        "index": index.to_dict(),
        "table": table_summary(t),
        "timeline": timeline_rows(t),
        "partitions": t.partitions(),
        "file_slices": [s.to_dict() for s in t.file_slices()],
        "plan": query.to_dict(),
    }
    if not as_json:
        console.rule(f"Sample table at {target}")
        print_summary(report["table"])
        print_table("Timeline", report["timeline"])
        console.print("[bold]partitions[/]: " + ", ".join(report["partitions"]))
        print_table(f"Latest file slices ({t.listing_note})", slice_rows(t.file_slices()))
        console.print(f"metadata table built: {', '.join(index.partitions)} ({index.files_indexed} files indexed, "
                      f"{index.records_written} records, {index.seconds:.2f} s)")
        console.rule("Planning a query")
        console.print(query.explain())
    if not no_spark:
        report["spark"] = spark_read(target, DEMO_QUERY)
        if not as_json:
            spark = report["spark"]
            console.rule("Reading it through Spark")
            console.print(f"spark.read.format({spark['source']!r}).load(...).where(\"{DEMO_QUERY}\"): {spark['rows']} rows "
                          f"from {spark['file_slices_read']} of {spark['file_slices_total']} file slices")
    if no_sync:
        return Output(report, lambda: None)
    metastore_folder = str(Path(target).parent / "metastore")
    result = run_sync(t, SyncOptions(database="demo"), SyncMode.HMS, None, None, metastore_folder, False, show_progress=not as_json)
    report["sync"] = result.to_dict()

    def render_sync_part() -> None:
        render_sync(report["sync"])
        console.print(f"(the metastore's Derby files are in {metastore_folder}; `hudi-bridge sync {target} --database demo "
                      f"--embedded-metastore {metastore_folder}` syncs again)")

    return Output(report, render_sync_part)
