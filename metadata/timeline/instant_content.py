"""Decoding what an instant file holds: JSON (layout 1, old layout 2) or Avro.

Completed commit-like instants of table v6 are JSON; layout 2 writes Avro
container files (schema inside). Clean, rollback, restore, savepoint and
requested plans are Avro on every version. Empty files are common
(`.requested` of a commit) and decode to an empty dict.
"""

from __future__ import annotations

import io
import json
import os
import zlib
from typing import Any

import fastavro

from metadata.errors import HudiFormatError
from metadata.util.varint import decode_zigzag_long

AVRO_MAGIC = b"Obj\x01"
# What one instant file may take, on disk and inflated: Hudi's largest commits are tens of MB; a hostile one
# is refused rather than read into memory whole. HUDI_BRIDGE_MAX_INSTANT_BYTES raises it.
MAX_INSTANT_BYTES = int(os.environ.get("HUDI_BRIDGE_MAX_INSTANT_BYTES", str(256 * 1024 * 1024)))


def decode_instant_content(path: str, data: bytes) -> dict[str, Any]:
    stripped = data.lstrip()
    if not stripped:
        return {}
    if data.startswith(AVRO_MAGIC):
        return _decode_avro(path, data)
    if stripped[:1] == b"{":
        try:
            value = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise HudiFormatError(path, f"instant file is not UTF-8 JSON ({exc.reason})", offset=exc.start) from None
        except json.JSONDecodeError as exc:
            raise HudiFormatError(
                path, f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", offset=exc.pos
            ) from None
        except RecursionError:
            raise HudiFormatError(path, "JSON nested deeper than any commit (a hostile or damaged file)") from None
        if not isinstance(value, dict):
            raise HudiFormatError(path, "instant JSON is not an object")
        return value
    raise HudiFormatError(path, f"neither JSON nor an Avro container file (starts with {data[:8]!r})", offset=0)


def _decode_avro(path: str, data: bytes) -> dict[str, Any]:
    _check_inflated_size(path, data, MAX_INSTANT_BYTES)
    try:
        reader = fastavro.reader(io.BytesIO(data))
        records = list(reader)
    except (EOFError, ValueError, IndexError, TypeError, StopIteration) as exc:
        raise HudiFormatError(path, f"truncated or corrupt Avro instant file ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # fastavro raises its own error types too
        raise HudiFormatError(path, f"unreadable Avro instant file ({type(exc).__name__}: {exc})") from None
    if not records:
        return {}
    record = records[0]
    if not isinstance(record, dict):
        raise HudiFormatError(path, "Avro instant file does not hold a record")
    return record


def encode_avro_instant(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """Write one record as an Avro container file, as Hudi's timeline does."""
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    return out.getvalue()


def _check_inflated_size(path: str, data: bytes, limit: int) -> None:
    """Refuse an Avro container whose deflate blocks inflate past `limit`
    bytes, before fastavro inflates them whole (a few MB of deflate can
    hold gigabytes). Blocks are inflated with a cap, one at a time."""
    try:
        pos, codec = 4, b"null"
        while True:  # the header's metadata map: blocks of (key, value) pairs, a 0 count ends it
            count, pos = decode_zigzag_long(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = decode_zigzag_long(data, pos)
            for _ in range(count):
                length, pos = decode_zigzag_long(data, pos)
                key = data[pos:pos + length]
                pos += length
                length, pos = decode_zigzag_long(data, pos)
                if key == b"avro.codec":
                    codec = data[pos:pos + length]
                pos += length
        if codec != b"deflate":
            return
        pos += 16  # the sync marker
        total = 0
        while pos < len(data):
            _, pos = decode_zigzag_long(data, pos)
            size, pos = decode_zigzag_long(data, pos)
            inflater = zlib.decompressobj(-15)
            total += len(inflater.decompress(data[pos:pos + size], limit - total + 1))
            if total > limit:
                raise HudiFormatError(path, f"Avro instant file inflates past {limit} bytes (HUDI_BRIDGE_MAX_INSTANT_BYTES); not read")
            pos += size + 16
    except (ValueError, zlib.error):
        return  # damaged: fastavro's read names it


MAX_DOCUMENT_DEPTH = 200  # a Hudi schema or commit nests a few levels per nested column; recursive readers stop near 1,000


def nesting_depth(value: Any) -> int:
    """How deep lists and dicts nest in a decoded document (iteratively: it is checked before recursive code sees it)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth)
            if depth <= MAX_DOCUMENT_DEPTH:
                stack.extend((child, depth + 1) for child in node if isinstance(child, (dict, list)))
    return deepest
