"""`hudi-bridge changes`: the change feed of a range of commits, in Hudi's CDC format."""

from __future__ import annotations

import json
import os

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, print_table


@main.command("changes")
@click.argument("path")
@click.option("--begin", required=True, help="Exclusive start (requested time on v6, completion time on v8+; 0: from the start).")
@click.option("--end", default=None, help="Inclusive end.")
@click.option("--format", "output_format", type=click.Choice(["table", "parquet"]), default="table", show_default=True,
              help="parquet: write the feed to --to instead of printing it.")
@click.option("--to", "out", default=None, help="The Parquet file to write (with --format parquet).")
@command_output
def changes_command(path: str, begin: str, end: str | None, output_format: str, out: str | None) -> Output:
    """Inserts, updates and deletes per record, with before and after images
    (op, ts_ms, before, after), derived for any table from the file slices
    each commit changed."""
    import pyarrow.parquet as pq

    from listers.changes import changes
    from metadata.storage.storage import Storage

    if output_format == "parquet" and not out:
        raise click.UsageError("--format parquet needs --to FILE")
    feed = changes(path, begin, end)
    if output_format == "parquet":
        target = out if out and "://" in out else os.path.abspath(os.path.expanduser(out or ""))  # absolute at the boundary
        parent, name = target.rsplit("/", 1)
        storage = Storage.open(parent)
        with storage.write_stream(name) as stream:  # whole or not at all: no half-written file is visible
            pq.write_table(feed, stream)
        summary = {"rows": feed.num_rows, "written": target}
        return Output(summary, lambda: click.echo(f"{feed.num_rows} change(s) -> {target}"))
    rows = feed.to_pylist()

    def render() -> None:
        shown = [{"op": r["op"], "ts_ms": r["ts_ms"], "record": _record(r)} for r in rows]
        print_table(f"Changes after {begin}" + (f" through {end}" if end else ""), shown)

    return Output(rows, render)


def _record(row: dict[str, str | None]) -> str:
    """Partition and key of the changed record, from whichever image it has."""
    image = json.loads(row["after"] or row["before"] or "{}")
    return f"{image.get('_hoodie_partition_path', '')}/{image.get('_hoodie_record_key', '')}"
