"""Record-level and secondary indexes of the metadata table (Hudi 1.x).

- `record_index`: key = record key; the record's `recordIndexMetadata` names
  the partition and the file group (a UUID from two longs plus a file index
  when `fileIdEncoding` is 0, the file id as written when it is 1), as
  Hudi's `HoodieTableMetadataUtil.getLocationFromRecordIndexInfo` reads it.
- `secondary_index_<name>`: key = escaped secondary value `$` escaped record
  key (`SecondaryIndexKeyUtils`: `\\`, `$` and NUL escaped with `\\`); a record
  with `isDeleted` is a value the record no longer has. The value is the
  column's Avro form as text (a date is its day number).
Index definitions (`hoodie.table.index.defs.path`) say which column a
secondary index covers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from typing import Any

import pyarrow as pa

from metadata.errors import HudiFormatError
from metadata.mdt.columnar import decode_spans
from metadata.mdt.decoded import Decoded, Unsupported
from metadata.mdt.file_groups import SECONDARY_INDEX_PREFIX, MdtPartition, SecondaryIndexPartition, secondary_key_separator
from metadata.mdt.index_defs import INDEX_DEFS_KEY, index_definitions
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.records import EPOCH_DATE, decode_record, parse_schema_cached
from metadata.util import arrow_values

MISSING_FILE_INDEX = -1
_ESCAPED = ("\\", "$", "\0")


def index_text(value: Any, days: bool) -> str | None:
    """A value as an index key holds it: record keys and secondary values are
    the column's value as text (a date as its day number, a boolean in lower
    case, in a secondary index); None where that text is not known exactly."""
    if isinstance(value, bool):
        return None if not days else str(value).lower()
    if isinstance(value, (int, str)):
        return str(value)
    if days and isinstance(value, date) and not isinstance(value, datetime):
        return str((value - EPOCH_DATE).days)
    return None


def escape_secondary_key(value: str) -> str:
    return "".join("\\" + c if c in _ESCAPED else c for c in value)


def _unescape(text: str) -> str:
    out, escaped = [], False
    for c in text:
        if escaped or c != "\\":
            out.append(c)
            escaped = False
        else:
            escaped = True
    return "".join(out)


def _record_key_of(secondary_index_key: str) -> str:
    return split_secondary_key(secondary_index_key)[1]


def split_secondary_key(secondary_index_key: str) -> tuple[str | None, str]:
    """(value text, record key) of a secondary index key; None: a null value (a bare NUL)."""
    at = secondary_key_separator(secondary_index_key)
    value = secondary_index_key[:at]
    return None if value == "\0" else _unescape(value), _unescape(secondary_index_key[at + 1 :])


def file_group_of(info: dict[str, Any], where: str) -> tuple[str, str]:
    """(partition, file id) of a record_index entry."""
    partition = info.get("partitionName")
    if not isinstance(partition, str):
        raise HudiFormatError(where, "record_index entry has no partitionName")
    if info.get("fileIdEncoding", 0) == 1:
        file_id = info.get("fileId")
        if not isinstance(file_id, str) or not file_id:
            raise HudiFormatError(where, "record_index entry with fileIdEncoding 1 has no fileId")
        return partition, file_id
    high, low, index = info.get("fileIdHighBits"), info.get("fileIdLowBits"), info.get("fileIndex", MISSING_FILE_INDEX)
    if not isinstance(high, int) or not isinstance(low, int):
        raise HudiFormatError(where, "record_index entry has no fileIdHighBits/fileIdLowBits")
    file_id = str(uuid.UUID(int=((high & (2**64 - 1)) << 64) | (low & (2**64 - 1))))
    return partition, file_id if index == MISSING_FILE_INDEX else f"{file_id}-{index}"


def record_locations(mdt: MetadataTable, keys: list[str]) -> dict[str, tuple[str, str]]:
    """Record key -> (partition, file id) for the keys the record index holds.
    Base-file cells no log block changed are decoded a field at a time for
    every record together (`columnar`); what the logs changed is merged record by record."""
    raw, merged = mdt.reader.read_split(MdtPartition.RECORD_INDEX, KeyQuery(keys=keys))
    where = f"{mdt.reader.mdt.storage.uri}/{MdtPartition.RECORD_INDEX}"
    found = {}
    for cells in raw:
        parsed = parse_schema_cached(cells.schema_json)
        for chunk in cells.chunks():
            try:
                found.update(_locations_of(chunk.key_list(), decode_spans(chunk.data, chunk.value_start, chunk.value_length, parsed)))
            except Unsupported:
                merged.update({key: decode_record(key, value, cells.schema_json, cells.where)
                               for key, value in zip(chunk.key_list(), chunk.value_list())})
    for key, record in merged.items():
        info = record.raw.get("recordIndexMetadata")
        if isinstance(info, dict):
            found[key] = file_group_of(info, f"{where} (key {key!r})")
    return found


_INFO = "recordIndexMetadata|HoodieRecordIndexInfo."


def _locations_of(keys: list[str], decoded: Decoded) -> dict[str, tuple[str, str]]:
    """(partition, file id) of decoded record_index records, as `file_group_of` reads one."""
    if f"{_INFO}partitionName|string" not in decoded.spans:
        if any(p.startswith(_INFO) for p in decoded.present):
            raise Unsupported("record_index entries without a partition name")  # the reference decoder says where
        return {}
    partitions = decoded.strings(f"{_INFO}partitionName|string")
    encodings = _column(decoded, f"{_INFO}fileIdEncoding")
    file_ids = decoded.strings(f"{_INFO}fileId|string") if f"{_INFO}fileId|string" in decoded.spans else [None] * decoded.count
    high, low = _column(decoded, f"{_INFO}fileIdHighBits|long"), _column(decoded, f"{_INFO}fileIdLowBits|long")
    index = _column(decoded, f"{_INFO}fileIndex|int")
    found = {}
    groups: dict[tuple[Any, ...], tuple[str, str]] = {}  # a file group's keys share one location: built once
    for i, key in enumerate(keys):
        partition = partitions[i]
        if partition is None:
            continue
        file_id = file_ids[i]
        if encodings[i] == 1 and file_id:  # the file id as written: nothing to rebuild
            found[key] = (partition, file_id)
            continue
        identity = (partition, encodings[i], file_id, high[i], low[i], index[i])
        location = groups.get(identity)
        if location is None:
            info = {"partitionName": partition, "fileIdEncoding": encodings[i] or 0, "fileId": file_id, "fileIdHighBits": high[i],
                    "fileIdLowBits": low[i], "fileIndex": MISSING_FILE_INDEX if index[i] is None else index[i]}
            location = groups[identity] = file_group_of(info, f"record_index (key {key!r})")
        found[key] = location
    return found


def _column(decoded: Decoded, path: str) -> list[int | None]:
    if path not in decoded.ints:
        return [None] * decoded.count
    return decoded.scatter(path, arrow_values.array(decoded.ints[path], pa.int64())).to_pylist()


def record_keys_with_values(mdt: MetadataTable, index: SecondaryIndexPartition, values: list[str]) -> set[str]:
    """Record keys whose indexed column holds one of `values` (secondary-key text)."""
    prefixes = [escape_secondary_key(v) + "$" for v in values]
    records = mdt.reader.read(index.value, KeyQuery(prefixes=prefixes))
    keys = set()
    for key, record in records.items():
        meta = record.raw.get("SecondaryIndexMetadata")
        if isinstance(meta, dict) and meta.get("isDeleted"):
            continue
        keys.add(_record_key_of(key))
    return keys


def record_index_is_global(mdt: MetadataTable) -> bool:
    """Whether the record index is global (one record per key); Hudi 1.1's
    partitioned one keeps a key once per data partition (`isPartitioned`)."""
    return not is_partitioned_record_index(index_definitions(mdt.table.storage, mdt.table.config.raw))


def is_partitioned_record_index(definitions: Mapping[str, Mapping[str, Any]]) -> bool:
    definition = definitions.get(MdtPartition.RECORD_INDEX, {})
    return str((definition.get("indexOptions") or {}).get("isPartitioned", "false")).lower() == "true"


def record_locations_anywhere(mdt: MetadataTable, keys: list[str]) -> set[tuple[str, str]]:
    """Every (partition, file id) the record index names for these keys, in any file group."""
    return {location for _, location in record_index_entries(mdt, keys)}


def record_index_entries(mdt: MetadataTable, keys: list[str]) -> Iterator[tuple[str, tuple[str, str]]]:
    """(key, (partition, file id)) of every entry of these keys in any file
    group. A partitioned record index keeps a key once per data partition,
    each in that partition's own file groups (named by it, so they are not
    routed here: every group is read), so records of one key are not
    merged across groups as the global index's are."""
    where = f"{mdt.reader.mdt.storage.uri}/{MdtPartition.RECORD_INDEX}"
    for records in mdt.reader.read_each_slice(MdtPartition.RECORD_INDEX, KeyQuery(keys=keys)):
        for key, record in records.items():
            info = record.raw.get("recordIndexMetadata")
            if isinstance(info, dict):
                yield key, file_group_of(info, f"{where} (key {key!r})")


def secondary_indexes(mdt: MetadataTable) -> list[SecondaryIndexPartition]:
    """Built secondary indexes on one column with the identity function."""
    built = set(mdt.table.config.metadata_partitions)
    return [index for index in defined_secondary_indexes(index_definitions(mdt.table.storage, mdt.table.config.raw)) if index.value in built]


def defined_secondary_indexes(definitions: Mapping[str, Mapping[str, Any]]) -> list[SecondaryIndexPartition]:
    """Defined secondary indexes on one column with the identity function."""
    found = []
    for name, definition in sorted(definitions.items()):
        fields = definition.get("sourceFields") or []
        if name.startswith(SECONDARY_INDEX_PREFIX) and len(fields) == 1 and definition.get("indexFunction", "identity") in ("identity", ""):
            found.append(SecondaryIndexPartition(name, fields[0]))
    return found

__all__ = ["INDEX_DEFS_KEY", "index_definitions"]  # defined in metadata.mdt.index_defs, read here too
