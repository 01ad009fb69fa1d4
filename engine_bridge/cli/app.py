"""The `hudi-bridge` command group."""

from __future__ import annotations

import logging

import click


@click.group()
@click.option("--debug", is_flag=True, help="Log debug messages (e.g. why a file is kept or skipped) and show tracebacks.")
@click.option("--strict", is_flag=True, help="Fail on a damaged metadata table instead of listing storage (which is said in a warning).")
@click.pass_context
def main(ctx: click.Context, debug: bool, strict: bool) -> None:
    """Plan and serve Apache Hudi tables to Hive, Presto/Trino and Spark."""
    ctx.meta["hudi_bridge.debug"] = debug
    ctx.meta["hudi_bridge.strict"] = strict
    # Records reach stderr through the handler each command installs (engine_bridge.cli.output).
    logging.getLogger().setLevel(logging.DEBUG if debug else logging.WARNING)
