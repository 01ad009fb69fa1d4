"""Hudi log files: blocks of data, deletes and commands (reference section 7).

Block layout, big-endian:
  magic "#HUDI#" | long block size (rest of the block) | int version |
  int block type | header | long content length | content | footer |
  long total length (magic through footer)
Header and footer: int count, then per entry int key, int length, UTF-8.

A truncated or corrupt block is detected from the sizes and the magic and
reported with file and offset; the blocks before it stay readable.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import fastavro

from metadata.errors import HudiFormatError
from metadata.formats.avro_schema import read_avro_record

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
DATA_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3


class BlockType(IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


ROLLBACK_COMMAND = "0"  # HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK

# HoodieDeleteRecordList as Hudi writes it into DELETE blocks (version 3).
DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {"name": "orderingVal", "type": ["null", "int", "long", "float", "double", "bytes", "string", "boolean"], "default": None},
                    ],
                },
            },
        }
    ],
}
_DELETE_SCHEMA = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


@dataclass
class LogBlock:
    block_type: BlockType
    header: dict[int, str] = field(default_factory=dict)
    content: bytes = b""
    footer: dict[int, str] = field(default_factory=dict)
    offset: int = 0  # where the block's magic starts in its file

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback(self) -> bool:
        return self.block_type is BlockType.COMMAND and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND


@dataclass
class LogReadResult:
    blocks: list[LogBlock]
    problems: list[HudiFormatError]


# Writing ---------------------------------------------------------------------
def _encode_map(entries: dict[int, str]) -> bytes:
    out = [struct.pack(">i", len(entries))]
    for key, value in entries.items():
        data = value.encode("utf-8")
        out.append(struct.pack(">ii", int(key), len(data)))
        out.append(data)
    return b"".join(out)


def encode_block(block: LogBlock) -> bytes:
    header = _encode_map(block.header)
    footer = _encode_map(block.footer)
    body = (
        struct.pack(">ii", LOG_FORMAT_VERSION, int(block.block_type))
        + header
        + struct.pack(">q", len(block.content))
        + block.content
        + footer
    )
    block_size = len(body) + 8  # counts the trailing total-length long
    total = len(MAGIC) + 8 + len(body)
    return MAGIC + struct.pack(">q", block_size) + body + struct.pack(">q", total)


def encode_avro_records(schema: dict[str, Any] | Any, records: list[dict[str, Any]]) -> bytes:
    """AVRO_DATA content: int version, int count, then per record int size + Avro binary."""
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    out.write(struct.pack(">ii", DATA_BLOCK_VERSION, len(records)))
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        data = buf.getvalue()
        out.write(struct.pack(">i", len(data)))
        out.write(data)
    return out.getvalue()


def encode_delete_records(keys: list[tuple[str, str]]) -> bytes:
    """DELETE content: int version, int length, Avro binary HoodieDeleteRecordList."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf, _DELETE_SCHEMA, {"deleteRecordList": [{"recordKey": k, "partitionPath": p, "orderingVal": None} for k, p in keys]}
    )
    data = buf.getvalue()
    return struct.pack(">ii", DELETE_BLOCK_VERSION, len(data)) + data


# Reading ---------------------------------------------------------------------
def read_log_blocks(data: bytes, path: str) -> LogReadResult:
    """Parse every block of a log held in memory; stop at the first bad one and say where it is."""
    return scan_log_blocks(lambda offset, length: data[offset : offset + length], len(data), path)


# A block's header (its schema included) is read in a probe of this size,
# grown when a header is larger; contents are read only for wanted blocks.
HEADER_PROBE = 64 * 1024
ReadAt = Callable[[int, int], bytes]


def scan_log_blocks(read_at: ReadAt, size: int, path: str, wanted: Callable[[LogBlock], bool] | None = None) -> LogReadResult:
    """Blocks of a log file read block by block: `wanted` sees each block's
    type and header (no content) and only the blocks it keeps are read
    whole, so a skipped block costs a header probe, not its size in memory.
    Stops at the first bad block and says where it is."""
    blocks: list[LogBlock] = []
    problems: list[HudiFormatError] = []
    pos = 0
    while pos < size:
        if read_at(pos, len(MAGIC)) != MAGIC:
            problems.append(HudiFormatError(path, "log block magic #HUDI# missing; the rest of the file is skipped", offset=pos))
            break
        try:
            end = _block_end(read_at, size, pos, path)
            if wanted is not None and not wanted(_block_head(read_at, pos, end, path)):
                pos = end
                continue
            block = _parse_block_at(read_at(pos, end - pos), pos, path)
        except HudiFormatError as exc:
            problems.append(exc)
            break
        block.offset = pos
        blocks.append(block)
        pos = end
    return LogReadResult(blocks, problems)


def _parse_block_at(data: bytes, offset: int, path: str) -> LogBlock:
    """One whole block read on its own; errors keep the block's offset in the file."""
    try:
        block, _ = _parse_block(data, 0, path)
    except HudiFormatError as exc:
        raise HudiFormatError(path, exc.problem, offset=offset + (exc.offset or 0)) from None
    return block


def _block_end(read_at: ReadAt, size: int, start: int, path: str) -> int:
    prefix = read_at(start, len(MAGIC) + 8)
    if len(prefix) < len(MAGIC) + 8:
        raise HudiFormatError(path, "log block truncated before its size field", offset=start)
    (block_size,) = struct.unpack_from(">q", prefix, len(MAGIC))
    end = start + len(MAGIC) + 8 + block_size
    if block_size < 4 + 4 + 4 + 8 + 4 + 8 or end > size:
        raise HudiFormatError(path, f"log block size {block_size} does not fit the file ({size - start - len(MAGIC) - 8} bytes left)", offset=start)
    return end


def _block_head(read_at: ReadAt, start: int, end: int, path: str) -> LogBlock:
    """Type and header of the block at `start` (content and footer left unread)."""
    probe = HEADER_PROBE
    while True:
        data = read_at(start, min(probe, end - start))
        pos = len(MAGIC) + 8
        block_type = _version_and_type(data, pos, path, start)
        try:
            header, _ = _parse_map(data, pos + 8, len(data), path, start, "header")
        except HudiFormatError:
            if len(data) < end - start:
                probe *= 4  # a header larger than the probe
                continue
            raise
        return LogBlock(block_type, header, b"", {}, start)


def _parse_block(data: bytes, start: int, path: str) -> tuple[LogBlock, int]:
    pos = start + len(MAGIC)

    def need(n: int, what: str) -> None:
        if pos + n > block_end:
            raise HudiFormatError(path, f"log block truncated: {what} runs past the block end ({block_end})", offset=start)

    if start + len(MAGIC) + 8 > len(data):
        raise HudiFormatError(path, "log block truncated before its size field", offset=start)
    (block_size,) = struct.unpack_from(">q", data, pos)
    pos += 8
    block_end = pos + block_size
    if block_size < 4 + 4 + 4 + 8 + 4 + 8 or block_end > len(data):
        raise HudiFormatError(
            path, f"log block size {block_size} does not fit the file ({len(data) - pos} bytes left)", offset=start
        )
    need(8, "version and type")
    block_type = _version_and_type(data, pos, path, start)
    pos += 8
    header, pos = _parse_map(data, pos, block_end, path, start, "header")
    need(8, "content length")
    (content_length,) = struct.unpack_from(">q", data, pos)
    pos += 8
    if content_length < 0:
        raise HudiFormatError(path, f"negative content length {content_length}", offset=start)
    need(content_length, "content")
    content = data[pos : pos + content_length]
    pos += content_length
    footer, pos = _parse_map(data, pos, block_end, path, start, "footer")
    need(8, "total length")
    (total,) = struct.unpack_from(">q", data, pos)
    pos += 8
    if pos != block_end or total != pos - 8 - start:
        raise HudiFormatError(
            path, f"log block sizes disagree (block size {block_size}, total length {total}, parsed {pos - start})", offset=start
        )
    return LogBlock(block_type, header, content, footer, start), pos


def _version_and_type(data: bytes, pos: int, path: str, start: int) -> BlockType:
    version, type_code = struct.unpack_from(">ii", data, pos)
    if version != LOG_FORMAT_VERSION:
        raise HudiFormatError(path, f"unknown log format version {version}", offset=start)
    try:
        return BlockType(type_code)
    except ValueError:
        raise HudiFormatError(path, f"unknown log block type {type_code}", offset=start) from None


def _parse_map(data: bytes, pos: int, end: int, path: str, start: int, what: str) -> tuple[dict[int, str], int]:
    if pos + 4 > end:
        raise HudiFormatError(path, f"log block truncated in its {what}", offset=start)
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if count < 0 or count > 64:
        raise HudiFormatError(path, f"log block {what} claims {count} entries", offset=start)
    entries: dict[int, str] = {}
    for _ in range(count):
        if pos + 8 > end:
            raise HudiFormatError(path, f"log block truncated in its {what}", offset=start)
        key, length = struct.unpack_from(">ii", data, pos)
        pos += 8
        if length < 0 or pos + length > end:
            raise HudiFormatError(path, f"log block {what} entry {key} runs past the block", offset=start)
        entries[key] = data[pos : pos + length].decode("utf-8", errors="replace")
        pos += length
    return entries, pos


def decode_avro_records(block: LogBlock, path: str, reader_schema: Any | None = None) -> Iterator[dict[str, Any]]:
    """Records of an AVRO_DATA block, decoded with the schema in its header."""
    import json

    if block.schema is None:
        raise HudiFormatError(path, "AVRO_DATA block has no SCHEMA header", offset=block.offset)
    writer = fastavro.parse_schema(json.loads(block.schema))
    content = block.content
    version, count = struct.unpack_from(">ii", content, 0)
    pos = 8
    for index in range(count):
        (length,) = struct.unpack_from(">i", content, pos)
        pos += 4
        try:
            yield read_avro_record(content[pos : pos + length], writer, reader_schema)
        except Exception as exc:
            raise HudiFormatError(path, f"record {index} of an AVRO_DATA block does not decode ({exc})", offset=block.offset) from None
        pos += length


def decode_delete_keys(block: LogBlock, path: str) -> list[tuple[str | None, str | None]]:
    """(record key, partition path) pairs of a DELETE block."""
    content = block.content
    if len(content) < 8:
        raise HudiFormatError(path, "DELETE block content is shorter than its version and length", offset=block.offset)
    version, length = struct.unpack_from(">ii", content, 0)
    if version != DELETE_BLOCK_VERSION:
        raise HudiFormatError(path, f"DELETE block version {version} is not supported (only 3)", offset=block.offset)
    try:
        record = read_avro_record(content[8 : 8 + length], _DELETE_SCHEMA)
    except Exception as exc:
        raise HudiFormatError(path, f"DELETE block does not decode ({exc})", offset=block.offset) from None
    return [(r.get("recordKey"), r.get("partitionPath")) for r in record["deleteRecordList"]]
