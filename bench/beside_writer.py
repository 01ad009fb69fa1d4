"""Apache Hudi's commit latency alone and with hudi-bridge's commands running
beside it in a loop (docs/concurrency.md), as a ratio from one run.

Hudi 1.0.2's Spark writer (tests/hudi_oracle, set up by scripts/setup.sh
--test) upserts N commits into a COPY_ON_WRITE table with its metadata table
on, twice: alone, then with `index sync` and `plan` looping beside it (no
lock: our writes wait for an idle moment). The first commit (Spark's start,
the table's creation) is left out of the medians. Prints a JSON report.

    python -m bench.beside_writer [--commits 8]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import finish, progress
from tests.hudi_oracle import LiveWriter, missing_setup

STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true"}


def run(path: Path, commits: int, beside: bool) -> dict[str, Any]:
    writer = LiveWriter(path, "COPY_ON_WRITE", commits, STATS)
    runs = failed = 0
    while beside and not writer.done():
        for command in (["index", "sync", str(path)], ["plan", str(path), "--where", "id = 3"]):
            result = subprocess.run([sys.executable, "-m", "engine_bridge", *command], capture_output=True, text=True)
            runs += 1
            failed += result.returncode not in (0, 2)
    record = writer.finish()
    seconds = [c["seconds"] for c in record["commits"][1:] if c["ok"]]
    return {"commits_failed": sum(not c["ok"] for c in record["commits"]), "median_commit_seconds": statistics.median(seconds),
            "commands_beside": runs, "commands_failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=8)
    args = parser.parse_args()
    reason = missing_setup()
    if reason is not None:
        raise SystemExit(f"bench.beside_writer: {reason}")
    report: dict[str, Any] = {"bench": "beside_writer", "commits": args.commits}
    with tempfile.TemporaryDirectory() as work:
        progress("Hudi's writer alone")
        report["alone"] = run(Path(work) / "alone", args.commits, beside=False)
        progress("Hudi's writer with index sync and plan beside it")
        report["beside"] = run(Path(work) / "beside", args.commits, beside=True)
    report["commit_latency_ratio"] = round(report["beside"]["median_commit_seconds"] / report["alone"]["median_commit_seconds"], 2)
    finish(report)


if __name__ == "__main__":
    main()
