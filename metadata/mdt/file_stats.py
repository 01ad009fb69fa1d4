"""Column statistics of data files, computed as Hudi computes them for the
metadata table's column_stats and partition_stats partitions.

- Base files: from the Parquet footer, each row group's statistics rolled up
  (min of mins, max of maxes, counts and sizes summed). valueCount is the
  column chunks' value count, totalSize their compressed size.
- Log files: from the records of their data blocks (Avro or Parquet) of
  instants that count; sizes are 0, as Hudi writes them.
- Columns: by default the three meta fields Hudi always indexes, then the first
  32 top-level fields of a supported type (Hudi's
  `hoodie.metadata.index.column.stats.max.columns.to.index`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metadata.errors import HudiFormatError
from metadata.formats.log_format import BlockType, LogBlock, decode_avro_records, read_log_blocks
from metadata.storage.storage import Storage

META_FIELDS_ALWAYS_INDEXED = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")  # Java TreeMap order
META_FIELDS = frozenset({"_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"})
MAX_COLUMNS_TO_INDEX = 32
DECIMAL_MAX_PRECISION = 30  # the metadata record's decimal wrapper
DECIMAL_MAX_SCALE = 15



@dataclass(frozen=True, slots=True)  # slots: a build holds one per partition and column, and unpickles one per cell
class ColumnRange:
    """One column's statistics in one file (a column_stats record's payload)."""

    file_name: str
    column: str
    dtype: pa.DataType
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int = 0
    total_uncompressed_size: int = 0


def is_indexable(dtype: pa.DataType) -> bool:
    if pa.types.is_decimal(dtype):
        return dtype.precision <= DECIMAL_MAX_PRECISION and dtype.scale <= DECIMAL_MAX_SCALE
    return (
        pa.types.is_boolean(dtype) or pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
        or pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_date32(dtype)
        or pa.types.is_timestamp(dtype) or pa.types.is_time(dtype)
    )


def leaf_type(schema: pa.Schema, column: str) -> pa.DataType | None:
    """The type of a column, or of a nested field `a.b.c` inside structs (Hudi
    names nested columns so), or None where there is none."""
    if column in schema.names:
        return schema.field(column).type
    head, *rest = column.split(".")
    if head not in schema.names or not rest:
        return None
    dtype = schema.field(head).type
    for name in rest:
        if not pa.types.is_struct(dtype) or dtype.get_field_index(name) < 0:
            return None
        dtype = dtype.field(name).type
    return dtype


def leaf_values(table: pa.Table, column: str) -> pa.ChunkedArray:
    """A column's values, or a nested field's, null wherever a struct above it is null."""
    if column in table.column_names:
        return table.column(column)
    head, *rest = column.split(".")
    chunks = []
    for chunk in table.column(head).chunks:
        for name in rest:
            chunk = chunk.flatten()[chunk.type.get_field_index(name)]  # flatten applies the struct's nulls
        chunks.append(chunk)
    return pa.chunked_array(chunks, leaf_type(table.schema, column))


def columns_to_index(schema: pa.Schema, limit: int = MAX_COLUMNS_TO_INDEX) -> list[str]:
    names = set(schema.names)
    chosen = [c for c in META_FIELDS_ALWAYS_INDEXED if c in names]
    data = [f.name for f in schema if f.name not in META_FIELDS and is_indexable(f.type)]
    return chosen + data[:limit]


def merge_ranges(a: ColumnRange | None, b: ColumnRange) -> ColumnRange:
    """One range covering both (b's file name kept when a is None)."""
    if a is None:
        return b
    return ColumnRange(
        a.file_name, a.column, a.dtype,
        b.min_value if a.min_value is None else a.min_value if b.min_value is None else min(a.min_value, b.min_value),
        b.max_value if a.max_value is None else a.max_value if b.max_value is None else max(a.max_value, b.max_value),
        a.null_count + b.null_count, a.value_count + b.value_count,
        a.total_size + b.total_size, a.total_uncompressed_size + b.total_uncompressed_size,
    )


class RangeFold:
    """Column -> one range over the ranges added, named `file_name` (a
    partition's, for partition_stats; a file's, over its row groups).
    Files written before a column's type changed hold bounds of the old type:
    bounds that do not compare leave the column without bounds for good (the
    partition is never pruned on it), never one type's bounds alone."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.ranges: dict[str, ColumnRange] = {}
        self.unbounded: set[str] = set()

    def add(self, r: ColumnRange) -> None:
        held = self.ranges.get(r.column)
        if held is None:
            self.ranges[r.column] = replace(r, file_name=self.file_name)
            return
        if r.column in self.unbounded:
            r = replace(r, min_value=None, max_value=None)
        try:
            self.ranges[r.column] = merge_ranges(held, r)
        except TypeError:
            self.unbounded.add(r.column)
            self.ranges[r.column] = merge_ranges(replace(held, min_value=None, max_value=None), replace(r, min_value=None, max_value=None))


def roll_up(ranges: Iterable[ColumnRange], file_name: str) -> dict[str, ColumnRange]:
    """Column -> one range over all of them (`RangeFold`)."""
    fold = RangeFold(file_name)
    for r in ranges:
        fold.add(r)
    return fold.ranges


def _stat_value(value: Any, dtype: pa.DataType) -> Any:
    """Footer statistics as the Python value of the column's logical type."""
    if value is None:
        return None
    if pa.types.is_timestamp(dtype) and isinstance(value, datetime) and dtype.tz is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    if pa.types.is_decimal(dtype) and isinstance(value, bytes):
        return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-dtype.scale)
    if pa.types.is_decimal(dtype) and isinstance(value, int):
        return Decimal(value).scaleb(-dtype.scale)
    if (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) and isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


@dataclass(frozen=True)
class _FooterLayout:
    """What a footer's schema says once for every file that shares it: the
    columns to index, their types and their positions among the leaves."""

    schema: pq.ParquetSchema
    arrow_schema_text: bytes | None  # the footer's `ARROW:schema`, which types read through as well
    wanted: tuple[tuple[str, pa.DataType, int | None], ...]  # (column, type, leaf position)


_LAYOUTS: dict[tuple[str, ...] | None, list[_FooterLayout]] = {}  # columns asked -> layouts seen, newest first
LAYOUTS_KEPT = 8  # a table's files share a schema or a few (evolution)


def _footer_layout(metadata: pq.FileMetaData, columns: Sequence[str] | None) -> _FooterLayout:
    asked = None if columns is None else tuple(columns)
    arrow_text = (metadata.metadata or {}).get(b"ARROW:schema")
    seen = _LAYOUTS.setdefault(asked, [])
    for layout in seen:
        if layout.arrow_schema_text == arrow_text and layout.schema.equals(metadata.schema):
            return layout
    schema = metadata.schema.to_arrow_schema()
    names = columns_to_index(schema) if columns is None else [c for c in columns if leaf_type(schema, c) is not None]
    positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    layout = _FooterLayout(metadata.schema, arrow_text, tuple((n, leaf_type(schema, n), positions.get(n)) for n in names))
    seen.insert(0, layout)
    del seen[LAYOUTS_KEPT:]
    return layout


def footer_ranges(data: bytes | pa.NativeFile, file_name: str, columns: Sequence[str] | None, where: str) -> list[ColumnRange]:
    """Stats of a Parquet base file from its footer alone."""
    try:
        metadata = pq.read_metadata(data if not isinstance(data, bytes) else io.BytesIO(data))
    except (OSError, pa.ArrowInvalid) as exc:
        raise HudiFormatError(where, f"Parquet footer does not read ({exc})") from None
    wanted = _footer_layout(metadata, columns).wanted
    merged: dict[str, ColumnRange] = {}
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for name, dtype, index in wanted:
            if index is None:
                continue
            chunk = group.column(index)
            stats = chunk.statistics
            has_range = stats is not None and stats.has_min_max
            piece = ColumnRange(
                file_name, name, dtype,
                _stat_value(stats.min, dtype) if has_range else None,
                _stat_value(stats.max, dtype) if has_range else None,
                int(stats.null_count) if stats is not None and stats.has_null_count else 0,
                int(chunk.num_values), int(chunk.total_compressed_size), int(chunk.total_uncompressed_size),
            )
            merged[name] = merge_ranges(merged.get(name), piece)
    return [merged[n] for n, _, _ in wanted if n in merged]


def table_ranges(table: pa.Table, file_name: str, columns: Sequence[str] | None) -> list[ColumnRange]:
    """Stats of in-memory records (log blocks): exact min/max, sizes 0."""
    wanted = columns_to_index(table.schema) if columns is None else [c for c in columns if leaf_type(table.schema, c) is not None]
    out = []
    for name in wanted:
        column = leaf_values(table, name)
        dtype = column.type
        nulls = column.null_count
        if len(column) - nulls:
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
        else:
            low = high = None
        out.append(ColumnRange(file_name, name, dtype, _stat_value(low, dtype), _stat_value(high, dtype), nulls, len(column)))
    return out


def _block_table(block: LogBlock, where: str, schema: pa.Schema | None) -> pa.Table | None:
    if block.block_type is BlockType.PARQUET_DATA:
        return pq.read_table(io.BytesIO(block.content))
    if block.block_type is BlockType.AVRO_DATA:
        records = list(decode_avro_records(block, where))
        if schema is not None:
            return pa.Table.from_pylist(records, schema=schema)
        return pa.Table.from_pylist(records)
    return None


def log_ranges(
    data: bytes, file_name: str, columns: Sequence[str] | None, where: str,
    block_counts: Callable[[LogBlock], bool], schema: pa.Schema | None = None,
) -> list[ColumnRange]:
    """Stats of a log file: the records of its data blocks that count."""
    result = read_log_blocks(data, where)
    tables = []
    for block in result.blocks:
        if not block_counts(block):
            continue
        table = _block_table(block, where, schema)
        if table is not None and table.num_rows:
            tables.append(table)
    if not tables:  # only deletes: Hudi still writes an empty range per column
        if schema is None:
            return []
        wanted = columns_to_index(schema) if columns is None else [c for c in columns if leaf_type(schema, c) is not None]
        return [ColumnRange(file_name, c, leaf_type(schema, c) or pa.null(), None, None, 0, 0) for c in wanted]
    combined = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    return table_ranges(combined, file_name, columns)


def blocks_counting(only: str | None, completed: frozenset[str]) -> Callable[[LogBlock], bool]:
    """Which log blocks count: those of one instant, or of any completed one."""
    if only:
        return lambda block: block.instant_time == only
    return lambda block: block.instant_time in completed


def file_ranges(storage: Storage, relative: str, columns: Sequence[str] | None,
                block_counts: Callable[[LogBlock], bool], schema: pa.Schema | None = None) -> list[ColumnRange]:
    """Stats of one data file (base or log), read from `storage`. A file
    removed since it was listed (a cleaner or a rollback at work beside us)
    has none: whatever removed it records that in the metadata table."""
    name = relative.rsplit("/", 1)[-1]
    where = storage.display_path(relative)
    def read() -> list[ColumnRange]:
        if name.startswith("."):
            return log_ranges(storage.read_bytes(relative), name, columns, where, block_counts, schema)
        with storage.open_random_access(relative) as handle:
            return footer_ranges(handle, name, columns, where)

    return storage.unless_removed(relative, read, [])


def file_values(storage: Storage, relative: str, column: str, block_counts: Callable[[LogBlock], bool],
                schema: pa.Schema | None = None) -> pa.ChunkedArray | None:
    """A column's values in one data file: a base file's rows, or the records
    of a log file's data blocks that count; None when the file lacks it."""
    name = relative.rsplit("/", 1)[-1]
    where = storage.display_path(relative)
    if name.startswith("."):
        tables = []
        for block in read_log_blocks(storage.read_bytes(relative), where).blocks:
            table = _block_table(block, where, schema) if block_counts(block) else None
            if table is not None and table.num_rows:
                tables.append(table)
        if not tables:
            return pa.chunked_array([], leaf_type(schema, column) or pa.null()) if schema is not None else None
        table = pa.concat_tables(tables, promote_options="permissive")
    else:
        head = column.split(".")[0]
        try:
            with storage.open_random_access(relative) as handle:
                parquet = pq.ParquetFile(handle)
                if head not in parquet.schema_arrow.names:
                    return None
                table = parquet.read(columns=[head])
        except (OSError, pa.ArrowInvalid) as exc:
            raise HudiFormatError(where, f"Parquet file does not read ({exc})") from None
    return leaf_values(table, column) if leaf_type(table.schema, column) is not None else None
