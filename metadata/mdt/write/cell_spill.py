"""Sorting more HFile cells than fit in memory.

Metadata-table keys are hashes, so cells arrive in random order while an
HFile wants them sorted. Cells gather in memory up to a byte budget; each
full buffer is sorted and written to a temporary run file; reading merges
the runs. Memory stays bounded by the budget, not by the table.
"""

from __future__ import annotations

import heapq
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
_LENGTHS = struct.Struct(">II")


class CellSpill:
    """Collects (row, value) cells; `sorted_cells()` yields them by row."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, folder: str | None = None) -> None:
        self.budget_bytes = budget_bytes
        self._folder = folder
        self._temp: tempfile.TemporaryDirectory[str] | None = None
        self._buffer: list[tuple[bytes, bytes]] = []
        self._buffered_bytes = 0
        self._runs: list[Path] = []
        self.count = 0

    def add(self, row: bytes, value: bytes) -> None:
        self._buffer.append((row, value))
        self._buffered_bytes += len(row) + len(value) + 64  # list and tuple overhead
        self.count += 1
        if self._buffered_bytes >= self.budget_bytes:
            self._spill()

    def _spill(self) -> None:
        if self._temp is None:
            self._temp = tempfile.TemporaryDirectory(prefix="hudi-bridge-cells-", dir=self._folder)
        path = Path(self._temp.name) / f"run-{len(self._runs):05d}"
        self._buffer.sort()
        with path.open("wb") as out:
            for row, value in self._buffer:
                out.write(_LENGTHS.pack(len(row), len(value)) + row + value)
        self._runs.append(path)
        self._buffer = []
        self._buffered_bytes = 0

    @property
    def spilled_runs(self) -> int:
        return len(self._runs)

    def sorted_cells(self) -> Iterator[tuple[bytes, bytes]]:
        """All cells by row; a row added twice is an error (keys are unique)."""
        self._buffer.sort()
        if not self._runs:
            merged: Iterator[tuple[bytes, bytes]] = iter(self._buffer)
        else:
            handles = [path.open("rb") for path in self._runs]
            merged = heapq.merge(*(_read_run(h) for h in handles), iter(self._buffer))
        previous: bytes | None = None
        try:
            for row, value in merged:
                if row == previous:
                    raise ValueError(f"metadata key {row!r} was written twice in one file")
                previous = row
                yield row, value
        finally:
            self.close()

    def close(self) -> None:
        self._buffer = []
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None
        self._runs = []


def _read_run(handle: BinaryIO) -> Iterator[tuple[bytes, bytes]]:
    with handle:
        while header := handle.read(_LENGTHS.size):
            row_length, value_length = _LENGTHS.unpack(header)
            yield handle.read(row_length), handle.read(value_length)
