"""HFile v3 reader (the metadata table's base file format).

Reads the trailer and the load-on-open section once, then fetches only the
data blocks a key or key prefix can be in: the data index is binary searched
on row bytes (unsigned), as Hudi's HoodieHBaseKVComparator orders them.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from metadata._moved import moved_attribute
from metadata.errors import HudiFormatError
from metadata.mdt.hfile_blocks import IndexEntry, ReadAt
from metadata.mdt.hfile_cells import ZEROS, CellChunk, IntArray, lay_out_blocks
from metadata.mdt.hfile_format import DATA_MAGIC, decode_writable_vint, row_of_key
from metadata.mdt.hfile_index import HFileIndex, covering_prefixes

BLOCK_CACHE_SIZE = 64
# Uncompressed block bytes per CellChunk of a columnar scan. Chunks of 4 MiB peaked 25 MiB lower in a cold 1M
# plan (445 to 453 MiB against 470 to 480) in the same time, but a 10M plan took 26 to 28 s against 19 to 21 s.
# Since blocks inflate without the GIL (`inflate_blocks`), 8 MiB against 16: a cold 1M plan in the same time
# (1.30 s against 1.31, 8 alternating rounds) 10 MiB lower (470 to 491 MiB against 485 to 500); 10M 13.3 to
# 13.5 s against 12.8 to 13.2, 8 MiB lower.
CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class _Block:
    """An inflated data block: its offset, payload, quick walk (None: walk it
    exactly) and the key prefixes its rows are checked against (None: all kept)."""

    offset: int
    payload: bytes
    walk: IntArray | None
    checks: list[bytes] | None


class HFileReader(HFileIndex):
    """An HFile's cells: looked up by row or prefix, or scanned into columnar chunks."""

    def __init__(self, read_at: ReadAt, size: int, path: str, on_close: Callable[[], None] | None = None) -> None:
        super().__init__(read_at, size, path, on_close)
        self._block_cache: OrderedDict[int, tuple[list[bytes], list[bytes]]] = OrderedDict()

    def _data_block(self, entry: IndexEntry) -> tuple[list[bytes], list[bytes]]:
        """Rows and values of a data block, parsed once (LRU of recent blocks)."""
        with self._lock:
            cached = self._block_cache.get(entry.offset)
            if cached is not None:
                self._block_cache.move_to_end(entry.offset)
                return cached
        _, payload, _ = self._block(entry.offset, (DATA_MAGIC,))
        rows: list[bytes] = []
        values: list[bytes] = []
        for row, value in self._cells(payload, entry.offset):
            rows.append(row)
            values.append(value)
        with self._lock:
            self._block_cache[entry.offset] = (rows, values)
            while len(self._block_cache) > BLOCK_CACHE_SIZE:
                self._block_cache.popitem(last=False)
        return rows, values

    def _cells(self, payload: bytes, offset: int) -> Iterator[tuple[bytes, bytes]]:
        for start, value_start, value_length in self._cell_positions(payload, offset):
            (row_length,) = struct.unpack_from(">h", payload, start + 8)
            yield payload[start + 10 : start + 10 + row_length], payload[value_start : value_start + value_length]

    def _cell_positions(self, payload: bytes, offset: int) -> Iterator[tuple[int, int, int]]:
        """(start, value start, value length) of each cell, walking tags and MVCC versions exactly."""
        pos = 0
        end = len(payload)
        while pos < end:
            start = pos
            if pos + 8 > end:
                raise HudiFormatError(self.path, "data block ends inside a cell header", offset=offset)
            key_length, value_length = struct.unpack_from(">ii", payload, pos)
            pos += 8
            if key_length < 2 or value_length < 0 or pos + key_length + value_length > end:
                raise HudiFormatError(self.path, f"cell of key {key_length} and value {value_length} bytes runs past its block", offset=offset)
            (row_length,) = struct.unpack_from(">h", payload, pos)
            if row_length < 0 or row_length + 2 > key_length:
                raise HudiFormatError(self.path, f"cell row of {row_length} bytes does not fit its key of {key_length}", offset=offset)
            pos += key_length + value_length
            if self.includes_tags:
                (tags_length,) = struct.unpack_from(">h", payload, pos)
                pos += 2 + tags_length
            if self.includes_mvcc:
                _, pos = decode_writable_vint(payload, pos)
            yield start, start + 8 + key_length, value_length

    # Queries -------------------------------------------------------------------------------------
    @property
    def entry_count(self) -> int:
        return self.trailer.entry_count

    def schema_json(self) -> str | None:
        value = self.file_info.get(b"schema")
        return value.decode("utf-8") if value is not None else None

    def iter_all(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (row, value) in key order (blocks are not cached: a scan reads each once)."""
        for entry in self.data_index:
            _, payload, _ = self._block(entry.offset, (DATA_MAGIC,))
            yield from self._cells(payload, entry.offset)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Cells whose row starts with `prefix`, reading only blocks that can hold them."""
        for entry in self._blocks_from(prefix):
            rows, values = self._data_block(entry)
            for j in range(bisect_left(rows, prefix), len(rows)):
                if not rows[j].startswith(prefix):
                    return
                yield rows[j], values[j]

    def scan_prefixes(self, prefixes: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """Cells matching any prefix, in key order; each block is read at most once."""
        for prefix in covering_prefixes(prefixes):
            yield from self.scan_prefix(prefix)

    # Columnar scans ------------------------------------------------------------------------
    def blocks_for(self, prefixes: list[bytes] | None) -> list[tuple[IndexEntry, list[bytes] | None]]:
        """Data blocks that can hold rows starting with one of the prefixes
        (every block when None), in order, each with the prefixes its rows
        must be checked against; None when every row of it matches: its index
        row and the next block's both start with a prefix, and its rows lie
        between the two."""
        if prefixes is None:
            return [(entry, None) for entry in self.data_index]
        checks: dict[int, tuple[IndexEntry, list[bytes] | None]] = {}  # by block offset (blocks lie in key order)
        for prefix in covering_prefixes(prefixes):
            blocks = self._blocks_from(prefix)
            entry = next(blocks, None)
            row = row_of_key(entry.first_row) if entry is not None else b""
            while entry is not None:
                following = next(blocks, None)
                following_row = row_of_key(following.first_row) if following is not None else None
                if row.startswith(prefix) and following_row is not None and following_row.startswith(prefix):
                    checks[entry.offset] = (entry, None)
                else:
                    block_checks = checks.setdefault(entry.offset, (entry, []))[1]
                    if block_checks is not None:
                        block_checks.append(prefix)
                if following_row is None or not following_row.startswith(prefix):
                    break  # later blocks start past every row with the prefix
                entry, row = following, following_row
        return [checks[offset] for offset in sorted(checks)]

    def scan_chunks(self, prefixes: list[bytes] | None, chunk_bytes: int = CHUNK_BYTES, check: bool = True,
                    offsets: tuple[int, int] | None = None) -> Iterator[CellChunk]:
        """The cells whose rows start with one of the prefixes (all when None),
        in key order, as CellChunks of about `chunk_bytes` of blocks each.
        Without `check`, every cell of the blocks that can hold such rows
        (for a caller that filters rows itself). Blocks are read and
        inflated ahead by worker threads."""
        blocks: list[tuple[IndexEntry, list[bytes] | None]] = self.blocks_for(prefixes) if check else [
            (entry, None) for entry in self.blocks_covering(prefixes)]
        if offsets is not None:  # a shard of the file: the blocks starting in [start, stop)
            blocks = [(entry, checks) for entry, checks in blocks if offsets[0] <= entry.offset < offsets[1]]
        return self._chunks_of(blocks, chunk_bytes)

    def scan_rows(self, rows: list[bytes], chunk_bytes: int = CHUNK_BYTES) -> Iterator[CellChunk]:
        """Every cell of the blocks that can hold these exact rows (the caller keeps the rows it wants)."""
        return self._chunks_of([(entry, None) for entry in self.blocks_holding(rows)], chunk_bytes)

    def _chunks_of(self, blocks: list[tuple[IndexEntry, list[bytes] | None]], chunk_bytes: int) -> Iterator[CellChunk]:
        pending: list[_Block] = []
        size = 0
        for (entry, checks), (payload, walk) in zip(blocks, self._inflated([entry for entry, _ in blocks])):
            pending.append(_Block(entry.offset, payload, walk, checks))
            size += len(payload)
            if size >= chunk_bytes:
                yield self._chunk(pending)
                pending, size = [], 0
        if pending:
            yield self._chunk(pending)

    def _chunk(self, blocks: list[_Block]) -> CellChunk:
        """The cells of inflated blocks as one chunk: walked quickly (as they
        were inflated), then checked together; walked exactly when the quick
        walk does not fit them."""
        tail = self._fixed_tail()
        walks = [b.walk for b in blocks if b.walk is not None]
        if tail is not None and len(walks) == len(blocks):
            chunk = lay_out_blocks([b.payload for b in blocks], walks, tail, self.path)
            if chunk is not None:
                return self._select(chunk, [len(w) for w in walks], [b.checks for b in blocks])
        return self._exact_chunk(blocks)

    def _exact_chunk(self, blocks: list[_Block]) -> CellChunk:
        starts: list[int] = []
        value_starts: list[int] = []
        value_lengths: list[int] = []
        counts = []
        shift = 0
        for block in blocks:
            payload = block.payload
            cells = list(self._cell_positions(payload, block.offset))
            for start, value_start, value_length in cells:
                starts.append(start + shift)
                value_starts.append(value_start + shift)
                value_lengths.append(value_length)
            counts.append(len(cells))
            shift += len(payload)
        chunk = CellChunk.from_layout(b"".join([*(b.payload for b in blocks), ZEROS]), np.asarray(starts, dtype=np.int64),
                                      np.asarray(value_starts, dtype=np.int64), np.asarray(value_lengths, dtype=np.int64), self.path)
        return self._select(chunk, counts, [b.checks for b in blocks])

    @staticmethod
    def _select(chunk: CellChunk, counts: list[int], checks: list[list[bytes] | None]) -> CellChunk:
        """The chunk's cells whose rows match their block's prefixes."""
        if all(c is None for c in checks):
            return chunk
        # A row matching any of the query's prefixes matches one its block was given (that prefix's rows reach into the block).
        checked = np.repeat(np.array([c is not None for c in checks]), counts)
        rows = np.flatnonzero(checked)
        keep = ~checked
        keep[rows] = chunk.take(rows).rows_with_any_prefix(sorted({p for c in checks if c is not None for p in c}))
        return chunk.take(np.flatnonzero(keep))

    def get(self, row: bytes) -> bytes | None:
        for found, value in self.scan_prefix(row):
            if found == row:
                return value
            if found > row:
                break
        return None


# Names this module offered before it was split, for one release.
_MOVED = {"gunzip_at_most": "metadata.mdt.hfile_blocks", "MAX_BLOCK_BYTES": "metadata.mdt.hfile_blocks", "INFLATE_GROUP": "metadata.mdt.hfile_blocks", "INFLATE_AHEAD": "metadata.mdt.hfile_blocks", "PREFETCH_GROUP": "metadata.mdt.hfile_blocks", "PREFETCH_GROUPS": "metadata.mdt.hfile_blocks", "COVERINGS_KEPT": "metadata.mdt.hfile_blocks", "NATIVE_INFLATE_FROM": "metadata.mdt.hfile_blocks", "prefix_successor": "metadata.mdt.hfile_index", "MAX_TAGS_KEY": "metadata.mdt.hfile_index", "KEY_VALUE_VERSION_KEY": "metadata.mdt.hfile_index"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
