"""`hudi-bridge demo`: the README's main job on a sample table."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, json_requested, print_lines, print_table, progress
from engine_bridge.cli.sync import render_sync, run_sync
from engine_bridge.cli.table import print_summary
from hive_sync import SyncMode, SyncOptions
from listers import plan
from metadata import FileSlice, HudiTable
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import build_sample_table
from metadata.table.table_summary import table_summary, timeline_rows

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


def slices_per_partition(slices: list[FileSlice]) -> list[dict[str, Any]]:
    """One row per partition: the demo's overview (`hudi-bridge table files` lists every file)."""
    rows: dict[str, dict[str, Any]] = {}
    for s in slices:
        row = rows.setdefault(s.partition, {"partition": s.partition, "file_slices": 0, "with_log_files": 0, "bytes": 0})
        row["file_slices"] += 1
        row["with_log_files"] += bool(s.log_files)
        row["bytes"] += s.total_size
    return [rows[p] for p in sorted(rows)]


@main.command()
@click.option("--path", default=None, help="Where to build the sample table (kept; default: a temporary folder, removed at the end).")
@click.option("--keep", is_flag=True, help="Keep the temporary folder (the table and the metastore's files) to explore it.")
@click.option("--no-sync", is_flag=True, help="Skip the Hive sync into an embedded metastore.")
@click.option("--no-spark", is_flag=True, help="Skip reading the table through Spark.")
@command_output
def demo(path: str | None, keep: bool, no_sync: bool, no_spark: bool) -> Output:
    """Build the sample table, plan a query on it, read it through Spark and sync it into an embedded metastore."""
    if path and os.path.exists(path) and not (os.path.isdir(path) and not os.listdir(path)):
        raise click.BadParameter(f"{os.path.abspath(path)} exists: the demo builds a new table, so give a path that does not exist yet",
                                 param_hint="--path")
    folder = None if path else tempfile.mkdtemp(prefix="hudi-bridge-demo-")
    try:
        report = _run_demo(os.path.abspath(path) if path else os.path.join(folder or "", "trips"), no_sync, no_spark)
    finally:
        if folder is not None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    report["kept"] = bool(path or keep)
    return Output(report, lambda: _render(report))


def _run_demo(target: str, no_sync: bool, no_spark: bool) -> dict[str, Any]:
    progress(f"building the sample table at {target}")
    build_sample_table(target)
    # The metadata table (files, column_stats, partition_stats) is what lets planning skip files.
    index = MetadataTableWriter(target).build()
    t = HudiTable.open(target)
    query = plan(target, DEMO_QUERY, dialect="trino")
    slices = t.file_slices()
    report: dict[str, Any] = {
        "path": target,
        "index": index.to_dict(),
        "table": table_summary(t),
        "timeline": timeline_rows(t),
        "partitions": t.partitions(),
        "file_slices": [s.to_dict() for s in slices],
        "per_partition": slices_per_partition(slices),
        "listing": t.listing_note,
        "plan": query.to_dict(),
        "plan_explained": query.explain(),
    }
    if not no_spark:
        progress("reading it through a local Spark (starting Spark takes a few seconds)")
        report["spark"] = spark_read(target, DEMO_QUERY)
    if not no_sync:
        metastore_folder = str(Path(target).parent / "metastore")
        result = run_sync(t, SyncOptions(database="demo"), SyncMode.HMS, None, None, metastore_folder, False,
                          show_progress=not json_requested())
        report["sync"] = result.to_dict()
        report["metastore_folder"] = metastore_folder
    return report


def _render(report: dict[str, Any]) -> None:
    target, slices = report["path"], report["file_slices"]
    index = report["index"]
    console.print(f"[bold]1. A sample Hudi table[/] at {target}")
    print_summary(report["table"])
    print_table("Timeline", report["timeline"])
    print_table(f"Latest file slices per partition ({len(slices)} in all)", report["per_partition"])
    console.print(f"metadata table built: {', '.join(index['partitions'])} ({index['files_indexed']} files indexed, "
                  f"{index['records_written']} records, {index['seconds']:.2f} s)")
    console.print(f"\n[bold]2. Planning[/] {DEMO_QUERY}")
    console.print(report["plan_explained"])
    kept = len(report["plan"]["files"])
    lines = [f"the plan kept {kept} of {len(slices)} file slices"]
    spark = report.get("spark")
    if spark:
        console.print(f"\n[bold]3. Reading it through Spark[/]: spark.read.format({spark['source']!r}).load(...).where(...)")
        console.print(f"{spark['rows']} rows from {spark['file_slices_read']} of {spark['file_slices_total']} file slices")
        lines.append(f"Spark read {spark['file_slices_read']} of {spark['file_slices_total']} file slices for {spark['rows']} rows")
    sync = report.get("sync")
    if sync:
        console.print("\n[bold]4. Hive sync[/] into an embedded metastore")
        render_sync(sync)
        lines.append(f"Hive has {', '.join(t['table'] for t in sync['tables'])} ({sum(len(t['partitions']['ADD']) for t in sync['tables'])} "
                     "partitions added)")
    console.print("\n[bold]Summary[/]")
    print_lines([f"- {line}" for line in lines])
    if report["kept"]:
        console.print(f"- the table is at {target}; try `hudi-bridge table files {target}` or "
                      f"`hudi-bridge plan {target} --where \"city = 'chennai'\" --explain`")
    else:
        console.print("- the temporary folder was removed (run with --keep, or --path DIR, to explore the table afterwards)")
