"""Record keys as Hudi's key generators write them, and the keys of rows.

A record key is one field's value as text, or `f1:v1,f2:v2` for several
fields (ComplexKeyGenerator; a null part is `__null__`, an empty one
`__empty__`). A ComplexKeyGenerator with a single key field writes `f1:v1`
unless the table records `hoodie.table.complex.keygen.encoding=VALUE_ONLY`;
Hudi 1.0 on table version 8 wrote the bare value when
`hoodie.write.complex.keygen.new.encoding` was set, which the table does not
record, so a lookup there tries both texts.

Tables written with `hoodie.populate.meta.fields=false` (virtual keys) hold
no `_hoodie_record_key`: the column is there but null. Their keys are
computed from the key fields, as Hudi's readers and writers do. Only values
whose text is the same in Java and here are computed (strings, integers,
booleans); other key types are refused with the field named, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiBridgeError
from metadata.table.config import TableConfig
from metadata.table.key_generator import KeyGeneratorType
from metadata.util import arrow_values

RECORD_KEY_FIELD = "_hoodie_record_key"
PARTITION_PATH_FIELD = "_hoodie_partition_path"
NULL_PART = "__null__"
EMPTY_PART = "__empty__"
COMPLEX_ENCODING_KEY = "hoodie.table.complex.keygen.encoding"  # FIELD_PREFIXED or VALUE_ONLY


class RecordKeyError(HudiBridgeError):
    """Record keys cannot be computed for these rows (the message names the field and why)."""


def record_key_text(fields: Sequence[str], values: Sequence[str | None], prefixed: bool = False) -> str:
    """A record key as Hudi's key generators write it: a single field's value
    (or `f1:v1` when `prefixed`), or `f1:v1,f2:v2` for composite keys."""
    if len(fields) == 1 and not prefixed:
        return values[0] or ""
    return ",".join(f"{f}:{NULL_PART if v is None else v or EMPTY_PART}" for f, v in zip(fields, values))


@dataclass(frozen=True)
class RecordKeyRule:
    """How one table's key generator turns key fields into a record key."""

    fields: tuple[str, ...]
    encodings: tuple[bool, ...]  # whether a single field is written `f:v`; the first is what a writer uses
    virtual: bool  # hoodie.populate.meta.fields=false: keys are computed, not stored

    @classmethod
    def of(cls, config: TableConfig) -> RecordKeyRule:
        fields = config.record_key_fields
        encodings: tuple[bool, ...] = (False,)
        if len(fields) == 1 and config.key_generator.type is KeyGeneratorType.COMPLEX:
            recorded = config.raw.get(COMPLEX_ENCODING_KEY, "").strip().upper()
            if recorded == "VALUE_ONLY":
                encodings = (False,)
            elif recorded == "FIELD_PREFIXED" or config.version >= 9:
                encodings = (True,)
            else:
                encodings = (True, False)
        return cls(fields, encodings, not config.populate_meta_fields)

    @property
    def columns(self) -> list[str]:
        """The columns `keys_of` reads: the key fields without meta fields, else the meta field."""
        return list(self.fields) if self.virtual else [RECORD_KEY_FIELD]

    def texts(self, values: Sequence[str]) -> list[str]:
        """Every text the key of these field values may be stored as."""
        return list(dict.fromkeys(record_key_text(self.fields, values, prefixed) for prefixed in self.encodings))

    def keys_of(self, rows: pa.Table, where: str) -> pa.Array:
        """The record keys of rows: `_hoodie_record_key` where the table
        populates it, else computed from the key fields."""
        if not self.virtual and RECORD_KEY_FIELD in rows.column_names:
            return rows.column(RECORD_KEY_FIELD).combine_chunks().cast(pa.string())
        return self.computed(rows, where)

    def computed(self, rows: pa.Table, where: str) -> pa.Array:
        if not self.fields:
            raise RecordKeyError(f"{where}: the table records no record key fields (hoodie.table.recordkey.fields), "
                                 "so keys cannot be computed without the meta fields")
        parts = [self._field_texts(rows, name, where) for name in self.fields]
        if len(self.fields) == 1 and not self.encodings[0]:
            if parts[0].null_count:
                raise RecordKeyError(f"{where}: record key field {self.fields[0]!r} is null in a row; Hudi writes no such record")
            return parts[0]
        pieces: list[Any] = []
        for i, (name, texts) in enumerate(zip(self.fields, parts)):
            if i:
                pieces.append(",")
            empty = pc.equal(pc.fill_null(texts, arrow_values.EMPTY_STRING), arrow_values.EMPTY_STRING)
            shown = pc.if_else(pc.is_null(texts), NULL_PART, pc.if_else(empty, EMPTY_PART, texts))
            pieces += [f"{name}:", shown]
        return pc.binary_join_element_wise(*pieces, arrow_values.EMPTY_STRING)

    @staticmethod
    def _field_texts(rows: pa.Table, name: str, where: str) -> pa.Array:
        if name not in rows.column_names:
            raise RecordKeyError(f"{where}: no record key field {name!r} in the rows, so their keys cannot be computed")
        column = rows.column(name).combine_chunks()
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind):
            return column.cast(pa.string())
        if pa.types.is_boolean(kind):
            return pc.if_else(column, "true", "false")
        raise RecordKeyError(f"{where}: record key field {name!r} is {kind}; the key text Hudi computes for it without the meta "
                             "fields is not known here (string, integer and boolean keys are)")
