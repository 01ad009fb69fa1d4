"""Writing Hudi's secondary indexes (`secondary_index_<name>`, Hudi 1.x).

One record per (value, record key): key `<escaped value>$<escaped record
key>` (`SecondaryIndexKeyUtils`: `\\`, `$` and NUL escaped with `\\`; a null
value is a bare NUL), type 7, `SecondaryIndexMetadata.isDeleted`. The value
is the column's Avro value as text, as Hudi's `Object.toString` gives it: a
string as is, an integer in decimal, a date as its day number, a boolean as
`true`/`false`. Other column types are refused rather than guessed.
Records are routed to file groups by their `<escaped value>$` prefix
(`SecondaryIndexPartition.routing_key`), as Hudi routes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from metadata.errors import IndexWriteError
from metadata.mdt.file_groups import SecondaryIndexPartition
from metadata.mdt.indexes import escape_secondary_key, index_text
from metadata.mdt.record_builders import secondary_index_record
from metadata.table.file_group import FileSlice
from metadata.table.hudi_table import HudiTable
from metadata.table.record_key import RecordKeyError, RecordKeyRule
from metadata.table.slice_rows import rows_of_slices

INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"
NULL_VALUE = "\0"


def value_text(value: Any) -> str | None:
    """Hudi's text of a column value (None: a null value); the column's type
    is one `check_indexable` admits, whose text is always known."""
    if value is None:
        return None
    text = index_text(value, days=True)
    assert text is not None, f"no secondary-index text for {value!r}"
    return text


def secondary_index_key(value: str | None, record_key: str) -> str:
    return (NULL_VALUE if value is None else escape_secondary_key(value)) + "$" + escape_secondary_key(record_key)


def check_indexable(column: str, dtype: pa.DataType | None) -> None:
    """Columns whose Hudi text is known exactly: strings, integers, dates, booleans."""
    if dtype is None:
        raise IndexWriteError(f"secondary index on {column}: no such column in the table's schema")
    if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_integer(dtype)
            or pa.types.is_date32(dtype) or pa.types.is_boolean(dtype)):
        raise IndexWriteError(f"secondary index on {column}: a {dtype} column's index text is not written here "
                              "(strings, integers, dates and booleans are)")


def entries(table: HudiTable, slices: Iterable[FileSlice], column: str) -> set[tuple[str | None, str]]:
    """(value text, record key) of the merged rows of these slices."""
    rule = RecordKeyRule.of(table.config)
    rows = rows_of_slices(table, slices, list(dict.fromkeys([*rule.columns, column])))
    if rows is None:
        return set()
    try:
        keys = rule.keys_of(rows, table.base_uri).to_pylist()
    except RecordKeyError as exc:
        raise IndexWriteError(str(exc)) from None
    return {(value_text(v), k) for k, v in zip(keys, rows.column(column).to_pylist())}


def records_of(changes: Iterable[tuple[str | None, str, bool]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, record) of (value, record key, deleted) entries."""
    for value, record_key, deleted in changes:
        key = secondary_index_key(value, record_key)
        yield key, secondary_index_record(key, deleted)


def with_definition(definitions: dict[str, dict[str, Any]], partition: SecondaryIndexPartition) -> bytes:
    """index.json with this secondary index defined as Hudi 1.1 defines one."""
    updated = dict(definitions)
    updated[partition.value] = {"indexName": partition.value, "indexType": "secondary_index", "indexFunction": "identity",
                                "sourceFields": [partition.column], "indexOptions": {}, "version": "V2"}
    return json.dumps({"indexDefinitions": updated}, indent=2).encode()
