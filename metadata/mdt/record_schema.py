"""The HoodieMetadataRecord Avro schema this project writes, and encoding.

Field names, record names and union order follow Hudi 1.1 (table v9) for the
parts this project writes: the files and column/partition stats payloads.
Readers decode with the writer schema stored in each file, so a subset of
Hudi's optional fields is enough.
"""

from __future__ import annotations

import io
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import fastavro

from metadata.mdt.records import (
    TYPE_ALL_PARTITIONS,
    TYPE_COLUMN_STATS,
    TYPE_FILES,
    TYPE_PARTITION_STATS,
    VALUE_TYPE_DATE,
    VALUE_TYPE_DECIMAL,
    VALUE_TYPE_TIMESTAMP_MICROS,
    parse_schema_cached,
)

NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": NS, "fields": [{"name": "value", "type": value_type}]}


WRAPPERS = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
]

METADATA_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "namespace": NS,
    "fields": [
        {"name": "key", "type": "string"},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieMetadataFileInfo",
                        "namespace": NS,
                        "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}],
                    },
                },
            ],
            "default": None,
        },
        {
            "name": "ColumnStatsMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieMetadataColumnStats",
                    "namespace": NS,
                    "fields": [
                        {"name": "fileName", "type": ["null", "string"], "default": None},
                        {"name": "columnName", "type": ["null", "string"], "default": None},
                        {"name": "minValue", "type": ["null", *WRAPPERS], "default": None},
                        {"name": "maxValue", "type": ["null", *[w["namespace"] + "." + w["name"] for w in WRAPPERS]], "default": None},
                        {"name": "valueCount", "type": ["null", "long"], "default": None},
                        {"name": "nullCount", "type": ["null", "long"], "default": None},
                        {"name": "totalSize", "type": ["null", "long"], "default": None},
                        {"name": "totalUncompressedSize", "type": ["null", "long"], "default": None},
                        {"name": "isDeleted", "type": "boolean"},
                        {"name": "isTightBound", "type": "boolean", "default": False},
                        {
                            "name": "valueType",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "HoodieValueTypeInfo",
                                    "namespace": NS,
                                    "fields": [
                                        {"name": "typeOrdinal", "type": "int"},
                                        {"name": "additionalInfo", "type": ["null", "string"], "default": None},
                                    ],
                                },
                            ],
                            "default": None,
                        },
                    ],
                },
            ],
            "default": None,
        },
    ],
}
METADATA_RECORD_SCHEMA_JSON = json.dumps(METADATA_RECORD_SCHEMA, separators=(",", ":"))

# Hudi ValueType ordinals for the primitive wrappers.
_ORDINALS = {"BooleanWrapper": 2, "IntWrapper": 3, "LongWrapper": 4, "FloatWrapper": 5, "DoubleWrapper": 6, "StringWrapper": 7, "BytesWrapper": 8}


def wrap_stat(value: Any) -> tuple[tuple[str, dict[str, Any]] | None, dict[str, Any] | None]:
    """(wrapper, valueType) for a Python value, as Hudi 1.1 writes them."""
    if value is None:
        return None, None
    raw: bool | int | float | str | bytes
    if isinstance(value, bool):
        name, raw, info = "BooleanWrapper", value, None
    elif isinstance(value, int):
        name, raw, info = ("IntWrapper" if -(2**31) <= value < 2**31 else "LongWrapper"), value, None
    elif isinstance(value, float):
        name, raw, info = "DoubleWrapper", value, None
    elif isinstance(value, str):
        name, raw, info = "StringWrapper", value, None
    elif isinstance(value, Decimal):
        exponent = -int(value.as_tuple().exponent)
        unscaled = int(value.scaleb(exponent))
        raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
        digits = max(len(value.as_tuple().digits), exponent)
        return (f"{NS}.BytesWrapper", {"value": raw}), {"typeOrdinal": VALUE_TYPE_DECIMAL, "additionalInfo": f"{max(digits, 1)},{exponent}"}
    elif isinstance(value, datetime):
        micros = int(value.timestamp() * 1_000_000) if value.tzinfo else int((value - datetime(1970, 1, 1)).total_seconds() * 1_000_000)
        return (f"{NS}.LongWrapper", {"value": micros}), {"typeOrdinal": VALUE_TYPE_TIMESTAMP_MICROS, "additionalInfo": None}
    elif isinstance(value, date):
        return (f"{NS}.IntWrapper", {"value": (value - date(1970, 1, 1)).days}), {"typeOrdinal": VALUE_TYPE_DATE, "additionalInfo": None}
    elif isinstance(value, bytes):
        name, raw, info = "BytesWrapper", value, None
    else:
        raise TypeError(f"no column stats wrapper for {type(value).__name__}")
    return (f"{NS}.{name}", {"value": raw}), {"typeOrdinal": _ORDINALS[name], "additionalInfo": info}


def files_record(partition_id: str, files: dict[str, tuple[int, bool]], all_partitions: bool = False) -> dict[str, Any]:
    return {
        "key": partition_id,
        "type": TYPE_ALL_PARTITIONS if all_partitions else TYPE_FILES,
        "filesystemMetadata": {name: {"size": size, "isDeleted": deleted} for name, (size, deleted) in files.items()},
        "ColumnStatsMetadata": None,
    }


def column_stats_record(
    key: str, file_name: str, column: str, min_value: Any, max_value: Any, value_count: int, null_count: int,
    total_size: int = 0, is_deleted: bool = False, tight: bool = False, partition_stats: bool = False,
) -> dict[str, Any]:
    low, value_type = wrap_stat(min_value)
    high, high_type = wrap_stat(max_value)
    return {
        "key": key,
        "type": TYPE_PARTITION_STATS if partition_stats else TYPE_COLUMN_STATS,
        "filesystemMetadata": None,
        "ColumnStatsMetadata": {
            "fileName": file_name,
            "columnName": column,
            "minValue": low,
            "maxValue": high,
            "valueCount": value_count,
            "nullCount": null_count,
            "totalSize": total_size,
            "totalUncompressedSize": total_size,
            "isDeleted": is_deleted,
            "isTightBound": tight,
            "valueType": value_type or high_type,
        },
    }


def encode_record(record: dict[str, Any], schema_json: str = METADATA_RECORD_SCHEMA_JSON, blank_key: bool = True) -> bytes:
    """Avro binary of a record; HFile values carry `key` as "" (the row holds it)."""
    data = dict(record, key="") if blank_key else record
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parse_schema_cached(schema_json), data)
    return out.getvalue()
