"""Column_stats and partition_stats records encoded straight to Avro binary.

The HoodieMetadataRecord layout is fixed (metadata.mdt.record_schema), and a
statistics record sets one branch of it: so the bytes are written here field
by field, the same bytes fastavro's generic writer gives (tested record for
record), several times faster. A record of another shape, or a wrapper whose
encoding has a logical type (DecimalWrapper), returns None: the caller then
uses the generic writer.
"""

from __future__ import annotations

import struct
from typing import Any

from metadata.mdt.record_schema import LEGACY_WRAPPERS, NS, WRAPPERS
from metadata.mdt.records import TYPE_COLUMN_STATS, TYPE_PARTITION_STATS

_TOP_FIELDS = frozenset({"key", "type", "filesystemMetadata", "ColumnStatsMetadata", "BloomFilterMetadata", "recordIndexMetadata",
                         "SecondaryIndexMetadata"})
_NULL = b"\x00"
_DOUBLE = struct.Struct("<d").pack
_FLOAT = struct.Struct("<f").pack


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def _varint(value: int) -> bytes:
    """Avro's zigzag varint of an int or long."""
    n = (value << 1) ^ (value >> 63)
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return _varint(len(data)) + data


def _bytes(value: bytes) -> bytes:
    return _varint(len(value)) + value


_VALUE_ENCODERS: dict[str, Any] = {
    "boolean": lambda v: b"\x01" if v else b"\x00",
    "int": _varint,
    "long": _varint,
    "float": _FLOAT,
    "double": _DOUBLE,
    "bytes": _bytes,
    "string": _string,
}


def _wrapper_table(wrappers: list[dict[str, Any]]) -> dict[str, tuple[bytes, Any]]:
    """Full wrapper name -> (its union branch, the encoder of its value); wrappers with a logical type are left out."""
    table = {}
    for index, wrapper in enumerate(wrappers, start=1):
        value_type = wrapper["fields"][0]["type"]
        if isinstance(value_type, str):  # DecimalWrapper's bytes carry a logical type: the generic writer encodes it
            table[f"{NS}.{wrapper['name']}"] = (_varint(index), _VALUE_ENCODERS[value_type])
    return table


_WRAPPERS = {False: _wrapper_table(WRAPPERS), True: _wrapper_table(LEGACY_WRAPPERS)}


def _optional_string(value: str | None) -> bytes:
    return _NULL if value is None else b"\x02" + _string(value)


def _optional_long(value: int | None) -> bytes:
    return _NULL if value is None else b"\x02" + _varint(value)


def _wrapped(value: Any, wrappers: dict[str, tuple[bytes, Any]]) -> bytes | None:
    if value is None:
        return _NULL
    name, inner = value
    found = wrappers.get(name)
    if found is None or len(inner) != 1 or "value" not in inner:
        return None
    branch, encode = found
    return branch + encode(inner["value"])


def encode_stats_record(record: dict[str, Any], legacy: bool, blank_key: bool = True) -> bytes | None:
    """The Avro binary of a column_stats or partition_stats record (`legacy`: the schema of table
    versions before 9), or None when the record is of another shape than `range_record` makes."""
    kind = record.get("type")
    if kind not in (TYPE_COLUMN_STATS, TYPE_PARTITION_STATS) or not record.keys() <= _TOP_FIELDS:
        return None
    if any(record.get(name) is not None for name in ("filesystemMetadata", "BloomFilterMetadata", "recordIndexMetadata",
                                                      "SecondaryIndexMetadata")):
        return None
    stats = record.get("ColumnStatsMetadata")
    if not isinstance(stats, dict):
        return None
    wrappers = _WRAPPERS[legacy]
    low, high = _wrapped(stats.get("minValue"), wrappers), _wrapped(stats.get("maxValue"), wrappers)
    if low is None or high is None:
        return None
    parts = [_string("" if blank_key else record["key"]), _varint(kind), _NULL, _NULL, b"\x02",
             _optional_string(stats.get("fileName")), _optional_string(stats.get("columnName")), low, high,
             _optional_long(stats.get("valueCount")), _optional_long(stats.get("nullCount")),
             _optional_long(stats.get("totalSize")), _optional_long(stats.get("totalUncompressedSize")),
             b"\x01" if stats["isDeleted"] else b"\x00", b"\x01" if stats.get("isTightBound", False) else b"\x00"]
    if not legacy:
        value_type = stats.get("valueType")
        if value_type is None:
            parts.append(_NULL)
        else:
            parts += [b"\x02", _varint(value_type["typeOrdinal"]), _optional_string(value_type.get("additionalInfo"))]
    elif "valueType" in stats:
        return None
    parts += [_NULL, _NULL]  # recordIndexMetadata, SecondaryIndexMetadata
    return b"".join(parts)


__all__ = ["encode_stats_record"]
