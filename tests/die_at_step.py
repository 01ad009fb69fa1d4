"""hudi-bridge's CLI, killed with SIGKILL at a named step of its metadata-table writer.

`python -m tests.die_at_step ENDING ARGS...` runs `hudi-bridge ARGS...` and, at the
first writer step whose name ends with ENDING (the steps `MetadataTransaction.fault`
is called with, e.g. "before completion"), prints `killed at: <step>` and kills
itself with signal 9: a kill -9 at a known point, so that a test of what a dead
writer leaves does not depend on winning a race against it.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from metadata.mdt.write import transaction

KILLED_AT = "killed at: "


def killed_instant(output: str) -> str:
    """The metadata-table instant a run printing `output` was killed in ("": it was not killed at an instant's step)."""
    steps = [line[len(KILLED_AT):] for line in output.splitlines() if line.startswith(KILLED_AT)]
    return steps[0].split(":", 1)[0] if steps else ""


def _die_at(ending: str) -> None:
    started = transaction.MetadataTransaction.__init__

    def init(self: transaction.MetadataTransaction, *args: Any, **kwargs: Any) -> None:
        started(self, *args, **kwargs)

        def fault(step: str) -> None:
            if step.endswith(ending):
                print(KILLED_AT + step, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        self.fault = fault

    transaction.MetadataTransaction.__init__ = init  # type: ignore[method-assign]


if __name__ == "__main__":
    _die_at(sys.argv[1])
    sys.argv = ["hudi-bridge", *sys.argv[2:]]
    from engine_bridge.cli import main
    main()
