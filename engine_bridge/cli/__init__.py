"""The `hudi-bridge` command line: one module per command group.

Every command prints a human-readable form by default and a JSON document
with `--json` (`engine_bridge.cli.output`).
"""

from engine_bridge.cli.app import main  # commands are imported when named (engine_bridge.cli.app.COMMANDS)

__all__ = ["main"]
