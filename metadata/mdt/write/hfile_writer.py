"""HFile v3 writer in the form Hudi 1.1's own writer produces.

Major 3, minor 0, GZ blocks, each followed by CRC32C checksums of every
16 KiB of header and data as HBase writes them (Hudi 1.1 writes checksum type
0 and four zero bytes, which hudi-rs misreads once a block passes 16 KiB),
prevBlockOffset -1, cells with full KeyValue keys and an MVCC byte,
index keys and LASTKEY as `short length + row`, a file info block carrying
the Avro schema. Files with more data blocks than fit one root index chunk
get a two-level index (leaf blocks written after the data blocks).
Hudi also writes a bloom filter meta block; this writer does not (the meta
index is written empty), which readers treat as "no bloom filter".
"""

from __future__ import annotations

import gzip
import io
import struct
import time
from collections.abc import Iterable
from typing import BinaryIO

from metadata.mdt.hfile_format import (
    CHECKSUM_CRC32C,
    CHECKSUM_SIZE,
    CODEC_GZ,
    CODEC_NONE,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    HEADER_SIZE,
    LEAF_INDEX_MAGIC,
    ROOT_INDEX_MAGIC,
    BlockHeader,
    Trailer,
    block_checksums,
    checksum_bytes_per_chunk,
    checksum_chunks,
    encode_cell_key,
    encode_file_info,
    encode_writable_vint,
)

DEFAULT_BLOCK_SIZE = 64 * 1024
MAX_ROOT_ENTRIES = 1024


def _index_key(row: bytes) -> bytes:
    return struct.pack(">h", len(row)) + row


class HFileWriter:
    """Takes sorted (row, value) cells and writes the file block by block to
    `sink` (in memory when none is given): only the block being filled and
    the index stay in memory."""

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE, compress: bool = True, max_root_entries: int = MAX_ROOT_ENTRIES,
                 sink: BinaryIO | None = None) -> None:
        self.block_size = block_size
        self.codec = CODEC_GZ if compress else CODEC_NONE
        self.max_root_entries = max_root_entries
        self._sink: BinaryIO = sink if sink is not None else io.BytesIO()
        self._in_memory = sink is None
        self._offset = 0
        self._block = bytearray()
        self._block_first: bytes | None = None
        self._index: list[tuple[bytes, int, int]] = []  # (first row, offset, on-disk size)
        self._last_row: bytes | None = None
        self._count = 0
        self._key_bytes = 0
        self._value_bytes = 0
        self._uncompressed_total = 0
        self._first_row: bytes | None = None

    def _compress(self, payload: bytes) -> bytes:
        return gzip.compress(payload, compresslevel=6, mtime=0) if self.codec == CODEC_GZ else payload

    def _emit(self, data: bytes) -> None:
        self._sink.write(data)
        self._offset += len(data)

    def _write_block(self, magic: bytes, payload: bytes) -> tuple[int, int]:
        offset = self._offset
        body = self._compress(payload)
        chunk = checksum_bytes_per_chunk(HEADER_SIZE + len(body))
        checksum_size = CHECKSUM_SIZE * checksum_chunks(HEADER_SIZE + len(body), chunk)
        header = BlockHeader(
            magic=magic,
            on_disk_size_without_header=len(body) + checksum_size,
            uncompressed_size_without_header=len(payload),
            prev_block_offset=-1,
            checksum_type=CHECKSUM_CRC32C,
            bytes_per_checksum=chunk,
            on_disk_data_size_with_header=HEADER_SIZE + len(body),
        )
        data_with_header = header.encode() + body
        self._emit(data_with_header + block_checksums(data_with_header, chunk))
        self._uncompressed_total += len(payload)
        return offset, self._offset - offset

    def add(self, row: bytes, value: bytes) -> None:
        if self._last_row is not None and row <= self._last_row:
            raise ValueError(f"HFile rows must be added in strictly increasing order: {row!r} after {self._last_row!r}")
        key = encode_cell_key(row)
        if self._block_first is None:
            self._block_first = row
        self._block += struct.pack(">ii", len(key), len(value)) + key + value + b"\x00"
        self._last_row = row
        if self._first_row is None:
            self._first_row = row
        self._count += 1
        self._key_bytes += len(key)
        self._value_bytes += len(value)
        if len(self._block) >= self.block_size:
            self._flush_data_block()

    def add_all(self, cells: Iterable[tuple[bytes, bytes]]) -> None:
        for row, value in cells:
            self.add(row, value)

    def _flush_data_block(self) -> None:
        if not self._block:
            return
        offset, size = self._write_block(DATA_MAGIC, bytes(self._block))
        self._index.append((self._block_first or b"", offset, size))
        self._block = bytearray()
        self._block_first = None

    @staticmethod
    def _root_payload(entries: list[tuple[bytes, int, int]]) -> bytes:
        out = bytearray()
        for row, offset, size in entries:
            key = _index_key(row)
            out += struct.pack(">qi", offset, size) + encode_writable_vint(len(key)) + key
        return bytes(out)

    @staticmethod
    def _leaf_payload(entries: list[tuple[bytes, int, int]]) -> bytes:
        items = [struct.pack(">qi", offset, size) + _index_key(row) for row, offset, size in entries]
        secondary = [0]
        for item in items:
            secondary.append(secondary[-1] + len(item))
        return struct.pack(f">i{len(secondary)}i", len(items), *secondary) + b"".join(items)

    def finish(self, file_info: dict[bytes, bytes]) -> bytes:
        """Complete an in-memory file and return its bytes."""
        if not self._in_memory:
            raise ValueError("finish() is for in-memory HFiles; use close() with a sink")
        self.close(file_info)
        assert isinstance(self._sink, io.BytesIO)
        return self._sink.getvalue()

    def close(self, file_info: dict[bytes, bytes]) -> int:
        """Write the index, file info and trailer; returns the file's size."""
        self._flush_data_block()
        last_data_offset = self._index[-1][1] if self._index else 0
        levels = 1
        root_entries = self._index
        if len(self._index) > self.max_root_entries:
            levels = 2
            root_entries = []
            for start in range(0, len(self._index), self.max_root_entries):
                chunk = self._index[start : start + self.max_root_entries]
                offset, size = self._write_block(LEAF_INDEX_MAGIC, self._leaf_payload(chunk))
                root_entries.append((chunk[0][0], offset, size))
        load_on_open = self._offset
        root_payload = self._root_payload(root_entries)
        self._write_block(ROOT_INDEX_MAGIC, root_payload)
        self._write_block(ROOT_INDEX_MAGIC, b"")  # meta index: no meta blocks
        file_info_offset = self._offset
        info = dict(file_info)
        if self._last_row is not None:
            info[b"hfile.LASTKEY"] = _index_key(self._last_row)
            info[b"minRecordKey"] = self._first_row or b""
            info[b"maxRecordKey"] = self._last_row
        count = max(self._count, 1)
        info[b"hfile.AVG_KEY_LEN"] = struct.pack(">i", self._key_bytes // count)
        info[b"hfile.AVG_VALUE_LEN"] = struct.pack(">i", self._value_bytes // count)
        info[b"KEY_VALUE_VERSION"] = struct.pack(">i", 1)
        info[b"MAX_MEMSTORE_TS_KEY"] = struct.pack(">q", 0)
        info.setdefault(b"hfile.CREATE_TIME_TS", struct.pack(">q", int(time.time() * 1000)))
        self._write_block(FILE_INFO_MAGIC, encode_file_info(info))
        trailer = Trailer(
            file_info_offset=file_info_offset,
            load_on_open_data_offset=load_on_open,
            uncompressed_data_index_size=len(root_payload),
            total_uncompressed_bytes=self._uncompressed_total,
            data_index_count=len(root_entries),
            meta_index_count=0,
            entry_count=self._count,
            num_data_index_levels=levels,
            first_data_block_offset=0,
            last_data_block_offset=last_data_offset,
            compression_codec=self.codec,
            major_version=3,
            minor_version=0,
        )
        self._emit(trailer.encode())
        return self._offset


def write_hfile(cells: Iterable[tuple[bytes, bytes]], schema_json: str | None = None, block_size: int = DEFAULT_BLOCK_SIZE) -> bytes:
    """Bytes of an HFile holding `cells` (sorted by row) and the Avro schema."""
    writer = HFileWriter(block_size=block_size)
    writer.add_all(cells)
    info = {b"schema": schema_json.encode()} if schema_json else {}
    return writer.finish(info)
