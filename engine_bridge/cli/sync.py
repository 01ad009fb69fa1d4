"""`hudi-bridge sync`: register a table in a Hive metastore and keep it in step."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, json_requested, strict_requested
from engine_bridge.cli.output import progress as say
from hive_sync import EmbeddedMetastore, SyncMode, SyncOptions, SyncResult, open_client, sync
from hive_sync.client import EmptyMetastore, MetastoreClient
from hive_sync.target import DEFAULT_BATCH_SIZE
from metadata import HudiTable


@main.command("sync")
@click.argument("path")
@click.option("--database", required=True, help="Hive database to register the table in.")
@click.option("--table", "table_name", default=None, help="Hive table name (default: hoodie.table.name; MOR adds _ro and _rt).")
@click.option("--mode", default=SyncMode.HMS.value, type=click.Choice(SyncMode.values()), show_default=True,
              help="hms: the metastore's Thrift API; hiveql: statements through a HiveServer2; spark: a local SparkSession.")
@click.option("--metastore-uri", default=None, help="thrift://host:port of the Hive metastore.")
@click.option("--hiveserver2", default=None, help="host:port of a HiveServer2 (mode hiveql).")
@click.option("--embedded-metastore", "embedded", default=None, type=click.Path(file_okay=False),
              help="Start the metastore PySpark's jars provide, keeping its Derby files in this folder.")
@click.option("--batch-size", default=DEFAULT_BATCH_SIZE, show_default=True, type=click.IntRange(min=1), help="Partitions per metastore call.")
@click.option("--no-create-database", is_flag=True, help="Fail when the database does not exist.")
@click.option("--no-datasource-properties", is_flag=True, help="Register plain Hive tables, without spark.sql.sources.* properties.")
@click.option("--support-timestamp", is_flag=True, help="Timestamp columns as TIMESTAMP rather than bigint.")
@click.option("--skip-ro-suffix", is_flag=True, help="MOR: name the read-optimized table without _ro.")
@click.option("--full", is_flag=True, help="Compare every partition with the metastore, whatever was synced before.")
@click.option("--dry-run", is_flag=True, help="Print the planned changes without writing (against an empty metastore when none is given).")
@command_output
def sync_command(path: str, database: str, table_name: str | None, mode: str, metastore_uri: str | None, hiveserver2: str | None,
                 embedded: str | None, batch_size: int, no_create_database: bool, no_datasource_properties: bool,
                 support_timestamp: bool, skip_ro_suffix: bool, full: bool, dry_run: bool) -> Output:
    """Register a Hudi table in a Hive metastore and keep it in step with the timeline."""
    options = SyncOptions(
        database=database, table=table_name, create_database=not no_create_database, batch_size=batch_size,
        support_timestamp=support_timestamp, skip_ro_suffix=skip_ro_suffix,
        datasource_properties=not no_datasource_properties, full=full,
    )
    result = run_sync(HudiTable.open(path, strict=strict_requested()), options, SyncMode(mode), metastore_uri, hiveserver2, embedded, dry_run,
                      show_progress=not json_requested())
    report = result.to_dict()
    return Output(report, lambda: render_sync(report))


def run_sync(t: HudiTable, options: SyncOptions, mode: SyncMode, metastore_uri: str | None, hiveserver2: str | None,
             embedded: str | None, dry_run: bool, show_progress: bool) -> SyncResult:
    """Open the client (starting an embedded metastore or a SparkSession when
    asked), sync with a progress bar, and close everything again."""
    with ExitStack() as stack:
        if embedded:
            if metastore_uri:
                raise click.UsageError("give either --metastore-uri or --embedded-metastore, not both")
            if show_progress:
                say(f"starting an embedded metastore in {embedded} ...")
            metastore_uri = stack.enter_context(EmbeddedMetastore(embedded)).uri
        spark = None
        if mode is SyncMode.SPARK:
            from engine_bridge.spark import local_spark_session

            if not metastore_uri:
                raise click.UsageError("mode spark needs --metastore-uri or --embedded-metastore")
            spark = local_spark_session(metastore_uri, str(Path(embedded or tempfile.gettempdir()) / "warehouse"))
            stack.callback(spark.stop)
        if dry_run and not (metastore_uri or hiveserver2 or spark):
            client: MetastoreClient = EmptyMetastore()  # what a first sync would do, with no metastore to ask
        else:
            client = open_client(mode, metastore_uri, hiveserver2, spark)
        stack.callback(client.close)
        if not show_progress:
            return sync(t, client, options, dry_run=dry_run)
        progress = stack.enter_context(
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=Console(stderr=True, highlight=False), transient=True)
        )
        task = progress.add_task("syncing", total=None)

        def report(what: str, count: int) -> None:
            progress.update(task, description=what, advance=count)

        return sync(t, client, options, dry_run=dry_run, progress=report)


def render_sync(report: dict[str, Any]) -> None:
    verb = "applied" if report["applied"] else "nothing to do" if report["noop"] else "planned (dry run)"
    console.print(f"Hive sync of {report['base_uri']} into {report['database']}: {verb}", soft_wrap=True, highlight=False)
    if report["create_database"]:
        console.print(f"create database {report['database']}")
    for plan in report["tables"]:
        parts = plan["partitions"]
        if not (plan["create"] or any(parts.values()) or plan["added_columns"] or plan["changed_columns"]):
            console.print(f"[bold]{plan['table']}[/]: up to date")
            continue
        console.print(
            f"[bold]{plan['table']}[/]: {'create' if plan['create'] else 'update'}"
            f"; partitions +{len(parts['ADD'])} ~{len(parts['UPDATE'])} -{len(parts['DROP'])}"
            f"{' (full diff)' if plan['full_diff'] else ''}"
        )
        for column in plan["added_columns"]:
            console.print(f"  add column {column}")
        for column in plan["changed_columns"]:
            console.print(f"  change column {column}")
        marker = plan["marker"]
        if marker:
            completed = marker.get("last_commit_completion_time_sync")
            console.print(f"  marked synced up to {marker.get('last_commit_time_sync')}" + (f" (completed {completed})" if completed else ""))
    if report["metastore_calls"]:
        console.print(f"metastore calls: {report['metastore_calls']}")
    else:
        console.print("no metastore was asked: planned against an empty one (give --metastore-uri or --embedded-metastore)")
