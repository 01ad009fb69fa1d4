"""Arrow arrays and scalars from Python and numpy values without importing
pandas.

pyarrow imports pandas (0.2 to 0.4 s here) the first time it converts any
Python or numpy value (`pa.array`, `pa.scalar`, a Python literal handed to a
compute function) when pandas is installed, to ask whether the value is a
pandas object. The cold paths (a plan, a lister's first partition, a scan)
build their few arrays here instead: numbers from their numpy buffers, text
from UTF-8 buffers, and every other type as text cast by Arrow (its casts
parse integers, floats, booleans, dates, timestamps and decimals exactly).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa


def _validity(valid: npt.NDArray[np.bool_]) -> pa.Buffer | None:
    return None if bool(valid.all()) else pa.py_buffer(np.packbits(valid, bitorder="little"))


def from_numpy(values: npt.NDArray[Any], valid: npt.NDArray[np.bool_] | None = None) -> pa.Array:
    """A numeric or boolean numpy array as Arrow (`valid` False where null)."""
    length = len(values)
    validity = None if valid is None else _validity(valid)
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), length, [validity, data])
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, length, [validity, pa.py_buffer(np.ascontiguousarray(values))])


def strings(texts: Sequence[str | None], kind: pa.DataType | None = None) -> pa.Array:
    """Text (None is null) as a string array (`kind`: string or large_string)."""
    kind = kind or pa.string()
    encoded = [b"" if t is None else t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64 if pa.types.is_large_string(kind) else np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    valid = np.fromiter((t is not None for t in texts), dtype=np.bool_, count=len(texts))
    return pa.Array.from_buffers(kind, len(encoded), [_validity(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def binaries(values: Sequence[bytes]) -> pa.Array:
    """Bytes as a binary array."""
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))])


def _fits_exactly(value: Any, kind: pa.DataType) -> bool:
    if pa.types.is_boolean(kind):
        return isinstance(value, (bool, np.bool_))
    if pa.types.is_integer(kind):
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _text_casts_exactly(values: Sequence[Any], kind: pa.DataType) -> bool:
    """Whether Arrow's cast from text gives what pyarrow's conversion of these values would (else: let pyarrow decide)."""
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return True
    if pa.types.is_date32(kind):
        return all(v is None or type(v) is datetime.date for v in values)  # not a datetime: pyarrow's rules for those differ
    expected: type
    if pa.types.is_timestamp(kind):
        expected = datetime.datetime
    elif pa.types.is_decimal(kind):
        expected = Decimal
    else:
        return False
    return all(v is None or isinstance(v, expected) for v in values)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, Decimal, int)):
        return str(value)
    raise TypeError(type(value).__name__)


def array(values: Iterable[Any], kind: pa.DataType) -> pa.Array:
    """Python values (or a numpy array) of one Arrow type as an array of it (None is null)."""
    if isinstance(values, np.ndarray) and values.dtype != object and (
            pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        target = np.dtype(kind.to_pandas_dtype())
        if np.can_cast(values.dtype, target, casting="safe"):
            return from_numpy(values.astype(target, copy=False))
        return pa.array(values, kind)  # a narrowing: pyarrow's checked conversion
    values = values if isinstance(values, (list, tuple)) else list(values)
    if pa.types.is_null(kind):
        return pa.nulls(len(values), kind)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if all(v is None or isinstance(v, str) for v in values):
            return strings(values, kind)
        return pa.array(values, kind)  # pyarrow's error for a value that is not text
    if pa.types.is_binary(kind) and all(isinstance(v, bytes) for v in values):
        return binaries(values)
    if not _text_casts_exactly(values, kind):
        return pa.array(values, kind)
    try:
        if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
            if not all(v is None or _fits_exactly(v, kind) for v in values):
                raise TypeError("a value of another kind: pyarrow decides")  # e.g. 1.5 for an integer type is an error there
            valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=len(values))
            numbers = np.array([v if v is not None else 0 for v in values], dtype=kind.to_pandas_dtype())
            return from_numpy(numbers, valid)
        return strings([None if v is None else _text(v) for v in values]).cast(kind)
    except (TypeError, ValueError, OverflowError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array(values, kind)  # a type or value these paths do not meet: pyarrow's own conversion


def scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
    """One Python value (None is null) as an Arrow scalar of `kind`."""
    return array([value], kind)[0]


def to_numpy(values: pa.Array | pa.ChunkedArray, null: Any = None) -> npt.NDArray[Any]:
    """A boolean or numeric array as numpy, read from its buffers. Nulls become
    `null` (False for booleans and NaN for floats unless given; an integer
    array with nulls needs `null`)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not (pa.types.is_boolean(values.type) or pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return values.to_numpy(zero_copy_only=False)  # other types: pyarrow's conversion
    length, offset = len(values), values.offset
    validity, data = values.buffers()[0], values.buffers()[1]
    if pa.types.is_boolean(values.type):
        result = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[offset:offset + length].astype(np.bool_)
        default: Any = False
    else:
        dtype = values.type.to_pandas_dtype()
        result = np.frombuffer(data, dtype=dtype)[offset:offset + length]
        default = np.nan if pa.types.is_floating(values.type) else None
    if validity is None or values.null_count == 0:
        return result
    fill = default if null is None else null
    if fill is None:
        raise ValueError(f"an integer array with {values.null_count} null(s) needs a value for them")
    valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[offset:offset + length].astype(np.bool_)
    result = result.copy()
    result[~valid] = fill
    return result


SLICES_KEPT = 16  # runs of kept rows at most taken as slices rather than filtered


def kept_rows(table: pa.Table, keep: npt.NDArray[np.bool_]) -> pa.Table:
    """`table.filter(keep)`, as zero-copy slices when the kept rows lie in a
    few runs (a loose read's records less its neighbours' at each end): a
    filter copies every string column."""
    if keep.all():
        return table
    edges = np.flatnonzero(np.diff(keep.view(np.int8), prepend=np.int8(0), append=np.int8(0)))
    if len(edges) > 2 * SLICES_KEPT:
        return table.filter(from_numpy(keep))
    if not len(edges):
        return table.slice(0, 0)
    return pa.concat_tables([table.slice(start, stop - start) for start, stop in zip(edges[0::2].tolist(), edges[1::2].tolist())])


def taken(values: pa.Table | pa.ChunkedArray | pa.Array, positions: npt.NDArray[np.signedinteger]) -> Any:
    """`values.take(positions)`, taken chunk by chunk: Arrow's take from a
    chunked array joins every chunk first (at each call, a whole listing's
    names copied to take a run's few)."""
    chunks = values.to_batches() if isinstance(values, pa.Table) else values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if len(chunks) <= 1:
        return values.take(from_numpy(positions))
    ascending = bool((positions[1:] >= positions[:-1]).all())
    order = None if ascending else np.argsort(positions, kind="stable")
    sorted_positions = positions if order is None else positions[order]
    starts = np.cumsum([0] + [len(chunk) for chunk in chunks])
    bounds = np.searchsorted(sorted_positions, starts).tolist()
    parts = [chunk.take(from_numpy(sorted_positions[low:high] - start))
             for chunk, start, low, high in zip(chunks, starts.tolist(), bounds, bounds[1:]) if high > low]
    if isinstance(values, pa.Table):
        out = pa.Table.from_batches(parts, schema=values.schema) if parts else values.slice(0, 0)
    else:
        out = pa.concat_arrays(parts) if parts else chunks[0].slice(0, 0)
    if order is None:
        return out
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return out.take(from_numpy(back))


TRUE = from_numpy(np.array([True]))[0]
EMPTY_STRING = strings([""])[0]
ZERO = from_numpy(np.array([0], dtype=np.int64))[0]
FALSE = from_numpy(np.array([False]))[0]
NULL_BOOL = pa.nulls(1, pa.bool_())[0]


def booleans(value: bool, length: int) -> pa.Array:
    return from_numpy(np.full(length, value, dtype=np.bool_))


__all__ = ["EMPTY_STRING", "FALSE", "NULL_BOOL", "TRUE", "ZERO", "array", "binaries", "booleans", "from_numpy", "scalar", "strings", "to_numpy"]
