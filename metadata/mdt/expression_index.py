"""Hudi's expression indexes (`expr_index_<name>`, Hudi 1.x) as stored.

An index definition (`.hoodie/.index_defs/index.json`) names one source
column, a Spark function (`indexFunction`, also in the `expr` option) and
its options (`format`, `days`, `pos`, `len`, ...; `HoodieExpressionIndex`).
An index of type `column_stats` holds, per data file, a column_stats record
of f(column): keyed as column_stats keys it (column id, partition id, file
id), named by the source column, its bounds in f's result type. Beside them,
per data partition, a partition_stats record keyed by column id, the id of
`__partition_stat__`, then the partition's id. File groups are
`expr-index-<name>-NNNN-0`, two by default
(`hoodie.metadata.index.expression.file.group.count`), records routed by
their whole key.

Evaluating f is the expressions layer's work: the writer is handed an
`IndexExpressions` (dependencies flow metadata <- expressions).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pyarrow as pa

from metadata.formats.bloom_filter import DEFAULT_ENTRIES, DEFAULT_ERROR_RATE, BloomFilterType, build_bloom_filter
from metadata.formats.log_format import LogBlock
from metadata.mdt import keys
from metadata.mdt.file_stats import ColumnRange, file_values, table_ranges
from metadata.mdt.record_builders import bloom_filter_record, range_record
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.util.read_ahead import AHEAD_PER_THREAD, read_ahead, threaded_map
from metadata.util.text_enum import TextEnum

EXPRESSION_INDEX_PREFIX = "expr_index_"
PARTITION_STAT_PREFIX = "__partition_stat__"  # HoodieExpressionIndex.HOODIE_EXPRESSION_INDEX_PARTITION_STAT_PREFIX
DEFAULT_TIMESTAMP_PATTERN = "yyyy-MM-dd HH:mm:ss"  # Spark's TimestampFormatter.defaultPattern
EXPRESSION_INDEX_FILE_GROUPS = 2


class ExpressionIndexType(TextEnum):
    COLUMN_STATS = "column_stats"
    BLOOM_FILTERS = "bloom_filters"


# Functions Hudi's ExpressionIndexSparkFunctions applies, with the options
# each reads; those evaluated here have a Spark SQL form (`spark_sql`).
_DATE_PARTS = ("year", "month", "day", "hour")
_WITH_FORMAT = ("date_format", "from_unixtime", "unix_timestamp", "to_date", "to_timestamp")


@dataclass(frozen=True)
class ExpressionIndexPartition:
    """One `expr_index_<name>` partition: f(column) by Hudi's function name and options."""

    value: str  # the partition's name
    column: str
    function: str
    options: tuple[tuple[str, str], ...] = ()
    index_type: ExpressionIndexType = ExpressionIndexType.COLUMN_STATS

    @property
    def file_group_prefix(self) -> str:
        return self.value.replace("_", "-") + "-"

    @property
    def default_file_groups(self) -> int:
        return EXPRESSION_INDEX_FILE_GROUPS

    def routing_key(self, key: str) -> str:
        return key

    def option(self, name: str) -> str | None:
        return dict(self.options).get(name)

    def spark_sql(self) -> str | None:
        """f(column) as Spark SQL, or None for a function not evaluated here
        (regexp_replace, regexp_extract: Java's regular expressions; split:
        an array) or options that do not make one."""
        column = ".".join(f"`{part}`" for part in self.column.split("."))
        function, fmt = self.function, self.option("format")
        if function == "identity":
            return column
        if function in _DATE_PARTS or function in ("lower", "upper"):
            return f"{function}({column})"
        if function in _WITH_FORMAT:
            if fmt is None and function in ("from_unixtime", "unix_timestamp"):
                fmt = DEFAULT_TIMESTAMP_PATTERN
            if fmt is None:
                return None if function == "date_format" else f"{function}({column})"
            return f"{function}({column}, {_quoted(fmt)})"
        if function in ("date_add", "date_sub"):
            days = self.option("days")
            return f"{function}({column}, {int(days)})" if days is not None and _is_int(days) else None
        if function in ("trim", "ltrim", "rtrim"):
            chars = self.option("trimString")
            if chars is None:
                return f"{function}({column})"
            side = {"trim": "BOTH", "ltrim": "LEADING", "rtrim": "TRAILING"}[function]
            return f"trim({side} {_quoted(chars)} FROM {column})"
        if function == "length":
            return f"length({column})"
        if function == "substring":
            pos, length = self.option("pos"), self.option("len")
            if pos is None or length is None or not _is_int(pos) or not _is_int(length):
                return None
            return f"substring({column}, {int(pos)}, {int(length)})"
        return None

    def definition(self) -> dict[str, Any]:
        """The index.json entry, as Hudi 1.1 writes one (`expr` among the options)."""
        return {"indexName": self.value, "indexType": str(self.index_type), "indexFunction": self.function,
                "sourceFields": [self.column], "indexOptions": {"expr": self.function, **dict(self.options)}, "version": "V2"}


class IndexExpressions(Protocol):
    """Evaluates an expression index's f over a column's values (the expressions layer implements it)."""

    def result_type(self, index: ExpressionIndexPartition, source: pa.DataType) -> pa.DataType | None:
        """f's result type on such a column, or None when f is not evaluated here."""

    def evaluate(self, index: ExpressionIndexPartition, values: pa.Array) -> pa.Array:
        """f of every value (NULL where Spark gives NULL)."""


def defined_expression_indexes(definitions: Mapping[str, Mapping[str, Any]]) -> list[ExpressionIndexPartition]:
    """Defined expression indexes on one column (sorted by name)."""
    found = []
    for name, definition in sorted(definitions.items()):
        fields = definition.get("sourceFields") or []
        if not name.startswith(EXPRESSION_INDEX_PREFIX) or len(fields) != 1:
            continue
        try:
            kind = ExpressionIndexType(definition.get("indexType", "column_stats"))
        except ValueError:
            continue
        raw = definition.get("indexOptions") or {}
        options = tuple(sorted((str(k), str(v)) for k, v in raw.items() if k != "expr"))
        function = str(definition.get("indexFunction") or raw.get("expr") or "identity").lower()
        found.append(ExpressionIndexPartition(name, fields[0], function, options, kind))
    return found


def with_expression_definition(definitions: dict[str, dict[str, Any]], partition: ExpressionIndexPartition) -> bytes:
    """index.json with this expression index defined."""
    updated = dict(definitions)
    updated[partition.value] = partition.definition()
    return json.dumps({"indexDefinitions": updated}, indent=2).encode()


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def expression_range(values: pa.ChunkedArray, file_name: str, index: ExpressionIndexPartition,
                     expressions: IndexExpressions) -> ColumnRange:
    """The column_stats record payload of f(column) over one file's values."""
    image = expressions.evaluate(index, values.combine_chunks())
    return table_ranges(pa.table({index.column: image}), file_name, [index.column])[0]


def partition_stat_key(column: str, partition: str) -> str:
    """Key of an expression index's partition-level record: column id, the id
    of `__partition_stat__`, the partition's id (getPartitionStatsIndexKey)."""
    return keys.column_index_id(column) + keys.partition_index_id(PARTITION_STAT_PREFIX) + keys.partition_index_id(partition)


def expression_ranges(storage: Storage, files: Sequence[str], index: ExpressionIndexPartition, expressions: IndexExpressions,
                      block_counts: Callable[[LogBlock], bool], schema: pa.Schema | None, threads: int = 8) -> list[ColumnRange]:
    """f(column)'s range in each data file (relative paths); a file without the column gets none (it is then kept)."""

    def one(relative: str) -> ColumnRange | None:
        values = file_values(storage, relative, index.column, block_counts, schema)
        return None if values is None else expression_range(values, relative.rsplit("/", 1)[-1], index, expressions)

    return [r for r in threaded_map(files, one, min(threads, len(files))) if r is not None]


def file_records(index: ExpressionIndexPartition, partition: str, ranges: Iterable[ColumnRange], version: int,
                 deleted: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """column_stats records of f(column) for files of one partition (tombstones when `deleted`)."""
    for r in ranges:
        key = keys.column_stats_key(index.column, partition, r.file_name)
        yield key, range_record(key, r, version, deleted=deleted)


def partition_records(index: ExpressionIndexPartition, rollups: Mapping[str, ColumnRange], version: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The partition-level records of f(column), one per data partition."""
    for partition, r in sorted(rollups.items()):
        key = partition_stat_key(index.column, partition)
        yield key, range_record(key, replace(r, file_name=partition), version, partition_stats=True)


def bloom_text(value: Any) -> str:
    """A value as Hudi adds it to an expression index's bloom filter (Java's toString; strings and integers only)."""
    return str(value)


def bloom_records(storage: Storage, files: Sequence[tuple[str, str]], index: ExpressionIndexPartition, expressions: IndexExpressions,
                  block_counts: Callable[[LogBlock], bool], schema: pa.Schema | None, timestamp: str,
                  threads: int = 8) -> Iterator[tuple[str, dict[str, Any]]]:
    """An index of bloom filters: per data file (base or log), a filter of the
    text of f(column) of its rows, sized by the index options (`numentries`,
    `fpp`, `filtertype`) or Hudi's defaults, keyed as the bloom_filters
    partition keys them. NULL values are not added (Hudi's writer fails on them)."""
    entries = int(index.option("numentries") or DEFAULT_ENTRIES)
    error_rate = float(index.option("fpp") or DEFAULT_ERROR_RATE)
    kind = BloomFilterType(index.option("filtertype") or BloomFilterType.DYNAMIC_V0.value)

    def one(target: tuple[str, str]) -> tuple[str, dict[str, Any]] | None:
        partition, name = target
        values = file_values(storage, join(partition, name), index.column, block_counts, schema)
        if values is None:
            return None
        image = expressions.evaluate(index, values.combine_chunks())
        texts = [bloom_text(v) for v in image.to_pylist() if v is not None]
        built = build_bloom_filter(texts, entries, error_rate, kind)
        key = keys.bloom_filter_key(partition, name)
        return key, bloom_filter_record(key, built.type_code, timestamp, built.text)

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(files)))) as pool:
        yield from (r for r in read_ahead(pool, files, one, AHEAD_PER_THREAD * threads) if r is not None)
