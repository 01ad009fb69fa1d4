"""The metadata table's records as this project's writer makes them, as
dicts of the record schema (`record_schema`): files, column and partition
statistics with their typed wrappers, bloom filters, record-index and
secondary-index entries."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.keys import bloom_filter_key
from metadata.mdt.record_schema import NS
from metadata.mdt.records import (
    EPOCH,
    TYPE_ALL_PARTITIONS,
    TYPE_BLOOM_FILTER,
    TYPE_COLUMN_STATS,
    TYPE_FILES,
    TYPE_PARTITION_STATS,
    TYPE_RECORD_INDEX,
    TYPE_SECONDARY_INDEX,
    VALUE_TYPE_DATE,
    VALUE_TYPE_DECIMAL,
    VALUE_TYPE_LOCAL_TIMESTAMP_MICROS,
    VALUE_TYPE_LOCAL_TIMESTAMP_MILLIS,
    VALUE_TYPE_TIME_MICROS,
    VALUE_TYPE_TIME_MILLIS,
    VALUE_TYPE_TIMESTAMP_MICROS,
    VALUE_TYPE_TIMESTAMP_MILLIS,
)


def _unscaled_bytes(value: Decimal, scale: int) -> bytes:
    unscaled = int(value.scaleb(scale).to_integral_value())
    return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)  # Java BigInteger.toByteArray


def _epoch_units(value: datetime, per_second: int) -> int:
    moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * per_second + delta.microseconds * per_second // 1_000_000


def wrap_typed(value: Any, dtype: pa.DataType, table_version: int) -> tuple[tuple[str, dict[str, Any]] | None, dict[str, Any] | None]:
    """(wrapper, valueType) of a statistic of a column of Arrow type `dtype`,
    as Hudi of that table version writes it."""
    if value is None:
        return None, None
    legacy = table_version < 9

    def wrapped(name: str, raw: Any, ordinal: int, info: str | None = None) -> tuple[tuple[str, dict[str, Any]], dict[str, Any] | None]:
        return (f"{NS}.{name}", {"value": raw}), (None if legacy else {"typeOrdinal": ordinal, "additionalInfo": info})

    if pa.types.is_boolean(dtype):
        return wrapped("BooleanWrapper", bool(value), 2)
    if pa.types.is_integer(dtype):
        small = dtype.bit_width < 32 or dtype.bit_width == 32 and pa.types.is_signed_integer(dtype)
        return wrapped("IntWrapper", int(value), 3) if small else wrapped("LongWrapper", int(value), 4)
    if pa.types.is_float32(dtype):
        return wrapped("FloatWrapper", float(value), 5)
    if pa.types.is_floating(dtype):
        return wrapped("DoubleWrapper", float(value), 6)
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return wrapped("StringWrapper", str(value), 7)
    if pa.types.is_decimal(dtype):
        if legacy:
            return wrapped("DecimalWrapper", Decimal(value).quantize(Decimal(1).scaleb(-15)), VALUE_TYPE_DECIMAL)
        return wrapped("BytesWrapper", _unscaled_bytes(Decimal(value), dtype.scale), VALUE_TYPE_DECIMAL, f"{dtype.precision},{dtype.scale}")
    if pa.types.is_date32(dtype):
        days = (value - date(1970, 1, 1)).days
        return wrapped("DateWrapper", days, VALUE_TYPE_DATE) if legacy else wrapped("IntWrapper", days, VALUE_TYPE_DATE)
    if pa.types.is_timestamp(dtype):
        if legacy:
            return wrapped("TimestampMicrosWrapper", _epoch_units(value, 1_000_000), VALUE_TYPE_TIMESTAMP_MICROS)
        millis = dtype.unit in ("s", "ms")
        local = dtype.tz is None
        ordinal = (VALUE_TYPE_LOCAL_TIMESTAMP_MILLIS if millis else VALUE_TYPE_LOCAL_TIMESTAMP_MICROS) if local else (
            VALUE_TYPE_TIMESTAMP_MILLIS if millis else VALUE_TYPE_TIMESTAMP_MICROS)
        return wrapped("LongWrapper", _epoch_units(value, 1_000 if millis else 1_000_000), ordinal)
    if pa.types.is_binary(dtype):
        return wrapped("BytesWrapper", bytes(value), 8)
    if pa.types.is_time(dtype):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        if legacy:
            return wrapped("TimeMicrosWrapper", micros, VALUE_TYPE_TIME_MICROS)
        if dtype.unit == "ms":
            return wrapped("IntWrapper", micros // 1000, VALUE_TYPE_TIME_MILLIS)
        return wrapped("LongWrapper", micros, VALUE_TYPE_TIME_MICROS)
    raise TypeError(f"no column stats wrapper for Arrow type {dtype}")


def range_record(key: str, stats: ColumnRange, table_version: int, partition_stats: bool = False, deleted: bool = False) -> dict[str, Any]:
    """A column_stats (or partition_stats) record of one column range."""
    low, low_type = wrap_typed(stats.min_value, stats.dtype, table_version)
    high, high_type = wrap_typed(stats.max_value, stats.dtype, table_version)
    payload: dict[str, Any] = {
        "fileName": stats.file_name,
        "columnName": stats.column,
        "minValue": None if deleted else low,
        "maxValue": None if deleted else high,
        "valueCount": 0 if deleted else stats.value_count,
        "nullCount": 0 if deleted else stats.null_count,
        "totalSize": 0 if deleted else stats.total_size,
        "totalUncompressedSize": 0 if deleted else stats.total_uncompressed_size,
        "isDeleted": deleted,
        "isTightBound": partition_stats,
    }
    if table_version >= 9:
        payload["valueType"] = None if deleted else (low_type or high_type)
    return {
        "key": key,
        "type": TYPE_PARTITION_STATS if partition_stats else TYPE_COLUMN_STATS,
        "filesystemMetadata": None,
        "ColumnStatsMetadata": payload,
    }


def files_record(partition_id: str, files: dict[str, tuple[int, bool]], all_partitions: bool = False) -> dict[str, Any]:
    return {
        "key": partition_id,
        "type": TYPE_ALL_PARTITIONS if all_partitions else TYPE_FILES,
        "filesystemMetadata": {name: {"size": size, "isDeleted": deleted} for name, (size, deleted) in files.items()},
        "ColumnStatsMetadata": None,
    }


def bloom_filter_record(key: str, type_code: str, timestamp: str, serialized: str, deleted: bool = False) -> dict[str, Any]:
    """A bloom_filters record: the file's filter as Hudi stores it, the UTF-8
    of its serialized (Base64) text; a removed file's record is empty and deleted."""
    return {
        "key": key,
        "type": TYPE_BLOOM_FILTER,
        "filesystemMetadata": None,
        "BloomFilterMetadata": {"type": "" if deleted else type_code, "timestamp": timestamp,
                                "bloomFilter": b"" if deleted else serialized.encode("utf-8"), "isDeleted": deleted},
        "ColumnStatsMetadata": None,
    }


def removed_bloom_filter_records(files: Iterable[tuple[str, str]], timestamp: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, deleted record) of removed files' bloom filters (Hudi writes them for cleans and rollbacks)."""
    for partition, name in files:
        key = bloom_filter_key(partition, name)
        yield key, bloom_filter_record(key, "", timestamp, "", deleted=True)


def secondary_index_record(key: str, deleted: bool = False) -> dict[str, Any]:
    """A secondary index record: `<value>$<record key>` holds (or, deleted, no longer holds)."""
    return {"key": key, "type": TYPE_SECONDARY_INDEX, "filesystemMetadata": None, "ColumnStatsMetadata": None,
            "SecondaryIndexMetadata": {"isDeleted": deleted}}


_UUID_FILE_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)")


def record_index_record(key: str, partition: str, file_id: str, instant_millis: int | None) -> dict[str, Any]:
    """A record_index record: where one record key lives. A `<uuid>-<n>` file
    id is stored as two longs and an index (fileIdEncoding 0), any other
    file id as text (encoding 1), as Hudi's HoodieMetadataPayload does."""
    match = _UUID_FILE_ID.fullmatch(file_id)
    info: dict[str, Any] = {"partitionName": partition, "instantTime": instant_millis, "position": None}
    if match:
        bits = uuid.UUID(match.group(1)).int
        info.update(fileIdHighBits=_signed64(bits >> 64), fileIdLowBits=_signed64(bits & (2**64 - 1)),
                    fileIndex=int(match.group(2)), fileId="", fileIdEncoding=0)
    else:
        info.update(fileIdHighBits=None, fileIdLowBits=None, fileIndex=None, fileId=file_id, fileIdEncoding=1)
    return {"key": key, "type": TYPE_RECORD_INDEX, "filesystemMetadata": None, "ColumnStatsMetadata": None,
            "recordIndexMetadata": info}


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def stat_type_of(*values: Any) -> pa.DataType:
    """The Arrow type statistics of these Python values are written as."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.null()
    first = present[0]
    if isinstance(first, bool):
        return pa.bool_()
    if isinstance(first, int):
        return pa.int32() if all(-(2**31) <= v < 2**31 for v in present) else pa.int64()
    if isinstance(first, float):
        return pa.float64()
    if isinstance(first, str):
        return pa.string()
    if isinstance(first, Decimal):
        shapes = [v.as_tuple() for v in present]
        scale = max(-int(t.exponent) for t in shapes)
        integer_digits = max(max(0, len(t.digits) + int(t.exponent)) for t in shapes)
        precision = max(1, scale + integer_digits)
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if isinstance(first, datetime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(first, date):
        return pa.date32()
    if isinstance(first, bytes):
        return pa.binary()
    raise TypeError(f"no column stats wrapper for {type(first).__name__}")


def column_stats_record(key: str, file_name: str, column: str, min_value: Any, max_value: Any, value_count: int,
                        null_count: int, total_size: int = 0) -> dict[str, Any]:
    """A v9 column_stats record of plain Python values (tests, benches)."""
    dtype = stat_type_of(min_value, max_value)
    stats = ColumnRange(file_name, column, dtype, min_value, max_value, null_count, value_count, total_size, total_size)
    return range_record(key, stats, 9)
