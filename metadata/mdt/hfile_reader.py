"""HFile v3 reader (the metadata table's base file format).

Reads the trailer and the load-on-open section once, then fetches only the
data blocks a key or key prefix can be in: the data index is binary searched
on row bytes (unsigned), as Hudi's HoodieHBaseKVComparator orders them.
"""

from __future__ import annotations

import gzip
import struct
import threading
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from metadata.errors import HudiFormatError
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
        pos = 0
        end = len(payload)
        while pos < end:
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
            yield key[2 : 2 + row_length], value

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
        kept: list[bytes] = []
        for prefix in sorted(set(prefixes)):
            if not (kept and prefix.startswith(kept[-1])):  # covered by a shorter prefix
                kept.append(prefix)
        for prefix in kept:
            yield from self.scan_prefix(prefix)

    def get(self, row: bytes) -> bytes | None:
        for found, value in self.scan_prefix(row):
            if found == row:
                return value
            if found > row:
                break
        return None
