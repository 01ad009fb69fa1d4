"""HFile data-block cells as columns: offsets into one buffer, not a bytes
object per cell.

A metadata-table read of a million files walks millions of cells. Python
steps once per cell only to find where each cell starts (a cell's length is
in its header, so the walk is sequential); rows and values are then located,
checked and selected with numpy over all cells of many blocks at once, and
become Arrow arrays without a Python object per cell.

Cell layout (HBase KeyValue): int32 key length, int32 value length, key
(int16 row length, row, family, qualifier, timestamp, type), value, then
int16 tags length and tags when the file has tags, then the MVCC version as
a Hadoop writable vint when the file has one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiFormatError

IntArray = npt.NDArray[np.int64]
PADDING = 16  # zero bytes after the last block, so fixed-width gathers never index past the buffer
_LENGTHS = struct.Struct(">ii")


def cell_starts(payload: bytes, fixed_tail: int) -> list[int] | None:
    """Where each cell of a data block starts, assuming every cell ends with
    `fixed_tail` bytes after its value (a one-byte MVCC vint, no tags); None
    when the block does not walk that way (the caller then walks it exactly)."""
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
    def from_cells(cls, payload: bytes, starts: Sequence[int] | IntArray, where: str) -> CellChunk:
        """From where each cell of a payload starts (lengths are read here)."""
        data = np.frombuffer(payload + b"\x00" * PADDING, dtype=np.uint8)
        start = np.asarray(starts, dtype=np.int64)
        key_length = _int32_at(data, start)
        value_length = _int32_at(data, start + 4)
        row_length = _int16_at(data, start + 8)
        if (row_length < 0).any() or (row_length + 2 > key_length).any():
            bad = int(np.flatnonzero((row_length < 0) | (row_length + 2 > key_length))[0])
            raise HudiFormatError(where, f"cell row of {int(row_length[bad])} bytes does not fit its key of {int(key_length[bad])}",
                                  offset=int(start[bad]))
        return cls(data, start + 10, row_length, start + 8 + key_length, value_length, where)

    def take(self, index: IntArray) -> CellChunk:
        return CellChunk(self.data, self.row_start[index], self.row_length[index], self.value_start[index], self.value_length[index], self.where)

    def rows(self) -> pa.BinaryArray:
        return spans_to_binary(self.data, self.row_start, self.row_length)

    def keys(self) -> pa.StringArray:
        """Rows as text (metadata-table keys are UTF-8)."""
        try:
            return as_utf8(self.rows())
        except pa.ArrowInvalid as exc:
            raise HudiFormatError(self.where, f"a metadata-table key is not UTF-8 ({exc})") from None

    def key_list(self) -> list[str]:
        return [k for k in self.keys().to_pylist() if k is not None]

    def value_list(self) -> list[bytes]:
        """The values as bytes objects (for the per-record reference decoder)."""
        raw = self.data.tobytes()
        return [raw[s : s + n] for s, n in zip(self.value_start.tolist(), self.value_length.tolist())]

    def rows_with_prefix(self, prefix: bytes) -> npt.NDArray[np.bool_]:
        """Which cells' rows start with `prefix`."""
        if not prefix:
            return np.ones(len(self), dtype=bool)
        long_enough = self.row_length >= len(prefix)
        heads = self.data[np.minimum(self.row_start, len(self.data) - len(prefix))[:, None] + np.arange(len(prefix))]
        return long_enough & (heads == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)


def concat_chunks(chunks: Sequence[CellChunk], where: str) -> CellChunk:
    """One chunk of several (their buffers end to end)."""
    if len(chunks) == 1:
        return chunks[0]
    shifts = np.cumsum([0] + [len(c.data) for c in chunks[:-1]])
    return CellChunk(
        np.concatenate([c.data for c in chunks]) if chunks else np.zeros(PADDING, dtype=np.uint8),
        np.concatenate([c.row_start + s for c, s in zip(chunks, shifts)]) if chunks else np.zeros(0, np.int64),
        np.concatenate([c.row_length for c in chunks]) if chunks else np.zeros(0, np.int64),
        np.concatenate([c.value_start + s for c, s in zip(chunks, shifts)]) if chunks else np.zeros(0, np.int64),
        np.concatenate([c.value_length for c in chunks]) if chunks else np.zeros(0, np.int64),
        where,
    )


def _int32_at(data: npt.NDArray[np.uint8], at: IntArray) -> IntArray:
    b = data[at[:, None] + np.arange(4)].astype(np.int64)
    value = (b[:, 0] << 24) | (b[:, 1] << 16) | (b[:, 2] << 8) | b[:, 3]
    return np.where(value >= 2**31, value - 2**32, value)


def _int16_at(data: npt.NDArray[np.uint8], at: IntArray) -> IntArray:
    b = data[at[:, None] + np.arange(2)].astype(np.int64)
    value = (b[:, 0] << 8) | b[:, 1]
    return np.where(value >= 2**15, value - 2**16, value)


def spans_to_binary(data: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray) -> pa.BinaryArray:
    """The byte spans (non-overlapping) as one compact Arrow binary array,
    copied by Arrow: the spans in buffer order and the gaps between them make
    one array over `data`, whose even elements are taken (in the given order)."""
    count = len(starts)
    if count == 0:
        return pa.array([], pa.binary())
    ends = starts + lengths
    if (starts < 0).any() or (lengths < 0).any() or int(ends.max()) > len(data):
        raise ValueError("byte spans run past their buffer")
    order = np.arange(count, dtype=np.int64)
    if (starts[1:] < starts[:-1]).any():
        order = np.argsort(starts, kind="stable")
    offsets = np.empty(2 * count, dtype=np.int64)
    offsets[0::2] = starts[order]
    offsets[1::2] = ends[order]
    if (np.diff(offsets) < 0).any():
        raise ValueError("byte spans overlap")
    interleaved = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 2 * count - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    wanted = np.empty(count, dtype=np.int64)
    wanted[order] = 2 * np.arange(count, dtype=np.int64)  # span i sits at element 2 * (its place in buffer order)
    return pc.take(interleaved, pa.array(wanted)).cast(pa.binary())


def as_utf8(binary: pa.Array) -> pa.StringArray:
    """Binary as text, checking the bytes are UTF-8 (ArrowInvalid when not)."""
    text = binary.view(pa.string())
    text.validate(full=True)
    return text
