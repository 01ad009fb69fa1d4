"""HFile v3 building blocks shared by the reader and the writer (reference section 8).

Trailer: the last 4096 bytes, magic `TRABLK"$`, a varint-delimited
TrailerProto, zero padding, then an int whose low 24 bits are the major
version (3) and whose high byte is the minor version.
Block header (33 bytes): magic, int onDiskSizeWithoutHeader, int
uncompressedSizeWithoutHeader, long prevBlockOffset, byte checksumType,
int bytesPerChecksum, int onDiskDataSizeWithHeader.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import google_crc32c

from metadata.mdt import native
from metadata.util.varint import decode_varint

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
HEADER_SIZE = 33
DATA_MAGIC = b"DATABLK*"
ROOT_INDEX_MAGIC = b"IDXROOT2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
LEAF_INDEX_MAGIC = b"IDXLEAF2"
META_MAGIC = b"METABLKc"
FILE_INFO_MAGIC = b"FILEINF2"
PBUF_MAGIC = b"PBUF"

CODEC_NAMES = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}
CODEC_GZ = 1
CODEC_NONE = 2

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2
CHECKSUM_SIZE = 4
BYTES_PER_CHECKSUM = 16384

KEY_TYPE_PUT = 4
LATEST_TIMESTAMP = 0x7FFFFFFFFFFFFFFF
HUDI_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

_HEADER = struct.Struct(">8siiqbii")


@dataclass(frozen=True)
class BlockHeader:
    magic: bytes
    on_disk_size_without_header: int
    uncompressed_size_without_header: int
    prev_block_offset: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int

    @classmethod
    def parse(cls, data: bytes | memoryview, offset: int = 0) -> BlockHeader:
        return cls(*_HEADER.unpack_from(data, offset))

    def encode(self) -> bytes:
        return _HEADER.pack(
            self.magic, self.on_disk_size_without_header, self.uncompressed_size_without_header,
            self.prev_block_offset, self.checksum_type, self.bytes_per_checksum, self.on_disk_data_size_with_header,
        )


@dataclass
class Trailer:
    file_info_offset: int = 0
    load_on_open_data_offset: int = 0
    uncompressed_data_index_size: int = 0
    total_uncompressed_bytes: int = 0
    data_index_count: int = 0
    meta_index_count: int = 0
    entry_count: int = 0
    num_data_index_levels: int = 1
    first_data_block_offset: int = 0
    last_data_block_offset: int = 0
    comparator_class_name: str = HUDI_COMPARATOR
    compression_codec: int = CODEC_GZ
    major_version: int = 3
    minor_version: int = 0
    extra: dict[int, object] = field(default_factory=dict)

    _FIELDS = {
        1: "file_info_offset", 2: "load_on_open_data_offset", 3: "uncompressed_data_index_size",
        4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
        8: "num_data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
        11: "comparator_class_name", 12: "compression_codec",
    }

    @classmethod
    def parse_proto(cls, message: bytes) -> Trailer:
        trailer = cls()
        for number, value in iter_proto_fields(message):
            name = cls._FIELDS.get(number)
            if name is None:
                trailer.extra[number] = value
            elif name == "comparator_class_name":
                if not isinstance(value, bytes):
                    raise ValueError(f"trailer field {name} is a number, not text")
                trailer.comparator_class_name = value.decode("utf-8", "replace")
            else:
                if not isinstance(value, int):
                    raise ValueError(f"trailer field {name} is bytes, not a number")
                setattr(trailer, name, value)
        return trailer

    def encode(self) -> bytes:
        message = b""
        for number in sorted(self._FIELDS):
            value = getattr(self, self._FIELDS[number])
            if isinstance(value, str):
                message += encode_proto_bytes(number, value.encode())
            else:
                message += encode_proto_varint(number, value)
        body = TRAILER_MAGIC + encode_varint(len(message)) + message
        version = ((self.minor_version & 0xFF) << 24) | (self.major_version & 0x00FFFFFF)
        return body + b"\x00" * (TRAILER_SIZE - len(body) - 4) + struct.pack(">i", version)


# Block checksums ----------------------------------------------------------------
def checksum_chunks(size: int, bytes_per_checksum: int) -> int:
    return -(-size // bytes_per_checksum)


def checksum_bytes_per_chunk(data_with_header_size: int) -> int:
    """The chunk size to declare for a block of this many bytes (header and data).

    HBase counts one checksum per chunk of header + data; hudi-rs counts one
    per chunk of the whole on-disk block, checksums included. The two agree
    unless the checksums push the block over a chunk boundary; then a slightly
    smaller chunk (each block declares its own) makes them agree.
    """
    chunk = BYTES_PER_CHECKSUM
    while True:
        count = checksum_chunks(data_with_header_size, chunk)
        if checksum_chunks(data_with_header_size + count * CHECKSUM_SIZE, chunk) == count:
            return chunk
        chunk -= 64


def block_checksums(data_with_header: bytes | memoryview, bytes_per_checksum: int, checksum_type: int = CHECKSUM_CRC32C) -> bytes:
    """The checksum of each chunk, as HBase writes them after a block's data."""
    if checksum_type == CHECKSUM_CRC32C and native.cells is not None:
        summed = native.cells.crc32c_chunks(data_with_header, bytes_per_checksum)  # the GIL let go, no copies
        if summed is not None:
            return summed
    digest = google_crc32c.value if checksum_type == CHECKSUM_CRC32C else zlib.crc32
    return b"".join(
        struct.pack(">I", digest(bytes(data_with_header[start : start + bytes_per_checksum])))  # google_crc32c takes bytes only
        for start in range(0, len(data_with_header), bytes_per_checksum)
    )


# Protobuf (just what HFile uses) ------------------------------------------------
def encode_varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_proto_varint(number: int, value: int) -> bytes:
    return encode_varint(number << 3) + encode_varint(value)


def encode_proto_bytes(number: int, value: bytes) -> bytes:
    return encode_varint((number << 3) | 2) + encode_varint(len(value)) + value


def iter_proto_fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: varints and fixed-width
    numbers as int, length-delimited fields as bytes."""
    pos = 0
    value: int | bytes
    while pos < len(message):
        key, pos = decode_varint(message, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = decode_varint(message, pos)
        elif wire == 2:
            length, pos = decode_varint(message, pos)
            value = message[pos : pos + length]
            pos += length
        elif wire == 1:
            value = struct.unpack_from("<q", message, pos)[0]
            pos += 8
        elif wire == 5:
            value = struct.unpack_from("<i", message, pos)[0]
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value


def decode_file_info(payload: bytes) -> dict[bytes, bytes]:
    """`PBUF` + varint-delimited FileInfoProto { repeated BytesBytesPair }."""
    if payload[:4] != PBUF_MAGIC:
        raise ValueError("file info block does not start with PBUF")
    length, pos = decode_varint(payload, 4)
    info: dict[bytes, bytes] = {}
    for number, pair in iter_proto_fields(payload[pos : pos + length]):
        if number != 1:
            continue
        if not isinstance(pair, bytes):
            raise ValueError("a file info entry is a number, not a key/value pair")
        key = value = b""
        for inner, item in iter_proto_fields(pair):
            if not isinstance(item, bytes):
                continue  # BytesBytesPair has only bytes fields
            if inner == 1:
                key = item
            elif inner == 2:
                value = item
        info[key] = value
    return info


def encode_file_info(info: dict[bytes, bytes]) -> bytes:
    message = b"".join(
        encode_proto_bytes(1, encode_proto_bytes(1, k) + encode_proto_bytes(2, v)) for k, v in info.items()
    )
    return PBUF_MAGIC + encode_varint(len(message)) + message


# Hadoop WritableUtils vint (used for index key lengths) ---------------------------
def encode_writable_vint(value: int) -> bytes:
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    out = struct.pack(">b", length)
    count = -(length + 120) if length < -120 else -(length + 112)
    for idx in range(count, 0, -1):
        out += bytes([(value >> ((idx - 1) * 8)) & 0xFF])
    return out


def decode_writable_vint(data: bytes, pos: int) -> tuple[int, int]:
    first = struct.unpack_from(">b", data, pos)[0]
    pos += 1
    if first >= -112:
        return first, pos
    negative = first < -120
    count = (-119 - first) if negative else (-111 - first)
    value = 0
    for _ in range(count - 1):
        value = (value << 8) | data[pos]
        pos += 1
    return (~value if negative else value), pos


# KeyValue keys ---------------------------------------------------------------------
def encode_cell_key(row: bytes) -> bytes:
    """HBase KeyValue key: short row length, row, family length 0, no
    qualifier, timestamp Long.MAX_VALUE, type Put."""
    return struct.pack(">h", len(row)) + row + b"\x00" + struct.pack(">q", LATEST_TIMESTAMP) + bytes([KEY_TYPE_PUT])


def row_of_key(key: bytes) -> bytes:
    """The row bytes of a KeyValue key (index keys may be shortened "fake" keys)."""
    if len(key) < 2:
        return key
    (length,) = struct.unpack_from(">h", key, 0)
    if length < 0 or 2 + length > len(key):
        return key[2:]
    return key[2 : 2 + length]
