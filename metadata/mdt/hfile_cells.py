"""HFile data-block cells as columns: offsets into one buffer, not a bytes
object per cell.

A metadata-table read of a million files walks millions of cells. The one
step per cell is finding where each cell starts (a cell's length is in its
header, so the walk is sequential): compiled (`_cells.c`, built at install
when a C compiler is there, releasing the GIL so the inflating threads walk
too), else in Python. Rows and values are then located, checked and selected
with numpy over all cells of many blocks at once, and become Arrow arrays
without a Python object per cell.

Cell layout (HBase KeyValue): int32 key length, int32 value length, key
(int16 row length, row, family, qualifier, timestamp, type), value, then
int16 tags length and tags when the file has tags, then the MVCC version as
a Hadoop writable vint when the file has one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.ma  # noqa: F401 - pa.array(ndarray) imports it on first use; a lister's first read should not pay for that
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiFormatError
from metadata.mdt.native import cells as _native
from metadata.mdt.native import int64s, lets_gil_go
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL
from metadata.util.arrow_values import from_numpy

IntArray = npt.NDArray[np.int64]
PADDING = 16  # zero bytes after the last block, so fixed-width gathers never index past the buffer
ZEROS = bytes(PADDING)
_LENGTHS = struct.Struct(">ii")


def walk_cells(payload: bytes, fixed_tail: int) -> IntArray | None:
    """Where each cell of a data block starts and where its value starts (a
    row of two per cell), assuming every cell ends with `fixed_tail` bytes
    after its value (a one-byte MVCC vint, no tags); None when the block does
    not walk that way (the caller then walks it exactly). Values end
    `fixed_tail` bytes before the next cell (or the block's end): the caller
    checks those bytes. A cell starts where the lengths of the one before say."""
    if _native is not None:
        found = _native.walk_cells(payload, fixed_tail)
        return None if found is None else np.frombuffer(found, dtype=np.int64).reshape(-1, 2)
    starts = walk_cells_in_python(payload, fixed_tail)
    if starts is None:
        return None
    at = np.asarray(starts, dtype=np.int64)
    return np.stack([at, at + 8 + key_lengths(np.frombuffer(payload, dtype=np.uint8), at)], axis=1)


def walk_cells_in_python(payload: bytes, fixed_tail: int) -> list[int] | None:
    """`walk_cells` a cell at a time in Python (150 ns a cell): the reference,
    and the walk where the compiled one was not built."""
    unpack = _LENGTHS.unpack_from
    starts: list[int] = []
    append = starts.append
    pos = 0
    end = len(payload) - 8
    step = 8 + fixed_tail
    try:
        while pos <= end:
            key_length, value_length = unpack(payload, pos)
            if key_length < 2 or value_length < 0:
                return None
            append(pos)
            pos += key_length + value_length + step
    except struct.error:
        return None
    return starts if pos == len(payload) else None


def lay_out_blocks(payloads: list[bytes], walks: list[IntArray], fixed_tail: int, where: str) -> CellChunk | None:
    """Walked blocks (`walk_cells`) as one chunk: their payloads end to end,
    then PADDING zero bytes; each cell's value ends `fixed_tail` bytes before
    the next cell (or its block's end), and those bytes are checked to be a
    one-byte MVCC vint. None when they are not (the caller walks the blocks
    exactly). Compiled, in one pass a block at a time; the numpy layout
    decides whatever the compiled one does not take (and names a bad cell)."""
    if _native is not None:
        laid = _native.lay_out(payloads, walks, fixed_tail, PADDING)
        if laid is not None:
            data, layout = laid
            row_start, row_length, value_start, value_length = np.frombuffer(layout, dtype=np.int64).reshape(4, -1)
            return CellChunk(np.frombuffer(data, dtype=np.uint8), row_start, row_length, value_start, value_length, where)
    return lay_out_with_numpy(payloads, walks, fixed_tail, where)


def lay_out_with_numpy(payloads: list[bytes], walks: list[IntArray], fixed_tail: int, where: str) -> CellChunk | None:
    """`lay_out_blocks` with numpy, over all cells at once: the reference."""
    counts = [len(w) for w in walks]
    shifts = np.repeat(np.cumsum([0, *(len(p) for p in payloads)])[:-1], counts)  # each block's place in the chunk
    cells = np.concatenate(walks) if walks else np.empty((0, 2), dtype=np.int64)  # rows: cell start, value start, in their blocks
    starts, value_starts = cells[:, 0] + shifts, cells[:, 1] + shifts
    padded = b"".join([*payloads, ZEROS])  # one copy: the blocks end to end, then the padding
    # blocks lie end to end: a block's end is the next one's first cell
    cell_ends = np.append(starts[1:], len(padded) - len(ZEROS)) if len(starts) else starts
    if fixed_tail and not _single_byte_vints(padded, cell_ends - 1):
        return None
    return CellChunk.from_layout(padded, starts, value_starts, cell_ends - fixed_tail - value_starts, where)


def _single_byte_vints(payload: bytes, at: IntArray) -> bool:
    """Whether the bytes at these places are whole writable vints (-112..127)."""
    last = np.frombuffer(payload, dtype=np.uint8)[at]
    return bool(((last < 0x80) | (last >= 0x90)).all())


def at_ascending(values: npt.NDArray[Any], index: IntArray, own: bool = False) -> npt.NDArray[Any]:
    """`values[index]` for distinct ascending positions: a view rather than a
    gather when they are one unbroken range (a chunk's records of one column
    usually are), copied when the result must `own` its values (a view kept
    would keep all of `values`)."""
    count = len(index)
    if count and int(index[0]) >= 0 and int(index[-1]) - int(index[0]) == count - 1:
        first = int(index[0])
        view = values[first : first + count]
        return view.copy() if own else view
    return values[index]


def key_lengths(data: npt.NDArray[np.uint8], starts: IntArray) -> IntArray:
    """The big-endian int32 key length at the start of each cell."""
    at = data[starts[:, None] + np.arange(4)].astype(np.int64)
    return (at[:, 0] << 24) | (at[:, 1] << 16) | (at[:, 2] << 8) | at[:, 3]


@dataclass
class CellChunk:
    """Cells of some data blocks of one HFile: the blocks' payloads end to
    end in `data` (zero-padded), and per cell where its row and value are."""

    data: npt.NDArray[np.uint8]
    row_start: IntArray
    row_length: IntArray
    value_start: IntArray
    value_length: IntArray
    where: str

    def __len__(self) -> int:
        return len(self.row_start)

    @classmethod
    def from_layout(cls, padded: bytes, starts: IntArray, value_starts: IntArray, value_lengths: IntArray, where: str) -> CellChunk:
        """From where each cell and its value start in blocks laid end to end
        and followed by PADDING zero bytes, and the value lengths."""
        data = np.frombuffer(padded, dtype=np.uint8)
        key_length = value_starts - starts - 8
        row_length = (data[starts + 8].astype(np.int64) << 8) | data[starts + 9]
        row_length = np.where(row_length >= 2**15, row_length - 2**16, row_length)
        if (row_length < 0).any() or (row_length + 2 > key_length).any():
            bad = int(np.flatnonzero((row_length < 0) | (row_length + 2 > key_length))[0])
            raise HudiFormatError(where, f"cell row of {int(row_length[bad])} bytes does not fit its key of {int(key_length[bad])}",
                                  offset=int(starts[bad]))
        return cls(data, starts + 10, row_length, value_starts, value_lengths, where)

    def take(self, index: IntArray) -> CellChunk:
        """The cells at these distinct ascending positions."""
        return CellChunk(self.data, at_ascending(self.row_start, index), at_ascending(self.row_length, index),
                         at_ascending(self.value_start, index), at_ascending(self.value_length, index), self.where)

    def rows(self, skip: int = 0) -> pa.BinaryArray:
        """The rows, without their first `skip` bytes."""
        return spans_to_binary(self.data, *self.row_spans(skip))

    def row_spans(self, skip: int = 0) -> tuple[IntArray, IntArray]:
        """Where each row starts and how long it is, without its first `skip` bytes."""
        if skip and (self.row_length < skip).any():
            raise HudiFormatError(self.where, f"a metadata-table key is shorter than {skip} bytes")
        return self.row_start + skip, self.row_length - skip

    def keys(self, skip: int = 0) -> pa.StringArray:
        """Rows as text (metadata-table keys are UTF-8), without their first `skip` characters (ASCII ids)."""
        try:
            return as_utf8(self.rows(skip))
        except pa.ArrowInvalid as exc:
            raise HudiFormatError(self.where, f"a metadata-table key is not UTF-8 ({exc})") from None

    def key_list(self) -> list[str]:
        return [k for k in self.keys().to_pylist() if k is not None]

    def value_list(self) -> list[bytes]:
        """The values as bytes objects (for the per-record reference decoder)."""
        raw = self.data.tobytes()
        return [raw[s : s + n] for s, n in zip(self.value_start.tolist(), self.value_length.tolist())]

    def rows_with_any_prefix(self, prefixes: list[bytes]) -> npt.NDArray[np.bool_]:
        """Which cells' rows start with one of `prefixes`: per prefix width,
        the rows' heads of that width looked up among the sorted prefixes
        (one search over all cells, however many prefixes)."""
        matched = np.zeros(len(self), dtype=bool)
        for width in sorted({len(p) for p in prefixes}):
            if width == 0:
                return np.ones(len(self), dtype=bool)
            of_width = sorted({p for p in prefixes if len(p) == width})
            # as fixed-width byte strings; a prefix ending in NUL bytes (which numpy strips) is compared one at a time
            if len(of_width) == 1 or any(p.endswith(b"\0") for p in of_width):
                for prefix in of_width:
                    matched |= self.rows_with_prefix(prefix)
                continue
            wanted = np.array(of_width, dtype=f"S{width}")
            heads = self.data[np.minimum(self.row_start, len(self.data) - width)[:, None] + np.arange(width)]
            keys = np.ascontiguousarray(heads).view(f"S{width}").ravel()
            at = np.minimum(np.searchsorted(wanted, keys), len(wanted) - 1)
            matched |= (self.row_length >= width) & (wanted[at] == keys)
        return matched

    def rows_with_prefix(self, prefix: bytes) -> npt.NDArray[np.bool_]:
        """Which cells' rows start with `prefix`."""
        if not prefix:
            return np.ones(len(self), dtype=bool)
        long_enough = self.row_length >= len(prefix)
        heads = self.data[np.minimum(self.row_start, len(self.data) - len(prefix))[:, None] + np.arange(len(prefix))]
        return long_enough & (heads == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)


def spans_to_binary(data: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray) -> pa.BinaryArray:
    """The byte spans (non-overlapping) as one compact Arrow binary array,
    copied by Arrow: the spans in buffer order and the gaps between them make
    one array over `data`, whose even elements are taken (in the given order)."""
    count = len(starts)
    if count == 0:
        return arrow_values.array([], pa.binary())
    total = int(lengths.sum())
    if _native is not None and 0 <= total < 2**31:  # in buffer order: copied in one pass, compiled, into the read pool
        offsets = pa.allocate_buffer(4 * (count + 1), memory_pool=READ_POOL)
        copied = pa.allocate_buffer(total, memory_pool=READ_POOL)
        if _native.gather_spans(data, int64s(starts), int64s(lengths), offsets, copied, lets_gil_go()):
            return pa.Array.from_buffers(pa.binary(), count, [None, offsets, copied])
    return spans_to_binary_with_arrow(data, starts, lengths)


def spans_to_binary_with_arrow(data: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray) -> pa.BinaryArray:
    """`spans_to_binary` by numpy and Arrow (the reference for the compiled gather)."""
    count = len(starts)
    ends = starts + lengths
    if (starts < 0).any() or (lengths < 0).any() or int(ends.max()) > len(data):
        raise ValueError("byte spans run past their buffer")
    order = np.arange(count, dtype=np.int64)
    in_order = not (starts[1:] < starts[:-1]).any()
    if not in_order:
        order = np.argsort(starts, kind="stable")
    small = len(data) < 2**31  # 32-bit offsets: Arrow takes straight into a binary array, no second copy to narrow them
    offsets = np.empty(2 * count, dtype=np.int32 if small else np.int64)
    offsets[0::2] = starts if in_order else starts[order]
    offsets[1::2] = ends if in_order else ends[order]
    if (offsets[2::2] < offsets[1:-1:2]).any():  # a span starts before the one before it ends
        raise ValueError("byte spans overlap")
    kind = pa.binary() if small else pa.large_binary()
    interleaved = pa.Array.from_buffers(kind, 2 * count - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    if in_order:  # the even elements, by a filter: one pass (2M spans in a loop: 35 to 70 ms, a take 100 to 140 ms)
        taken = pc.filter(interleaved, _even_elements(2 * count - 1), memory_pool=READ_POOL)
    else:
        wanted = np.empty(count, dtype=np.int64)
        wanted[order] = 2 * np.arange(count, dtype=np.int64)  # span i sits at element 2 * (its place in buffer order)
        taken = pc.take(interleaved, from_numpy(wanted), memory_pool=READ_POOL)
    return taken if small else taken.cast(pa.binary(), memory_pool=READ_POOL)


def _even_elements(length: int) -> pa.BooleanArray:
    """A mask selecting elements 0, 2, 4, ... of `length` (bits 0101... from the lowest)."""
    return pa.Array.from_buffers(pa.bool_(), length, [None, pa.py_buffer(b"\x55" * ((length + 7) // 8))])


def as_utf8(binary: pa.Array) -> pa.StringArray:
    """Binary as text, checking the bytes are UTF-8 (ArrowInvalid when not)."""
    text = binary.view(pa.string())
    text.validate(full=True)
    return text
