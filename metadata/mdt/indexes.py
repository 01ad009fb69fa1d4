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

import json
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from metadata.errors import HudiFormatError, StoredFileNotFound
from metadata.mdt.file_groups import SECONDARY_INDEX_PREFIX, MdtPartition, SecondaryIndexPartition, secondary_key_separator
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.reader import KeyQuery
from metadata.mdt.records import EPOCH_DATE
from metadata.storage import Storage

INDEX_DEFS_KEY = "hoodie.table.index.defs.path"
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
    return _unescape(secondary_index_key[secondary_key_separator(secondary_index_key) + 1 :])


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
    """Record key -> (partition, file id) for the keys the record index holds."""
    records = mdt.reader.read(MdtPartition.RECORD_INDEX, KeyQuery(keys=keys))
    where = f"{mdt.reader.mdt.storage.uri}/{MdtPartition.RECORD_INDEX}"
    found = {}
    for key, record in records.items():
        info = record.raw.get("recordIndexMetadata")
        if isinstance(info, dict):
            found[key] = file_group_of(info, f"{where} (key {key!r})")
    return found


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
    """A partitioned record index keys records per partition; only the global one is read here."""
    definition = index_definitions(mdt.table.storage, mdt.table.config.raw).get(MdtPartition.RECORD_INDEX, {})
    return str(definition.get("indexOptions", {}).get("isPartitioned", "false")).lower() != "true"


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


def index_definitions(storage: Storage, raw_config: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Index definitions (`hoodie.table.index.defs.path`), by index name."""
    path = raw_config.get(INDEX_DEFS_KEY)
    if not path:
        return {}
    try:
        data = json.loads(storage.read_bytes(path))
    except StoredFileNotFound:
        return {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HudiFormatError(storage.full_path(path), f"index definitions are not JSON ({exc})") from None
    definitions = data.get("indexDefinitions", {}) if isinstance(data, dict) else {}
    return definitions if isinstance(definitions, dict) else {}


def record_key_text(fields: tuple[str, ...], values: tuple[str, ...]) -> str:
    """A record key as Hudi's key generators write it: a single field's value,
    or `f1:v1,f2:v2` for composite keys (ComplexKeyGenerator)."""
    if len(fields) == 1:
        return values[0]
    return ",".join(f"{f}:{v}" for f, v in zip(fields, values))
