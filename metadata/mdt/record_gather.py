"""Fields of chosen records gathered together: a column's identities, file
names, counts and bounds (`FlatStats.add_decoded`).

Decoded records (`columnar.Decoded`) hold each path's values for the rows
that have one. A column's records take theirs at its rows: in numpy and
Arrow a dozen calls a field, each letting the GIL go and taking it back, so
the thread reading a plan's runs spent about half its time there, much of
it waiting to take the GIL back. Compiled (`_cells.locate_fields`,
`_cells.fill_fields`), the fields are located in one call and copied, UTF-8
checked, into buffers of the read pool in a second: two calls a column,
each letting the GIL go off the main thread (`native.lets_gil_go`). The
Arrow path (`reference`) gives the same arrays and names what the compiled
one declines (text that is not UTF-8).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt.decoded import Decoded
from metadata.mdt.hfile_cells import as_utf8, at_ascending, spans_to_binary
from metadata.mdt.native import cells as _native
from metadata.mdt.native import int64s, lets_gil_go
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Spans:
    """Byte spans of one buffer, one per record: a chunk's keys past their column id."""

    buffer: npt.NDArray[np.uint8]
    starts: IntArray
    lengths: IntArray

    def text_at(self, rows: IntArray) -> pa.StringArray:
        """The spans of `rows` (ascending) as text (ArrowInvalid when not UTF-8)."""
        return as_utf8(spans_to_binary(self.buffer, at_ascending(self.starts, rows), at_ascending(self.lengths, rows)))


@dataclass(frozen=True)
class RowText:
    """Each row's span of `spans`, as text."""

    spans: Spans


class Taken(Enum):
    """How a path's values are taken at the rows."""

    TEXT = "text"  # UTF-8 text, "" where a row has none
    TEXT_OR_NULL = "text or null"  # UTF-8 text, null where a row has none
    BINARY = "binary"  # bytes, null where a row has none
    VALUES = "values"  # numbers or booleans, null where a row has none (int64 nulls where no record has the path)


@dataclass(frozen=True)
class PathField:
    """A decoded path's values at the rows."""

    path: str
    taken: Taken


Field = RowText | PathField


def gather(decoded: Decoded, rows: IntArray, fields: list[Field]) -> list[pa.Array]:
    """Each field's values at `rows` (ascending records of `decoded`)."""
    if _native is not None:
        arrays = _compiled(decoded, rows, fields)
        if arrays is not None:
            return arrays
    return [reference(decoded, rows, field) for field in fields]


def reference(decoded: Decoded, rows: IntArray, field: Field) -> pa.Array:
    """One field by numpy and Arrow: the reference for the compiled gather."""
    if isinstance(field, RowText):
        return field.spans.text_at(rows)
    if field.taken is Taken.VALUES:
        return decoded.values_at(field.path, rows) if field.path in decoded.present else pa.nulls(len(rows), pa.int64())
    binary = decoded.binary_at(field.path, rows)
    if field.taken is Taken.BINARY:
        return binary
    text = as_utf8(binary)
    return pc.fill_null(text, arrow_values.EMPTY_STRING) if field.taken is Taken.TEXT else text


_EMPTY = np.zeros(0, dtype=np.int64)


def _compiled(decoded: Decoded, rows: IntArray, fields: list[Field]) -> list[pa.Array] | None:
    """The fields by `_cells`, or None where it declines (the reference decides)."""
    assert _native is not None
    rows = int64s(rows)
    count = len(rows)
    located: list[tuple[Any, Any]] = []
    sources: list[tuple[Any, ...]] = []
    for field in fields:
        if isinstance(field, RowText):
            starts, lengths = field.spans.starts, field.spans.lengths
            located.append((None, lengths))
            sources.append((field.spans.buffer, starts, lengths))
        elif field.taken is Taken.VALUES:
            values = _values_of(decoded, field.path)
            located.append((decoded.present.get(field.path, _EMPTY), None))
            sources.append((values,))
        else:
            starts, lengths = decoded.spans.get(field.path, (_EMPTY, _EMPTY))
            located.append((decoded.present.get(field.path, _EMPTY) if field.path in decoded.spans else _EMPTY, lengths))
            sources.append((decoded.buffer, starts, lengths))
    # megabytes a column, in the read pool as the outputs are, which keeps its pages for the next column
    positions = pa.allocate_buffer(8 * count * len(fields), memory_pool=READ_POOL)
    missing, totals = _native.locate_fields(rows, [tuple(None if a is None else int64s(a) for a in pair) for pair in located], positions,
                                            lets_gil_go())
    specs: list[tuple[Any, ...]] = []
    made: list[tuple[pa.DataType, list[pa.Buffer | None], int]] = []
    for field, source, absent, total in zip(fields, sources, missing, totals):
        nullable = absent > 0 and not (isinstance(field, RowText) or field.taken is Taken.TEXT)
        validity = pa.allocate_buffer((count + 7) // 8, memory_pool=READ_POOL) if nullable else None
        if isinstance(field, PathField) and field.taken is Taken.VALUES:
            values = source[0]
            if values.dtype == np.bool_:
                dtype, out = pa.bool_(), pa.allocate_buffer((count + 7) // 8, memory_pool=READ_POOL)
                specs.append((1, values.view(np.uint8), out, validity))
            else:
                dtype, out = pa.from_numpy_dtype(values.dtype), pa.allocate_buffer(8 * count, memory_pool=READ_POOL)
                specs.append((0, values, out, validity))
            made.append((dtype, [validity, out], absent if nullable else 0))
            continue
        if total >= 2**31:
            return None  # 32-bit offsets: the reference decides
        offsets, out = pa.allocate_buffer(4 * (count + 1), memory_pool=READ_POOL), pa.allocate_buffer(total, memory_pool=READ_POOL)
        text = isinstance(field, RowText) or field.taken is not Taken.BINARY
        specs.append((2, source[0], int64s(source[1]), int64s(source[2]), text, offsets, out, validity))
        made.append((pa.string() if text else pa.binary(), [validity, offsets, out], absent if nullable else 0))
    if not _native.fill_fields(positions, specs, lets_gil_go()):
        return None  # text that is not UTF-8: the reference names it
    return [pa.Array.from_buffers(dtype, count, buffers, null_count=nulls) for dtype, buffers, nulls in made]


def _values_of(decoded: Decoded, path: str) -> npt.NDArray[Any]:
    """A number or boolean path's values (int64s, float64s or bools; none where no record has the path)."""
    for table in (decoded.ints, decoded.floats, decoded.bools):
        if path in table:
            return np.ascontiguousarray(table[path])
    if path in decoded.present:
        raise KeyError(path)
    return _EMPTY
