"""What a vectorised decode of many metadata records gives (`columnar`):
values per field path, for the rows that have the path."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt.hfile_cells import as_utf8, at_ascending, spans_to_binary
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL

IntArray = npt.NDArray[np.int64]


class Unsupported(Exception):
    """A value shape the vectorised decoder leaves to the reference decoder."""


@dataclass
class Decoded:
    """Per path: values for the rows in `present[path]`. Rows of top-level
    fields are record indexes; rows below a map or array are entry rows."""

    count: int
    buffer: npt.NDArray[np.uint8]
    present: dict[str, IntArray] = field(default_factory=dict)
    ints: dict[str, IntArray] = field(default_factory=dict)
    floats: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    bools: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    spans: dict[str, tuple[IntArray, IntArray]] = field(default_factory=dict)  # (start, length) into the buffer
    entries: dict[str, int] = field(default_factory=dict)  # path + "{}" -> how many entry rows
    owners: dict[str, IntArray] = field(default_factory=dict)  # path + "{}" -> the enclosing row of each entry

    def size_of(self, path: str) -> int:
        """How many rows the space a path belongs to has."""
        space = path.rfind("{}")
        return self.count if space < 0 else self.entries[path[: space + 2]]

    def binary_array(self, path: str) -> pa.BinaryArray:
        """The bytes of a path's spans, one per row of its space (null where absent)."""
        if path not in self.spans:
            return pa.nulls(self.size_of(path), pa.binary())
        return self.scatter(path, self.present_bytes(path))

    def present_bytes(self, path: str) -> pa.BinaryArray:
        """The bytes of a path's spans, one per present row, in `present` order."""
        starts, lengths = self.spans[path]
        return spans_to_binary(self.buffer, starts, lengths)

    def string_array(self, path: str) -> pa.StringArray:
        """Like binary_array, as UTF-8 text (ArrowInvalid when it is not)."""
        return as_utf8(self.binary_array(path))

    def scatter(self, path: str, values: pa.Array) -> pa.Array:
        """Values of a path's present rows spread over all rows of its space."""
        size = self.size_of(path)
        present = self.present[path]
        if len(present) == size:
            return values
        where = np.full(size, -1, dtype=np.int64)
        where[present] = np.arange(len(present))
        return pc.take(values, arrow_values.from_numpy(where, valid=~(where < 0)), memory_pool=READ_POOL)

    def strings(self, path: str) -> list[str | None]:
        return self.string_array(path).to_pylist()

    def locate(self, path: str, rows: IntArray) -> tuple[IntArray, npt.NDArray[np.bool_] | None]:
        """Where each of `rows` (ascending) is among a path's present rows,
        and which of them are present (None: all)."""
        present = self.present[path]
        if len(present) == self.size_of(path):  # every row: row i is the i-th
            return rows, None
        if not len(present):
            return np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=np.bool_)
        first, count = int(present[0]), len(present)
        if int(present[-1]) - first + 1 == count:  # one unbroken range (a union branch of one column's records): no search
            at = rows - first
            inside = (at >= 0) & (at < count)
            return (at, None) if inside.all() else (np.clip(at, 0, count - 1), inside)
        at = np.minimum(np.searchsorted(present, rows), len(present) - 1)
        return at, present[at] == rows

    def values_at(self, path: str, rows: IntArray) -> pa.Array:
        """A numeric or boolean path's values at `rows` (ascending; null where absent)."""
        at, found = self.locate(path, rows)
        for table in (self.ints, self.floats, self.bools):
            if path in table:
                values = table[path]
                if not len(values):  # present in no row: all null
                    return arrow_values.from_numpy(np.zeros(len(rows), dtype=values.dtype), valid=np.zeros(len(rows), dtype=np.bool_))
                return arrow_values.from_numpy(values[at] if found is not None else at_ascending(values, at, own=True), valid=found)
        raise KeyError(path)

    def binary_at(self, path: str, rows: IntArray) -> pa.BinaryArray:
        """A span path's bytes at `rows` (ascending; null where absent), copied once."""
        if path not in self.spans:
            return pa.nulls(len(rows), pa.binary())
        at, found = self.locate(path, rows)
        starts, lengths = self.spans[path]
        if found is None or found.all():  # every row found: distinct ascending places
            return spans_to_binary(self.buffer, at_ascending(starts, at), at_ascending(lengths, at))
        values = spans_to_binary(self.buffer, starts[at[found]], lengths[at[found]])
        where = np.cumsum(found) - 1
        return pc.take(values, arrow_values.from_numpy(where, valid=found), memory_pool=READ_POOL)
