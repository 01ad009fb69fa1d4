"""The `hudi-bridge` command group."""

from __future__ import annotations

import logging

import click


@click.group()
@click.option("--debug", is_flag=True, help="Log debug messages (e.g. why a file is kept or skipped) and show tracebacks.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Plan and serve Apache Hudi tables to Hive, Presto/Trino and Spark."""
    ctx.meta["hudi_bridge.debug"] = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
