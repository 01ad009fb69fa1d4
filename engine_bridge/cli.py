"""The `hudi-bridge` command line.

Every command prints a human-readable form by default and a JSON document
with `--json`, for scripts.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from typing import Any, Callable

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from hive_sync.target import DEFAULT_BATCH_SIZE
from metadata import FileSlice, HudiError, HudiTable

console = Console()


def _emit(as_json: bool, payload: Any, render: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        render()


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


@click.group()
@click.option("--debug", is_flag=True, help="Log debug messages (e.g. why a file is kept or skipped).")
def main(debug: bool) -> None:
    """Plan and serve Apache Hudi tables to Hive, Presto/Trino and Spark."""
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


# table ---------------------------------------------------------------------------
@main.group()
def table() -> None:
    """Inspect a Hudi table: config, timeline, partitions, file slices."""


def _open(path: str, no_metadata: bool = False) -> HudiTable:
    try:
        return HudiTable.open(path, use_metadata=False if no_metadata else None)
    except HudiError as exc:
        _fail(exc)
        raise


def table_summary(t: HudiTable) -> dict[str, Any]:
    latest = t.timeline.latest_completed()
    return {
        "name": t.name,
        "base_uri": t.base_uri,
        "table_type": t.config.table_type.value,
        "table_version": t.config.version,
        "timeline_layout": t.config.timeline_layout_version,
        "partition_fields": list(t.config.partition_fields),
        "record_key_fields": list(t.config.record_key_fields),
        "metadata_partitions": list(t.config.metadata_partitions),
        "instants": len(t.timeline.instants),
        "latest_completed": latest.requested_time if latest else None,
    }


def timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    return [
        {
            "requested_time": i.requested_time,
            "action": i.action,
            "state": i.state.name,
            "completion_time": i.completion_time,
        }
        for i in t.timeline.instants
    ]


@table.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def table_show(path: str, as_json: bool) -> None:
    """Table config and the latest instant."""
    t = _open(path)
    summary = table_summary(t)

    def render() -> None:
        for key, value in summary.items():
            console.print(f"[bold]{key}[/]: {value}")

    _emit(as_json, summary, render)


@table.command("timeline")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def table_timeline(path: str, as_json: bool) -> None:
    """Every instant of the active timeline."""
    t = _open(path)
    rows = timeline_rows(t)
    _emit(as_json, rows, lambda: console.print(_rich_table("Timeline", rows)))


@table.command("partitions")
@click.argument("path")
@click.option("--as-of", default=None, help="Instant time (requested time) of the view.")
@click.option("--no-metadata", is_flag=True, help="List storage even when a metadata table exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def table_partitions(path: str, as_of: str | None, no_metadata: bool, as_json: bool) -> None:
    """Partitions with visible files."""
    t = _open(path, no_metadata)
    try:
        parts = t.partitions(as_of=as_of)
    except (HudiError, ValueError) as exc:
        _fail(exc)
        return
    _emit(as_json, parts, lambda: [console.print(p if p else '"" (non-partitioned)') for p in parts])


@table.command("files")
@click.argument("path")
@click.option("--partition", default=None, help="Only this partition.")
@click.option("--as-of", default=None, help="Instant time (requested time) of the view.")
@click.option("--no-metadata", is_flag=True, help="List storage even when a metadata table exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def table_files(path: str, partition: str | None, as_of: str | None, no_metadata: bool, as_json: bool) -> None:
    """Latest file slices (base file and log files) per file group."""
    t = _open(path, no_metadata)
    try:
        slices = t.file_slices(partition=partition, as_of=as_of)
    except (HudiError, ValueError) as exc:
        _fail(exc)
        return
    rows = [s.to_dict() for s in slices]
    _emit(as_json, rows, lambda: console.print(_rich_table(f"File slices ({t.listing_note})", _slice_rows(slices))))


@table.command("validate")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def table_validate(path: str, as_json: bool) -> None:
    """Compare the metadata table's file listing with storage (RFC-15 validate)."""
    from metadata.mdt.validate import validate_metadata

    try:
        report = validate_metadata(_open(path, no_metadata=True))
    except HudiError as exc:
        _fail(exc)
        return
    _emit(as_json, report.to_dict(), lambda: [console.print(line) for line in report.differences() or ["metadata table and storage agree"]])
    if not report.ok:
        sys.exit(1)


def _slice_rows(slices: list[FileSlice]) -> list[dict[str, Any]]:
    """Names rather than paths, so the table fits a terminal."""
    return [
        {
            "partition": s.partition or '""',
            "base_instant": s.base_instant,
            "base_file": s.base_file_name,
            "log_files": s.log_file_names,
            "bytes": s.total_size,
        }
        for s in slices
    ]


def _rich_table(title: str, rows: list[dict[str, Any]]) -> Table:
    table_ = Table(title=title)
    if not rows:
        table_.add_column("(none)")
        return table_
    for key in rows[0]:
        table_.add_column(key)
    for row in rows:
        table_.add_row(*("\n".join(v) if isinstance(v, list) else "" if v is None else str(v) for v in row.values()))
    return table_


# plan / incremental ------------------------------------------------------------------
@main.command("plan")
@click.argument("path")
@click.option("--where", "where", required=True, help="Predicate (a WHERE clause without WHERE).")
@click.option("--dialect", default="spark", type=click.Choice(["hive", "spark", "trino", "presto"]), show_default=True)
@click.option("--as-of", default=None, help="Plan on the table as of this instant.")
@click.option("--no-metadata", is_flag=True, help="Do not use the metadata table.")
@click.option("--explain", is_flag=True, help="Print how each stage pruned.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plan_command(path: str, where: str, dialect: str, as_of: str | None, no_metadata: bool, explain: bool, as_json: bool) -> None:
    """Candidate file slices for a predicate (partition pruning + data skipping)."""
    from expressions import ExpressionError
    from listers import plan

    try:
        result = plan(path, where, dialect=dialect, as_of=as_of, use_metadata=not no_metadata)
    except (HudiError, ExpressionError) as exc:
        _fail(exc)
        return

    def render() -> None:
        if explain:
            console.print(result.explain())
        console.print(_rich_table("Candidate file slices", _slice_rows(result.files)))

    _emit(as_json, result.to_dict(), render)


@main.command("incremental")
@click.argument("path")
@click.option("--begin", required=True, help="Exclusive start (requested time on v6, completion time on v8+).")
@click.option("--end", default=None, help="Inclusive end.")
@click.option("--max-commits", type=int, default=None, help="At most this many instants (-1: all).")
@click.option("--fallback", is_flag=True, help="Fall back to a full scan when the range cannot be served incrementally.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def incremental_command(path: str, begin: str, end: str | None, max_commits: int | None, fallback: bool, as_json: bool) -> None:
    """What changed between two instants (RFC-04), planned from the timeline."""
    from listers import incremental

    try:
        result = incremental(path, begin, end, max_commits, fallback_to_full_scan=fallback)
    except (HudiError, ValueError) as exc:
        _fail(exc)
        return

    def render() -> None:
        console.print(f"[bold]instants[/]: {', '.join(i.requested_time for i in result.instants) or 'none'}")
        console.print(f"[bold]partitions[/]: {', '.join(result.partitions) or 'none'}")
        if result.full_scan:
            console.print(f"[yellow]full scan[/]: {result.fallback_reason}")
        console.print(f"[bold]row filter[/]: {result.row_filter}")
        console.print(_rich_table("Files", _slice_rows(result.files)))

    _emit(as_json, result.to_dict(), render)


# sync ----------------------------------------------------------------------------
@main.command("sync")
@click.argument("path")
@click.option("--database", required=True, help="Hive database to register the table in.")
@click.option("--table", "table_name", default=None, help="Hive table name (default: hoodie.table.name; MOR adds _ro and _rt).")
@click.option("--mode", default="hms", type=click.Choice(["hms", "hiveql", "spark"]), show_default=True,
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
@click.option("--dry-run", is_flag=True, help="Print the planned changes without writing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sync_command(path: str, database: str, table_name: str | None, mode: str, metastore_uri: str | None, hiveserver2: str | None,
                 embedded: str | None, batch_size: int, no_create_database: bool, no_datasource_properties: bool,
                 support_timestamp: bool, skip_ro_suffix: bool, full: bool, dry_run: bool, as_json: bool) -> None:
    """Register a Hudi table in a Hive metastore and keep it in step with the timeline."""
    from hive_sync import SyncOptions

    try:
        options = SyncOptions(
            database=database, table=table_name, create_database=not no_create_database, batch_size=batch_size,
            support_timestamp=support_timestamp, skip_ro_suffix=skip_ro_suffix,
            datasource_properties=not no_datasource_properties, full=full,
        )
        t = HudiTable.open(path)
        result = run_sync(t, options, mode, metastore_uri, hiveserver2, embedded, dry_run, show_progress=not as_json)
    except HudiError as exc:
        _fail(exc)
        return
    _emit(as_json, result.to_dict(), lambda: render_sync(result.to_dict()))


def run_sync(t: HudiTable, options: Any, mode: str, metastore_uri: str | None, hiveserver2: str | None,
             embedded: str | None, dry_run: bool, show_progress: bool) -> Any:
    """Open the client (starting an embedded metastore or a SparkSession when
    asked), sync with a progress bar, and close everything again."""
    from contextlib import ExitStack

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from hive_sync import EmbeddedMetastore, open_client, sync

    with ExitStack() as stack:
        if embedded:
            if metastore_uri:
                raise click.UsageError("give either --metastore-uri or --embedded-metastore, not both")
            if show_progress:
                console.print(f"starting an embedded metastore in {embedded} ...")
            metastore_uri = stack.enter_context(EmbeddedMetastore(embedded)).uri
        spark = None
        if mode == "spark":
            from engine_bridge.spark_session import local_spark_session

            if not metastore_uri:
                raise click.UsageError("mode spark needs --metastore-uri or --embedded-metastore")
            spark = local_spark_session(metastore_uri, str(Path(embedded or tempfile.gettempdir()) / "warehouse"))
            stack.callback(spark.stop)
        client = open_client(mode, metastore_uri, hiveserver2, spark)
        stack.callback(client.close)
        if not show_progress:
            return sync(t, client, options, dry_run=dry_run)
        progress = stack.enter_context(
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=Console(stderr=True), transient=True)
        )
        task = progress.add_task("syncing", total=None)

        def report(what: str, count: int) -> None:
            progress.update(task, description=what, advance=count)

        return sync(t, client, options, dry_run=dry_run, progress=report)


def render_sync(report: dict[str, Any]) -> None:
    verb = "applied" if report["applied"] else "nothing to do" if report["noop"] else "planned (dry run)"
    console.rule(f"Hive sync of {report['base_uri']} into {report['database']}: {verb}")
    if report["create_database"]:
        console.print(f"create database {report['database']}")
    for plan in report["tables"]:
        parts = plan["partitions"]
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
    console.print(f"metastore calls: {report['metastore_calls']}")


# demo ----------------------------------------------------------------------------
DEMO_QUERY = "city IN ('chennai', 'amsterdam') AND trip_date >= DATE '2024-01-05'"


@main.command()
@click.option("--path", default=None, help="Where to build the sample table (default: a temporary folder).")
@click.option("--no-sync", is_flag=True, help="Skip the Hive sync into an embedded metastore.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def demo(path: str | None, no_sync: bool, as_json: bool) -> None:
    """Build the sample table, plan a query on it and sync it into an embedded metastore."""
    from hive_sync import SyncOptions
    from listers import plan
    from metadata.testing.sample import build_sample_table

    target = path or tempfile.mkdtemp(prefix="hudi-bridge-demo-") + "/trips"
    build_sample_table(target)
    t = HudiTable.open(target)
    query = plan(target, DEMO_QUERY, dialect="trino")
    report: dict[str, Any] = {
        "table": table_summary(t),
        "timeline": timeline_rows(t),
        "partitions": t.partitions(),
        "file_slices": [s.to_dict() for s in t.file_slices()],
        "plan": query.to_dict(),
    }

    def render_table() -> None:
        console.rule(f"Sample table at {target}")
        for key, value in report["table"].items():
            console.print(f"[bold]{key}[/]: {value}")
        console.print(_rich_table("Timeline", report["timeline"]))
        console.print("[bold]partitions[/]: " + ", ".join(report["partitions"]))
        console.print(_rich_table(f"Latest file slices ({t.listing_note})", _slice_rows(t.file_slices())))
        console.rule("Planning a query")
        console.print(query.explain())

    if not as_json:
        render_table()
    if not no_sync:
        metastore_folder = str(Path(target).parent / "metastore")
        try:
            result = run_sync(t, SyncOptions(database="demo"), "hms", None, None, metastore_folder, False, show_progress=not as_json)
        except HudiError as exc:
            _fail(exc)
            return
        report["sync"] = result.to_dict()
        if not as_json:
            render_sync(report["sync"])
            console.print(f"(the metastore's Derby files are in {metastore_folder}; `hudi-bridge sync {target} --database demo "
                          f"--embedded-metastore {metastore_folder}` syncs again)")
    if as_json:
        _emit(True, report, lambda: None)


if __name__ == "__main__":
    main()
