"""`hudi-bridge plan` and `hudi-bridge incremental`."""

from __future__ import annotations

from typing import Any

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, print_table, progress, shown, slice_rows, strict_requested
from expressions import Dialect


@main.command("plan")
@click.argument("path")
@click.option("--where", "where", required=True, help="Predicate (a WHERE clause without WHERE).")
@click.option("--dialect", default=Dialect.SPARK.value, type=click.Choice(Dialect.values()), show_default=True)
@click.option("--as-of", default=None, help="Plan on the table as of this instant.")
@click.option("--no-metadata", is_flag=True, help="Do not use the metadata table.")
@click.option("--explain", is_flag=True, help="Print how each stage pruned.")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
              help="Keep decoded column statistics here for later runs (reused only while the metadata table is unchanged).")
@click.option("--assume-unique-keys", is_flag=True,
              help="Trust the record index even when insert commits may have written a key twice (as Apache Hudi does).")
@click.option("--footers", is_flag=True,
              help="Test the record keys the predicate pins against each remaining base file's footer bloom filter.")
@click.option("--verify", is_flag=True,
              help="Read the file slices the plan ruled out and exit 1 naming any that holds a matching row.")
@click.option("--sample", type=click.IntRange(min=1), default=None, help="With --verify: read this many of them, chosen at random.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Where column_stats are read and evaluated: here, or on a local Spark's executors (the driver gets names only).")
@click.option("--processes", type=click.IntRange(min=0), default=1, show_default=True,
              help="With --engine local: worker processes that evaluate column_stats when they are streamed "
                   "(when too large to keep in memory); 0 is one per core.")
@click.option("--service", default=None, metavar="URL",
              help="Ask a `hudi-bridge serve` at URL for the plan (PATH is then the table's name there; "
                   "a token comes from HUDI_BRIDGE_SERVICE_TOKEN).")
@command_output
def plan_command(path: str, where: str, dialect: str, as_of: str | None, no_metadata: bool, explain: bool,
                 cache_dir: str | None, assume_unique_keys: bool, footers: bool, verify: bool, sample: int | None, engine: str,
                 processes: int, service: str | None) -> Output:
    """Candidate file slices for a predicate (partition pruning + data skipping)."""
    from expressions import parse_sql
    from listers import plan
    from listers.verify import verify_plan
    from metadata import HudiTable

    if sample is not None and not verify:
        raise click.UsageError("--sample goes with --verify")
    if service is not None:
        local_only = [name for name, given in (("--no-metadata", no_metadata), ("--cache-dir", cache_dir), ("--verify", verify),
                                               ("--assume-unique-keys", assume_unique_keys), ("--footers", footers),
                                               ("--engine spark", engine == "spark")) if given]
        if local_only:
            raise click.UsageError(f"{', '.join(local_only)} plan here; the service plans as it is configured (drop --service or them)")
        return _service_plan(service, path, where, dialect, as_of, explain)
    options: dict[str, Any] = {"as_of": as_of, "use_metadata": not no_metadata, "strict": strict_requested(), "cache_dir": cache_dir,
                               "assume_unique_keys": assume_unique_keys, "footers": footers}
    if engine == "spark":
        from engine_bridge.spark import plan_on_spark
        from engine_bridge.spark.session import command_spark_session

        progress("starting Spark")
        with command_spark_session("hudi-bridge-plan") as spark:
            result = plan_on_spark(spark, path, where, dialect, None, **options)
    else:
        result = plan(path, where, dialect=dialect, processes=processes or None, **options)
    checked = None
    if verify:  # the truth: storage and the timeline, whatever the plan's listing was
        table = HudiTable.open(path, use_metadata=False)
        checked = verify_plan(table, result, parse_sql(where, dialect), as_of, sample)
    payload = result.to_dict()
    if checked is not None:
        payload["verify"] = checked.to_dict()

    def render() -> None:
        if explain:
            console.print(result.explain())
        print_table("Candidate file slices", slice_rows(result.files))
        if checked is not None:
            console.print(checked.describe(), style=None if checked.ok else "red", markup=False)

    return Output(payload, render, exit_code=0 if checked is None or checked.ok else 1)


def _service_plan(url: str, name: str, where: str, dialect: str, as_of: str | None, explain: bool) -> Output:
    from listers.service_client import ServiceClient

    asked = ServiceClient(url).plan(name, where, dialect, as_of)
    result = asked.plan

    def render() -> None:
        if explain:
            console.print(result.explain())
        print_table("Candidate file slices", slice_rows(result.files))

    return Output({**result.to_dict(), "service": {"plan_id": asked.answer["plan_id"], "instant": asked.instant, "base_uri": asked.base_uri}},
                  render)


@main.command("incremental")
@click.argument("path")
@click.option("--begin", required=True, help="Exclusive start (requested time on v6, completion time on v8+).")
@click.option("--end", default=None, help="Inclusive end.")
@click.option("--max-commits", type=int, default=None, help="At most this many instants (-1: all).")
@click.option("--fallback", is_flag=True, help="Fall back to a full scan when the range cannot be served incrementally.")
@command_output
def incremental_command(path: str, begin: str, end: str | None, max_commits: int | None, fallback: bool) -> Output:
    """What changed between two instants (RFC-04), planned from the timeline."""
    from listers import incremental

    result = incremental(path, begin, end, max_commits, fallback_to_full_scan=fallback, strict=strict_requested())

    def render() -> None:
        console.print(f"[bold]instants[/]: {', '.join(i.requested_time for i in result.instants) or 'none'}")
        console.print(f"[bold]partitions[/]: {', '.join(shown(p) for p in result.partitions) or 'none'}")
        if result.full_scan:
            console.print(f"[yellow]full scan[/]: {shown(result.fallback_reason or '')}")
        console.print(f"[bold]row filter[/]: {shown(result.row_filter)}")
        print_table("Files", slice_rows(result.files))

    return Output(result.to_dict(), render)
