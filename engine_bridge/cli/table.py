"""`hudi-bridge table ...`: config, timeline, partitions, file slices, validate."""

from __future__ import annotations

import difflib
import logging
from typing import Any

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, print_lines, print_table, slice_rows, strict_requested
from metadata import HudiTable
from metadata.errors import HudiError, MetadataTableUnavailable
from metadata.storage.calls import describe_requests
from metadata.table.table_summary import table_summary, timeline_rows

AS_OF_HELP = "Instant time (requested time) of the view."
NO_METADATA_HELP = "List storage even when a metadata table exists."


log = logging.getLogger(__name__)


@main.group()
def table() -> None:
    """Inspect a Hudi table: config, timeline, partitions, file slices."""


def open_table(path: str, no_metadata: bool = False) -> HudiTable:
    return HudiTable.open(path, use_metadata=False if no_metadata else None, strict=strict_requested())


def print_summary(summary: dict[str, Any]) -> None:
    for key, value in summary.items():
        console.print(f"[bold]{key}[/]: {value}")


@table.command("show")
@click.argument("path")
@command_output
def table_show(path: str) -> Output:
    """Table config and the latest instant."""
    summary = table_summary(open_table(path))
    return Output(summary, lambda: print_summary(summary))


@table.command("timeline")
@click.argument("path")
@command_output
def table_timeline(path: str) -> Output:
    """Every instant of the active timeline."""
    rows = timeline_rows(open_table(path))
    return Output(rows, lambda: print_table("Timeline", rows))


@table.command("partitions")
@click.argument("path")
@click.option("--as-of", default=None, help=AS_OF_HELP)
@click.option("--no-metadata", is_flag=True, help=NO_METADATA_HELP)
@command_output
def table_partitions(path: str, as_of: str | None, no_metadata: bool) -> Output:
    """Partitions with visible files."""
    parts = open_table(path, no_metadata).partitions(as_of=as_of)
    return Output(parts, lambda: print_lines([p if p else '"" (non-partitioned)' for p in parts]))


@table.command("files")
@click.argument("path")
@click.option("--partition", default=None, help="Only this partition.")
@click.option("--as-of", default=None, help=AS_OF_HELP)
@click.option("--no-metadata", is_flag=True, help=NO_METADATA_HELP)
@click.option("--explain", is_flag=True, help="Say how the files were listed and what it cost in storage requests.")
@command_output
def table_files(path: str, partition: str | None, as_of: str | None, no_metadata: bool, explain: bool) -> Output:
    """Latest file slices (base file and log files) per file group."""
    t = open_table(path, no_metadata)
    slices = t.file_slices(partition=partition, as_of=as_of)
    if partition is not None and not slices:
        known = t.partitions(as_of=as_of)
        if partition not in known:  # a missing partition is an error, not an empty answer
            close = difflib.get_close_matches(partition, known, n=3)
            raise HudiError(f"no partition {partition!r} in {t.base_uri}" + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")
                            + f"; `hudi-bridge table partitions {t.base_uri}` lists its {len(known)} partition(s)")
    if explain:
        requests = t.storage.requests.snapshot()
        payload = {"listing": t.listing_note, "warning": t.listing.warning, "requests": requests, "files": [s.to_dict() for s in slices]}
        lines = [f"listing: {t.listing_note}", describe_requests(requests)]

        def render() -> None:
            print_lines(lines)
            print_table("File slices", slice_rows(slices))

        return Output(payload, render)
    return Output([s.to_dict() for s in slices], lambda: print_table(f"File slices ({t.listing_note})", slice_rows(slices)))


@table.command("validate")
@click.argument("path")
@click.option("--no-stats", is_flag=True, help="Skip comparing column_stats and bloom_filters with the base files' Parquet footers.")
@command_output
def table_validate(path: str, no_stats: bool) -> Output:
    """Compare the metadata table's file listing with storage (RFC-15 validate) and its
    column_stats with Parquet footers; exit 1 on differences."""
    from expressions.index_expressions import SparkIndexExpressions
    from metadata.mdt.validate import validate_metadata

    table = open_table(path, no_metadata=True)
    try:
        report = validate_metadata(table, check_stats=not no_stats, index_expressions=SparkIndexExpressions())
    except MetadataTableUnavailable as exc:
        raise MetadataTableUnavailable(table.base_uri, f"{exc.reason}; nothing to validate: build one with `hudi-bridge index build {table.base_uri}`") from None
    checked = "column_stats not compared (--no-stats)" if no_stats else \
        f"column_stats of {report.stats_files_checked} base file(s) checked against their footers"
    if report.bloom_files_checked:
        checked += f"; bloom_filters of {report.bloom_files_checked} base file(s) equal their footers' filters"
    if report.expression_files_checked:
        checked += f"; expression indexes of {report.expression_files_checked} base file(s) checked against their rows"
    if report.index_entries_checked:
        checked += f"; {report.index_entries_checked} record and secondary index entries checked against the latest rows"
    lines = []
    if report.behind:  # said first: a sync fixes what it explains, unlike damage
        lines.append(f"metadata table is behind the timeline: {len(report.behind)} completed instant(s) not in it "
                     f"({report.behind[0]} first); `hudi-bridge index sync {table.base_uri}` brings it up to date")
        lines += [f"behind: {d}" for d in report.behind_differences]
        lines += [f"different (not explained by the instants behind): {d}" for d in report.differences()]
    else:
        lines += report.differences() or [f"metadata table and storage agree; {checked}"]
    lines += [f"note: {n}" for n in report.notes]
    return Output(report.to_dict(), lambda: print_lines(lines), exit_code=0 if report.ok else 1)
