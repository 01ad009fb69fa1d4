"""The `hudi-bridge` command group."""

from __future__ import annotations

import logging

import click

from metadata.storage import DEFAULT_TIMEOUT_SECONDS, set_default_timeout


@click.group()
@click.option("--debug", is_flag=True, help="Log debug messages (e.g. why a file is kept or skipped) and show tracebacks.")
@click.option("--strict", is_flag=True, help="Fail on a damaged metadata table instead of listing storage (which is said in a warning).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=DEFAULT_TIMEOUT_SECONDS, show_default=True,
              help="Seconds before a call to remote storage (s3://, gs://) gives up.")
@click.pass_context
def main(ctx: click.Context, debug: bool, strict: bool, timeout: float) -> None:
    """Plan and serve Apache Hudi tables to Hive, Presto/Trino and Spark."""
    set_default_timeout(timeout)
    ctx.meta["hudi_bridge.debug"] = debug
    ctx.meta["hudi_bridge.strict"] = strict
    # Records reach stderr through the handler each command installs (engine_bridge.cli.output).
    logging.getLogger().setLevel(logging.DEBUG if debug else logging.WARNING)
