"""HoodieMetadataRecord: decoding, typed statistics values and merging.

Values are Avro binary written with the schema the file carries (HFile file
info `schema`, log block header SCHEMA); v8 and v9 schemas differ, so each
file is decoded with its own. HFile values store `key` as "" and the row
holds it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import fastavro

from metadata.errors import HudiFormatError
from metadata.formats.avro_schema import read_avro_record

TYPE_ALL_PARTITIONS = 1
TYPE_FILES = 2
TYPE_COLUMN_STATS = 3
TYPE_BLOOM_FILTER = 4
TYPE_RECORD_INDEX = 5
TYPE_PARTITION_STATS = 6
TYPE_SECONDARY_INDEX = 7

ALL_PARTITIONS_KEY = "__all_partitions__"

# Hudi's ValueType ordinals (v9 column stats carry them in `valueType`).
VALUE_TYPE_DECIMAL = 10
VALUE_TYPE_DATE = 12
VALUE_TYPE_TIME_MILLIS = 13
VALUE_TYPE_TIME_MICROS = 14
VALUE_TYPE_TIMESTAMP_MILLIS = 15
VALUE_TYPE_TIMESTAMP_MICROS = 16
VALUE_TYPE_LOCAL_TIMESTAMP_MILLIS = 18
VALUE_TYPE_LOCAL_TIMESTAMP_MICROS = 19

# valueType ordinals whose values are not taken as stored (stat_value converts them)
LOGICAL_VALUE_TYPES = frozenset({VALUE_TYPE_DECIMAL, VALUE_TYPE_DATE, VALUE_TYPE_TIME_MILLIS, VALUE_TYPE_TIME_MICROS,
                                 VALUE_TYPE_TIMESTAMP_MILLIS, VALUE_TYPE_TIMESTAMP_MICROS,
                                 VALUE_TYPE_LOCAL_TIMESTAMP_MILLIS, VALUE_TYPE_LOCAL_TIMESTAMP_MICROS})

EPOCH_DATE = date(1970, 1, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_schema_cache: dict[str, Any] = {}
_schema_lock = threading.Lock()


def parse_schema_cached(schema_json: str) -> Any:
    with _schema_lock:
        parsed = _schema_cache.get(schema_json)
        if parsed is None:
            parsed = fastavro.parse_schema(json.loads(schema_json))
            _schema_cache[schema_json] = parsed
        return parsed


@dataclass(frozen=True)
class FileEntry:
    size: int
    is_deleted: bool


@dataclass(frozen=True)
class ColumnStats:
    file_name: str
    column_name: str
    min_value: Any
    max_value: Any
    value_count: int | None
    null_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_deleted: bool
    is_tight_bound: bool


@dataclass(frozen=True)
class MetadataRecord:
    key: str
    type: int
    files: dict[str, FileEntry] | None = None
    column_stats: ColumnStats | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def decode_record(key: str, value: bytes, schema_json: str, where: str) -> MetadataRecord:
    try:
        data = read_avro_record(value, parse_schema_cached(schema_json), return_record_name=True, return_record_name_override=True)
    except Exception as exc:
        raise HudiFormatError(where, f"metadata record {key!r} does not decode with the file's schema ({exc})") from None
    data["key"] = key
    return record_from_dict(data, where)


def live_sizes(key: str, value: bytes, schema_json: str, where: str) -> dict[str, int]:
    """Name -> size of the live files (or partitions) of one files record, as
    `live_files(decode_record(...))` gives them, without a record object per entry."""
    try:
        data = read_avro_record(value, parse_schema_cached(schema_json))
    except Exception as exc:
        raise HudiFormatError(where, f"metadata record {key!r} does not decode with the file's schema ({exc})") from None
    if data.get("type") not in (TYPE_ALL_PARTITIONS, TYPE_FILES):
        return {}
    return {name: int(entry.get("size") or 0) for name, entry in (data.get("filesystemMetadata") or {}).items() if not entry.get("isDeleted")}


def record_from_dict(data: dict[str, Any], where: str) -> MetadataRecord:
    key = data.get("key") or ""
    record_type = data.get("type")
    if not isinstance(record_type, int):
        raise HudiFormatError(where, f"metadata record {key!r} has no type")
    files = None
    stats = None
    if record_type in (TYPE_ALL_PARTITIONS, TYPE_FILES):
        files = {
            name: FileEntry(int(entry.get("size") or 0), bool(entry.get("isDeleted")))
            for name, entry in (data.get("filesystemMetadata") or {}).items()
        }
    elif record_type in (TYPE_COLUMN_STATS, TYPE_PARTITION_STATS):
        meta = data.get("ColumnStatsMetadata")
        if meta is None:
            raise HudiFormatError(where, f"column stats record {key!r} has no ColumnStatsMetadata")
        value_type = meta.get("valueType")
        stats = ColumnStats(
            file_name=meta.get("fileName") or "",
            column_name=meta.get("columnName") or "",
            min_value=stat_value(meta.get("minValue"), value_type),
            max_value=stat_value(meta.get("maxValue"), value_type),
            value_count=meta.get("valueCount"),
            null_count=meta.get("nullCount"),
            total_size=meta.get("totalSize"),
            total_uncompressed_size=meta.get("totalUncompressedSize"),
            is_deleted=bool(meta.get("isDeleted")),
            is_tight_bound=bool(meta.get("isTightBound")),
        )
    return MetadataRecord(key, record_type, files, stats, data)


def stat_value(wrapped: Any, value_type: dict[str, Any] | None) -> Any:
    """The Python value of a min/max wrapper (`(wrapper name, {value})`)."""
    if wrapped is None:
        return None
    if isinstance(wrapped, tuple):
        name, record = wrapped
    else:
        name, record = "", wrapped
    value = record.get("value") if isinstance(record, dict) else record
    short = name.rsplit(".", 1)[-1]
    ordinal = value_type.get("typeOrdinal") if value_type else None
    info = value_type.get("additionalInfo") if value_type else None
    if value is None:
        return None
    if ordinal == VALUE_TYPE_DECIMAL or short == "DecimalWrapper":
        if isinstance(value, Decimal):
            return value
        scale = int(str(info).split(",")[1]) if info else 15  # v8 DecimalWrapper is decimal(30,15)
        return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)
    if ordinal == VALUE_TYPE_DATE or short in ("DateWrapper", "LocalDateWrapper"):
        return value if isinstance(value, date) else EPOCH_DATE + timedelta(days=int(value))
    if ordinal in (VALUE_TYPE_TIMESTAMP_MICROS, VALUE_TYPE_LOCAL_TIMESTAMP_MICROS) or short == "TimestampMicrosWrapper":
        return value if isinstance(value, datetime) else EPOCH + timedelta(microseconds=int(value))
    if ordinal in (VALUE_TYPE_TIMESTAMP_MILLIS, VALUE_TYPE_LOCAL_TIMESTAMP_MILLIS):
        return value if isinstance(value, datetime) else EPOCH + timedelta(milliseconds=int(value))
    if ordinal == VALUE_TYPE_TIME_MICROS or short == "TimeMicrosWrapper":
        return value if isinstance(value, time) else (datetime.min + timedelta(microseconds=int(value))).time()
    if ordinal == VALUE_TYPE_TIME_MILLIS:
        return value if isinstance(value, time) else (datetime.min + timedelta(milliseconds=int(value))).time()
    return value


# Merging ---------------------------------------------------------------------
def merge_records(older: MetadataRecord | None, newer: MetadataRecord) -> MetadataRecord:
    """Combine two versions of one key, oldest first (reference section 5)."""
    if older is None:
        return newer
    if newer.type in (TYPE_ALL_PARTITIONS, TYPE_FILES) and older.files is not None and newer.files is not None:
        merged = dict(older.files)
        for name, entry in newer.files.items():
            if entry.is_deleted:
                merged.pop(name, None)
            elif name in merged:
                merged[name] = FileEntry(max(merged[name].size, entry.size), False)
            else:
                merged[name] = entry
        return replace(newer, files=merged)
    if newer.type in (TYPE_COLUMN_STATS, TYPE_PARTITION_STATS) and older.column_stats and newer.column_stats:
        a, b = older.column_stats, newer.column_stats
        if b.is_deleted or b.is_tight_bound or a.is_deleted:
            return newer
        return replace(
            newer,
            column_stats=replace(
                b,
                min_value=_pick(a.min_value, b.min_value, min),
                max_value=_pick(a.max_value, b.max_value, max),
                value_count=_sum(a.value_count, b.value_count),
                null_count=_sum(a.null_count, b.null_count),
                total_size=_sum(a.total_size, b.total_size),
                total_uncompressed_size=_sum(a.total_uncompressed_size, b.total_uncompressed_size),
            ),
        )
    return newer


def _pick(a: Any, b: Any, choose: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    try:
        return choose(a, b)
    except TypeError:
        return b


def _sum(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def live_files(record: MetadataRecord | None) -> dict[str, int]:
    """File name -> size of a files record, tombstones left out."""
    if record is None or record.files is None:
        return {}
    return {name: entry.size for name, entry in record.files.items() if not entry.is_deleted}
