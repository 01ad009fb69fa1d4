"""HoodieMetadataRecord values as the metadata table's HFiles hold them (Avro
binary): column_stats and partition_stats records by the specialised encoder
(metadata.mdt.stats_encoding, the same bytes several times faster), every
other record by fastavro's generic writer."""

from __future__ import annotations

import io
from typing import Any

import fastavro

from metadata.mdt.record_schema import LEGACY_METADATA_RECORD_SCHEMA_JSON, METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.records import parse_schema_cached
from metadata.mdt.stats_encoding import encode_stats_record

_LEGACY = {METADATA_RECORD_SCHEMA_JSON: False, LEGACY_METADATA_RECORD_SCHEMA_JSON: True}


def encode_record(record: dict[str, Any], schema_json: str = METADATA_RECORD_SCHEMA_JSON, blank_key: bool = True) -> bytes:
    """Avro binary of a record; HFile values carry `key` as "" (the row holds it)."""
    legacy = _LEGACY.get(schema_json)
    if legacy is not None:
        encoded = encode_stats_record(record, legacy, blank_key)
        if encoded is not None:
            return encoded
    data = dict(record, key="") if blank_key else record
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parse_schema_cached(schema_json), data)
    return out.getvalue()


__all__ = ["encode_record"]
