"""Decoding what an instant file holds: JSON (layout 1, old layout 2) or Avro.

Completed commit-like instants of table v6 are JSON; layout 2 writes Avro
container files (schema inside). Clean, rollback, restore, savepoint and
requested plans are Avro on every version. Empty files are common
(`.requested` of a commit) and decode to an empty dict.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro

from metadata.errors import HudiFormatError

AVRO_MAGIC = b"Obj\x01"


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
        if not isinstance(value, dict):
            raise HudiFormatError(path, "instant JSON is not an object")
        return value
    raise HudiFormatError(path, f"neither JSON nor an Avro container file (starts with {data[:8]!r})", offset=0)


def _decode_avro(path: str, data: bytes) -> dict[str, Any]:
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
