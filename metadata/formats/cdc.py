"""Hudi's change-data logs (`hoodie.table.cdc.enabled`): the `.cdc` (before
Hudi 1.x `-cdc`) log files a writer adds beside the file groups a commit
rewrote, listed in the write stats' `cdcStats`. Their CDC_DATA blocks hold
Avro records in one of three supplemental logging modes
(`hoodie.table.cdc.supplemental.logging.mode`, HoodieCDCUtils' schemas):

- OP_KEY_ONLY: op, record_key;
- DATA_BEFORE: op, record_key, before (the table's record, nullable);
- DATA_BEFORE_AFTER: op, ts_ms, before, after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from metadata.errors import HudiFormatError
from metadata.formats.log_format import BlockType, HeaderKey, LogBlock, decode_avro_records, encode_avro_records, read_log_blocks
from metadata.table.config import PROPERTIES_PATH
from metadata.util.text_enum import TextEnum

CDC_ENABLED_KEY = "hoodie.table.cdc.enabled"
CDC_MODE_KEY = "hoodie.table.cdc.supplemental.logging.mode"


class CdcMode(TextEnum):
    OP_KEY_ONLY = "OP_KEY_ONLY"
    DATA_BEFORE = "DATA_BEFORE"
    DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"

    @classmethod
    def of_table(cls, properties: Mapping[str, str]) -> CdcMode | None:
        """The table's mode, in any of Hudi's spellings (1.x `DATA_BEFORE_AFTER`,
        0.14 `data_before_after`, 0.13 `cdc_data_before_after`); None when CDC is off."""
        if properties.get(CDC_ENABLED_KEY, "false").strip().lower() != "true":
            return None
        text = properties.get(CDC_MODE_KEY, cls.DATA_BEFORE_AFTER.value).strip()
        mode = _SPELLINGS.get(text.upper())
        if mode is None:
            raise HudiFormatError(PROPERTIES_PATH, f"{CDC_MODE_KEY}={text!r} is not a logging mode Hudi writes "
                                                   f"({', '.join(CdcMode.values())})")
        return mode


_SPELLINGS = {
    "OP_KEY_ONLY": CdcMode.OP_KEY_ONLY, "CDC_OP_KEY": CdcMode.OP_KEY_ONLY,
    "DATA_BEFORE": CdcMode.DATA_BEFORE, "CDC_DATA_BEFORE": CdcMode.DATA_BEFORE,
    "DATA_BEFORE_AFTER": CdcMode.DATA_BEFORE_AFTER, "CDC_DATA_BEFORE_AFTER": CdcMode.DATA_BEFORE_AFTER,
}


def cdc_schema(mode: CdcMode, table_schema: dict[str, Any]) -> dict[str, Any]:
    """HoodieCDCUtils.schemaBySupplementalLoggingMode."""
    text = {"name": "op", "type": ["string", "null"]}
    if mode is CdcMode.OP_KEY_ONLY:
        return {"type": "record", "name": "Record", "fields": [text, {"name": "record_key", "type": ["string", "null"]}]}
    image = ["null", table_schema]
    nullable = {"type": ["null", "string"], "default": None}
    fields: list[dict[str, Any]] = [{"name": "op", **nullable}]
    if mode is CdcMode.DATA_BEFORE_AFTER:
        namespace = table_schema.get("namespace")
        named = f"{namespace}.{table_schema['name']}" if namespace else table_schema["name"]  # defined once, then named
        fields += [{"name": "ts_ms", **nullable}, {"name": "before", "type": image, "default": None},
                   {"name": "after", "type": ["null", named], "default": None}]
    else:
        fields += [{"name": "record_key", **nullable}, {"name": "before", "type": image, "default": None}]
    return {"type": "record", "name": "CDC", "fields": fields}


@dataclass(frozen=True)
class CdcRecord:
    """One change as a change-data log holds it (images None where the mode leaves them out)."""

    op: str
    record_key: str | None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


def encode_cdc_block(mode: CdcMode, table_schema: dict[str, Any], instant: str, changes: list[CdcRecord]) -> LogBlock:
    """A CDC_DATA block of these changes, as HoodieCDCLogger writes one."""
    schema = cdc_schema(mode, table_schema)
    records: list[dict[str, Any]]
    if mode is CdcMode.OP_KEY_ONLY:
        records = [{"op": c.op, "record_key": c.record_key} for c in changes]
    elif mode is CdcMode.DATA_BEFORE:
        records = [{"op": c.op, "record_key": c.record_key, "before": c.before} for c in changes]
    else:
        records = [{"op": c.op, "ts_ms": instant, "before": c.before, "after": c.after} for c in changes]
    return LogBlock(BlockType.CDC_DATA, {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)},
                    encode_avro_records(schema, records))


def read_cdc_records(data: bytes, where: str) -> Iterator[CdcRecord]:
    """The changes a change-data log file holds."""
    for block in read_log_blocks(data, where).blocks:
        if block.block_type is not BlockType.CDC_DATA:
            continue
        for record in decode_avro_records(block, where):
            image = record.get("after") or record.get("before") or {}
            key = record.get("record_key") or image.get("_hoodie_record_key")
            yield CdcRecord(str(record.get("op") or ""), key, record.get("before"), record.get("after"))
