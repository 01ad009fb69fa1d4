"""Run every command on one hostile table, memory capped, in a process of its own:
`python -m tests.hostile.run TABLE CAP_MIB`. Prints one JSON object per command
(its name, exit code and output)."""

from __future__ import annotations

import json
import resource
import sys


def main(table: str, cap_mib: int) -> None:
    # RLIMIT_DATA bounds what the heap and anonymous maps can take (an address-space cap would count thread
    # stacks and the allocators' reservations too); a read that is not bounded fails here with MemoryError.
    resource.setrlimit(resource.RLIMIT_DATA, (cap_mib << 20, cap_mib << 20))
    from click.testing import CliRunner

    from engine_bridge.cli import main as cli
    from tests.hostile.traps import COMMANDS

    for name, args in COMMANDS.items():
        result = CliRunner().invoke(cli, [table if a == "{t}" else a for a in args], env={"COLUMNS": "300"})
        output = result.output + ("" if result.exception is None or isinstance(result.exception, SystemExit)
                                  else f"\nuncaught {type(result.exception).__name__}: {result.exception}")
        print(json.dumps({"command": name, "exit_code": result.exit_code, "output": output}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
