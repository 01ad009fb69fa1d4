"""The `hudi-bridge` command line: one module per command group.

Every command prints a human-readable form by default and a JSON document
with `--json` (`engine_bridge.cli.output`).
"""

from engine_bridge.cli import changes, demo, hive, index, plan, pull, sync, table, trino  # noqa: F401  (registers the commands)
from engine_bridge.cli.app import main

__all__ = ["main"]
