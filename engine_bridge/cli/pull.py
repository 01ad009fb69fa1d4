"""`hudi-bridge pull`: RFC-04's incremental puller on a local Spark session."""

from __future__ import annotations

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, progress


@main.command()
@click.argument("path")
@click.option("--to", "out", required=True, help="Folder the ranges are written under (one range_<begin>_<end> folder each).")
@click.option("--format", "output_format", default="parquet", show_default=True,
              help="Spark output format of the rows, or cdc: the change feed (op, ts_ms, before, after) as Parquet.")
@click.option("--begin", default=None, help="Pull commits after this instant (default: from the start, or the checkpoint).")
@click.option("--checkpoint", default=None, help="JSON file holding the last pulled instant; read first, moved after the write.")
@click.option("--end", default=None, help="Last instant to pull (completion time on v8+, requested time on v6).")
@click.option("--max-commits", type=click.IntRange(min=1), default=None, help="Pull at most this many commits.")
@click.option("--where", default=None, help="A Spark SQL predicate rows must match (also prunes files).")
@command_output
def pull(path: str, out: str, output_format: str, begin: str | None, checkpoint: str | None, end: str | None,
         max_commits: int | None, where: str | None) -> Output:
    """Write the rows changed in a range of commits, then advance the checkpoint."""
    from engine_bridge.spark.pull import plan_pull, run_pull_replanning

    planned = plan_pull(path, out, begin, checkpoint, end, max_commits, progress)  # Spark starts only if there is something to read
    if planned.nothing_to_pull:
        result = planned.empty_result()
    else:
        from engine_bridge.spark import register
        from engine_bridge.spark.session import command_spark_session

        progress("starting Spark")
        with command_spark_session("hudi-bridge-pull") as spark:
            register(spark)
            result = run_pull_replanning(spark, planned, where, output_format, progress)

    def render() -> None:
        if not result.instants:
            console.print(f"nothing to pull after {result.begin}")
            return
        console.print(f"pulled ({result.begin}, {result.end}]: {len(result.instants)} instant(s), {result.rows} row(s) -> {result.output}")
        if result.checkpoint:
            console.print(f"checkpoint {result.checkpoint} at {result.end}")

    return Output(result.to_dict(), render)
