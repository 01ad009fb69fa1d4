"""HFile v3 reader (the metadata table's base file format).

Reads the trailer and the load-on-open section once, then fetches only the
data blocks a key or key prefix can be in: the data index is binary searched
on row bytes (unsigned), as Hudi's HoodieHBaseKVComparator orders them.
"""

from __future__ import annotations

import gzip
import os
import struct
import threading
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from metadata.errors import HudiFormatError
from metadata.mdt.hfile_cells import CellChunk, cell_starts
from metadata.mdt.hfile_format import (
    CHECKSUM_CRC32,
    CHECKSUM_CRC32C,
    CODEC_GZ,
    CODEC_NAMES,
    CODEC_NONE,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    HEADER_SIZE,
    INTERMEDIATE_INDEX_MAGIC,
    LEAF_INDEX_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    BlockHeader,
    Trailer,
    block_checksums,
    decode_file_info,
    decode_varint,
    decode_writable_vint,
    row_of_key,
)
from metadata.storage import Storage

ReadAt = Callable[[int, int], bytes]

MAX_TAGS_KEY = b"hfile.MAX_TAGS_LEN"
KEY_VALUE_VERSION_KEY = b"KEY_VALUE_VERSION"
BLOCK_CACHE_SIZE = 64
CHUNK_BYTES = 32 * 1024 * 1024  # uncompressed block bytes per CellChunk of a columnar scan
_DECOMPRESS_WORKERS = min(4, os.cpu_count() or 1)
INFLATE_GROUP = 16  # data blocks (about 1 MiB) a worker reads and inflates per task
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _decompress_pool() -> ThreadPoolExecutor:
    """Shared threads that read and inflate blocks ahead of a columnar scan (zlib releases the GIL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_DECOMPRESS_WORKERS, thread_name_prefix="hfile-inflate")
        return _pool


def covering_prefixes(prefixes: list[bytes]) -> list[bytes]:
    """Sorted distinct prefixes without those a shorter one covers."""
    kept: list[bytes] = []
    for prefix in sorted(set(prefixes)):
        if not (kept and prefix.startswith(kept[-1])):
            kept.append(prefix)
    return kept


@dataclass(frozen=True)
class IndexEntry:
    first_row: bytes
    offset: int
    on_disk_size: int


class HFileReader:
    def __init__(self, read_at: ReadAt, size: int, path: str, on_close: Callable[[], None] | None = None) -> None:
        self._read_at = read_at
        self._on_close = on_close
        self.size = size
        self.path = path
        self.blocks_read = 0
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._block_cache: OrderedDict[int, tuple[list[bytes], list[bytes]]] = OrderedDict()
        self.trailer = self._read_trailer()
        codec = self.trailer.compression_codec
        if codec not in (CODEC_GZ, CODEC_NONE):
            raise HudiFormatError(path, f"HFile compression codec {CODEC_NAMES.get(codec, codec)} is not supported (GZ and NONE are)")
        self._load_on_open()
        self._data_index: list[IndexEntry] | None = None

    # Opening -----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, path: str = "<memory>") -> HFileReader:
        return cls(lambda offset, length: data[offset : offset + length], len(data), path)

    @classmethod
    def open(cls, storage: Storage, relative: str) -> HFileReader:
        """Random-access reader on a file in a Storage (reads on demand)."""
        handle = storage.open_random_access(relative)
        lock = threading.Lock()

        def read_at(offset: int, length: int) -> bytes:
            with lock:
                return handle.read_at(length, offset)

        try:
            return cls(read_at, handle.size(), storage.full_path(relative), on_close=handle.close)
        except BaseException:
            handle.close()
            raise

    def close(self) -> None:
        """Release the file handle (readers made from bytes hold none)."""
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    def _read(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise HudiFormatError(self.path, f"{what} ({length} bytes) runs past the end of the file ({self.size} bytes)", offset=offset)
        data = self._read_at(offset, length)
        if len(data) != length:
            raise HudiFormatError(self.path, f"short read of {what}", offset=offset)
        return data

    def _read_trailer(self) -> Trailer:
        if self.size < TRAILER_SIZE:
            raise HudiFormatError(self.path, f"file of {self.size} bytes is smaller than an HFile v3 trailer ({TRAILER_SIZE})")
        start = self.size - TRAILER_SIZE
        data = self._read(start, TRAILER_SIZE, "trailer")
        if data[:8] != TRAILER_MAGIC:
            raise HudiFormatError(self.path, f"HFile trailer magic missing (found {data[:8]!r})", offset=start)
        (version,) = struct.unpack(">i", data[-4:])
        major, minor = version & 0x00FFFFFF, (version >> 24) & 0xFF
        if major != 3:
            raise HudiFormatError(self.path, f"HFile major version {major} is not supported (only 3)", offset=self.size - 4)
        try:
            length, pos = decode_varint(data, 8)
            trailer = Trailer.parse_proto(data[pos : pos + length])
        except (ValueError, IndexError, struct.error) as exc:
            raise HudiFormatError(self.path, f"HFile trailer does not decode ({exc})", offset=start) from None
        trailer.major_version, trailer.minor_version = major, minor
        return trailer

    def _block(self, offset: int, expected_magic: tuple[bytes, ...]) -> tuple[BlockHeader, bytes, int]:
        """(header, uncompressed payload, offset after the block)."""
        header_bytes = self._read(offset, HEADER_SIZE, "block header")
        header = BlockHeader.parse(header_bytes)
        if header.magic not in expected_magic:
            raise HudiFormatError(
                self.path, f"expected a {' or '.join(m.decode() for m in expected_magic)} block, found {header.magic!r}", offset=offset
            )
        payload_size = header.on_disk_data_size_with_header - HEADER_SIZE
        if payload_size < 0 or payload_size > header.on_disk_size_without_header:
            raise HudiFormatError(self.path, f"block sizes disagree ({header})", offset=offset)
        raw = self._read(offset + HEADER_SIZE, header.on_disk_size_without_header, f"{header.magic.decode()} block")
        self._verify_checksums(header, header_bytes, raw, offset)
        raw = raw[:payload_size]
        with self._count_lock:
            self.blocks_read += 1
        payload = self._decompress(raw, header, offset)
        return header, payload, offset + HEADER_SIZE + header.on_disk_size_without_header

    def _verify_checksums(self, header: BlockHeader, header_bytes: bytes, raw: bytes, offset: int) -> None:
        if header.checksum_type not in (CHECKSUM_CRC32, CHECKSUM_CRC32C) or header.bytes_per_checksum <= 0:
            return  # checksum type 0: nothing to verify (Hudi 1.1's own writer)
        data_size = header.on_disk_data_size_with_header - HEADER_SIZE
        expected = block_checksums(header_bytes + raw[:data_size], header.bytes_per_checksum, header.checksum_type)
        if raw[data_size : data_size + len(expected)] != expected:
            raise HudiFormatError(self.path, f"{header.magic.decode()} block fails its checksum (damaged file)", offset=offset)

    def _decompress(self, raw: bytes, header: BlockHeader, offset: int) -> bytes:
        if self.trailer.compression_codec == CODEC_NONE:
            payload = raw
        else:
            try:
                payload = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as exc:
                raise HudiFormatError(self.path, f"GZ block does not decompress ({exc})", offset=offset) from None
        if len(payload) != header.uncompressed_size_without_header:
            raise HudiFormatError(
                self.path, f"block decompressed to {len(payload)} bytes, header says {header.uncompressed_size_without_header}", offset=offset
            )
        return payload

    def _load_on_open(self) -> None:
        offset = self.trailer.load_on_open_data_offset
        _, root, offset = self._block(offset, (ROOT_INDEX_MAGIC,))
        self._root_entries = self._parse_root_index(root, self.trailer.data_index_count)
        _, meta, offset = self._block(offset, (ROOT_INDEX_MAGIC,))
        self.meta_index = {e.first_row: e for e in self._parse_root_index(meta, self.trailer.meta_index_count)}
        _, info, _ = self._block(self.trailer.file_info_offset or offset, (FILE_INFO_MAGIC,))
        try:
            self.file_info = decode_file_info(info)
        except ValueError as exc:
            raise HudiFormatError(self.path, f"file info block does not decode ({exc})", offset=self.trailer.file_info_offset) from None
        self.includes_tags = MAX_TAGS_KEY in self.file_info
        version = self.file_info.get(KEY_VALUE_VERSION_KEY)
        self.includes_mvcc = version is None or (len(version) == 4 and struct.unpack(">i", version)[0] >= 1)

    def _parse_root_index(self, payload: bytes, count: int) -> list[IndexEntry]:
        entries = []
        pos = 0
        try:
            for _ in range(count):
                offset, size = struct.unpack_from(">qi", payload, pos)
                pos += 12
                length, pos = decode_writable_vint(payload, pos)
                entries.append(IndexEntry(payload[pos : pos + length], offset, size))
                pos += length
        except struct.error:
            raise HudiFormatError(self.path, f"root index block holds fewer than {count} entries") from None
        return entries

    def _parse_non_root_index(self, payload: bytes, offset: int) -> list[IndexEntry]:
        (count,) = struct.unpack_from(">i", payload, 0)
        secondary = struct.unpack_from(f">{count + 1}i", payload, 4)
        base = 4 + 4 * (count + 1)
        entries = []
        for i in range(count):
            start, end = base + secondary[i], base + secondary[i + 1]
            block_offset, size = struct.unpack_from(">qi", payload, start)
            entries.append(IndexEntry(payload[start + 12 : end], block_offset, size))
        return entries

    # Index -------------------------------------------------------------------------------------
    @property
    def data_index(self) -> list[IndexEntry]:
        """Every data block with its first (possibly shortened) key, in order."""
        with self._lock:
            if self._data_index is None:
                entries = self._root_entries
                for _ in range(self.trailer.num_data_index_levels - 1):
                    children: list[IndexEntry] = []
                    for entry in entries:
                        _, payload, _ = self._block(entry.offset, (INTERMEDIATE_INDEX_MAGIC, LEAF_INDEX_MAGIC))
                        children.extend(self._parse_non_root_index(payload, entry.offset))
                    entries = children
                self._data_index = entries
                self._index_rows = [row_of_key(e.first_row) for e in entries]
            return self._data_index

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
        for _start, row, value in self._cell_positions(payload, offset):
            yield row, value

    def _cell_positions(self, payload: bytes, offset: int) -> Iterator[tuple[int, bytes, bytes]]:
        """(start, row, value) of each cell, walking tags and MVCC versions exactly."""
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
            key = payload[pos : pos + key_length]
            pos += key_length
            value = payload[pos : pos + value_length]
            pos += value_length
            if self.includes_tags:
                (tags_length,) = struct.unpack_from(">h", payload, pos)
                pos += 2 + tags_length
            if self.includes_mvcc:
                _, pos = decode_writable_vint(payload, pos)
            (row_length,) = struct.unpack_from(">h", key, 0)
            yield start, key[2 : 2 + row_length], value

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

    def _start_block(self, row: bytes) -> int:
        self.data_index  # noqa: B018 - loads the index and the row list
        return max(0, bisect_right(self._index_rows, row) - 1)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Cells whose row starts with `prefix`, reading only blocks that can hold them."""
        index = self.data_index
        for i in range(self._start_block(prefix), len(index)):
            rows, values = self._data_block(index[i])
            for j in range(bisect_left(rows, prefix), len(rows)):
                if not rows[j].startswith(prefix):
                    return
                yield rows[j], values[j]

    def scan_prefixes(self, prefixes: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """Cells matching any prefix, in key order; each block is read at most once."""
        for prefix in covering_prefixes(prefixes):
            yield from self.scan_prefix(prefix)

    # Columnar scans ------------------------------------------------------------------------
    def blocks_for(self, prefixes: list[bytes] | None) -> list[tuple[int, list[bytes] | None]]:
        """Data blocks that can hold rows starting with one of the prefixes
        (every block when None), in order, each with the prefixes its rows
        must be checked against; None when every row of it matches: its index
        row and the next block's both start with a prefix, and its rows lie
        between the two."""
        index = self.data_index
        count = len(index)
        if prefixes is None:
            return [(i, None) for i in range(count)]
        rows = self._index_rows
        checks: dict[int, list[bytes] | None] = {}
        for prefix in covering_prefixes(prefixes):
            i = self._start_block(prefix)
            while i < count:
                following = rows[i + 1] if i + 1 < count else None
                if rows[i].startswith(prefix) and following is not None and following.startswith(prefix):
                    checks[i] = None
                else:
                    block_checks = checks.setdefault(i, [])
                    if block_checks is not None:
                        block_checks.append(prefix)
                if following is None or not following.startswith(prefix):
                    break  # later blocks start past every row with the prefix
                i += 1
        return sorted(checks.items())

    def scan_chunks(self, prefixes: list[bytes] | None, chunk_bytes: int = CHUNK_BYTES) -> Iterator[CellChunk]:
        """The cells whose rows start with one of the prefixes (all when None),
        in key order, as CellChunks of about `chunk_bytes` of blocks each.
        Blocks are read and inflated ahead by worker threads."""
        index = self.data_index
        blocks = self.blocks_for(prefixes)
        payloads: list[bytes] = []
        starts: list[np.ndarray] = []
        partial: list[tuple[int, int, list[bytes]]] = []  # cells [from, to) to check against prefixes
        size = cells = 0
        for (i, checks), payload in zip(blocks, self._inflated([index[i].offset for i, _ in blocks])):
            found = self._cell_starts(payload, index[i].offset)
            starts.append(np.asarray(found, dtype=np.int64) + size)
            if checks is not None:
                partial.append((cells, cells + len(found), checks))
            payloads.append(payload)
            size += len(payload)
            cells += len(found)
            if size >= chunk_bytes:
                yield self._chunk(payloads, starts, partial)
                payloads, starts, partial, size, cells = [], [], [], 0, 0
        if payloads:
            yield self._chunk(payloads, starts, partial)

    def _chunk(self, payloads: list[bytes], starts: list[np.ndarray], partial: list[tuple[int, int, list[bytes]]]) -> CellChunk:
        chunk = CellChunk.from_cells(b"".join(payloads), np.concatenate(starts), self.path)
        if not partial:
            return chunk
        keep = np.ones(len(chunk), dtype=bool)
        for first, end, checks in partial:
            part = chunk.take(np.arange(first, end))
            matched = np.zeros(end - first, dtype=bool)
            for prefix in checks:
                matched |= part.rows_with_prefix(prefix)
            keep[first:end] = matched
        return chunk.take(np.flatnonzero(keep))

    def _inflated(self, offsets: list[int]) -> Iterator[bytes]:
        """Payloads of the data blocks at `offsets`, in order; worker threads
        read and inflate groups of blocks ahead (a group per task keeps the
        hand-offs, each waiting for the GIL, few)."""
        if len(offsets) <= INFLATE_GROUP:
            for offset in offsets:
                yield self._block(offset, (DATA_MAGIC,))[1]
            return
        pool = _decompress_pool()
        groups = iter([offsets[i : i + INFLATE_GROUP] for i in range(0, len(offsets), INFLATE_GROUP)])
        ahead: deque[Future[list[bytes]]] = deque()
        try:
            for group in groups:
                ahead.append(pool.submit(self._payloads, group))
                if len(ahead) > _DECOMPRESS_WORKERS:
                    break
            while ahead:
                payloads = ahead.popleft().result()
                following = next(groups, None)
                if following is not None:
                    ahead.append(pool.submit(self._payloads, following))
                yield from payloads
        finally:
            for future in ahead:
                future.cancel()

    def _payloads(self, offsets: list[int]) -> list[bytes]:
        return [self._block(offset, (DATA_MAGIC,))[1] for offset in offsets]

    def _cell_starts(self, payload: bytes, offset: int) -> list[int]:
        """Where the cells of a data block start: the quick walk when cells end
        in a one-byte MVCC vint (or nothing) and no tags, checked; else the exact walk."""
        if not self.includes_tags:
            found = cell_starts(payload, 1 if self.includes_mvcc else 0)
            if found is not None and (not self.includes_mvcc or _single_byte_vints(payload, found)):
                return found
        return [start for start, _row, _value in self._cell_positions(payload, offset)]

    def get(self, row: bytes) -> bytes | None:
        for found, value in self.scan_prefix(row):
            if found == row:
                return value
            if found > row:
                break
        return None


def _single_byte_vints(payload: bytes, starts: list[int]) -> bool:
    """Whether the byte ending each cell is a whole writable vint (-112..127)."""
    if not starts:
        return not payload
    data = np.frombuffer(payload, dtype=np.uint8)
    ends = np.asarray(starts[1:] + [len(payload)], dtype=np.int64) - 1
    last = data[ends]
    return bool(((last < 0x80) | (last >= 0x90)).all())
