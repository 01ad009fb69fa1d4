"""The README's command samples, run for real.

A sample is a `$ hudi-bridge ...` line in a fenced block and the lines
after it up to the next `$` line or the block's end: what the command
printed (stdout, then stderr) on the demo's table at /tmp/trips (built by
`hudi-bridge demo --path /tmp/trips --no-spark --no-sync`). The test runs
each on a fresh demo table and compares after masking what differs from
run to run (file ids, timings, byte and request counts).

`python -m tests.readme_samples --write` regenerates the samples in the
README from a run at /tmp/trips.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
TABLE = "/tmp/trips"
WIDTH = "100"

_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+_\d+-\d+-\d+"), "<file-id_token>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+"), "<file-id>"),
    (re.compile(r"\bin [\d,]+(\.\d+)? m?s\b"), "in <t>"),  # timings, in ms or (on a loaded machine) in s
    (re.compile(r"\d[\d,]* (bytes|storage requests)"), r"<n> \1"),
    (re.compile(r"storage requests: \d+ \([^)]*\)"), "storage requests: <n> (<kinds>)"),
    (re.compile(r"bytes: \d+"), "bytes: <n>"),
]


@dataclass(frozen=True)
class Sample:
    command: str  # as the README shows it, without the `$ `
    output: list[str]
    line: int  # of the command in the README (1-based)


def samples(text: str) -> list[Sample]:
    found: list[Sample] = []
    in_block = False
    current: Sample | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
            if current is not None:
                found.append(current)
                current = None
            continue
        if not in_block:
            continue
        if line.startswith("$ hudi-bridge "):
            if current is not None:
                found.append(current)
            current = Sample(line[2:], [], number)
        elif current is not None:
            current.output.append(line)
    return found


def run(command: str, table: str) -> list[str]:
    """The command's stdout then stderr lines, on `table` in place of /tmp/trips."""
    shell = command.replace(TABLE, table).replace("hudi-bridge ", f"{shlex.quote(sys.executable)} -m engine_bridge ", 1)
    env = {**os.environ, "COLUMNS": WIDTH, "TERM": "dumb"}
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, env=env, timeout=300)
    lines = (result.stdout + result.stderr).rstrip("\n").splitlines()
    return [line.replace(table, TABLE) for line in lines]


def masked(lines: list[str]) -> list[str]:
    """Lines with what differs from run to run masked; the entries of a
    `- key: value` list with its indented lines sorted (slices come in file
    id order, and file ids are random)."""
    out: list[str] = []
    for line in lines:
        for pattern, replacement in _MASKS:
            line = pattern.sub(replacement, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return _sorted_entries(out)


def _sorted_entries(lines: list[str]) -> list[str]:
    result: list[str] = []
    entries: list[list[str]] = []
    for line in lines:
        if line.startswith("- "):
            entries.append([line])
        elif line.startswith("  ") and entries:
            entries[-1].append(line)
        else:
            result += [x for entry in sorted(entries) for x in entry]
            entries = []
            result.append(line)
    return result + [x for entry in sorted(entries) for x in entry]


def write(table: str = TABLE) -> None:
    """Replace every sample's output in the README with what it prints now."""
    lines = README.read_text().splitlines()
    for sample in reversed(samples("\n".join(lines))):
        start = sample.line  # the output starts after the command line
        lines[start:start + len(sample.output)] = run(sample.command, table) + ([""] if sample.output and not sample.output[-1] else [])
    README.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.readme_samples --write   (after hudi-bridge demo --path /tmp/trips --no-spark --no-sync)")
    write()
