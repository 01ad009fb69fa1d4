"""The statistics table: what the metadata table's stats readers produce and
the stats evaluator (`expressions.eval_stats`) consumes.

One row per file (column_stats) or per partition (partition_stats):
- `partition` and `fileName` (strings; for partition_stats the file name is
  the partition) and `valueCount` (int64, rows in the file);
- for each column c: `c_minValue` and `c_maxValue` in the column's type,
  `c_nullCount` (int64).
A column without these fields has no statistics; a null in them means none
for that file, which keeps the file.

Bounds are exact unless the table declares otherwise: the metadata table's
column_stats come from Parquet footers (untruncated) and log records, so
they are; a source whose string bounds may be cut to a prefix (Parquet's
page index, some writers) marks those columns with `mark_truncated`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata import arrow_values, fingerprints
from metadata.arrow_memory import READ_POOL
from metadata.arrow_values import to_numpy
from metadata.errors import InvalidStatsTable

log = logging.getLogger(__name__)

PARTITION = "partition"
FILE_NAME = "fileName"
VALUE_COUNT = "valueCount"
_MIN, _MAX, _NULLS = "_minValue", "_maxValue", "_nullCount"
NULL_COUNT_SUFFIX = _NULLS


TRUNCATED_KEY = b"hudi_bridge.truncated_bounds"  # schema metadata: comma-separated column names


def mark_truncated(stats: pa.Table, columns: Sequence[str]) -> pa.Table:
    """The same statistics, declaring that these columns' string bounds may be prefixes."""
    metadata = dict(stats.schema.metadata or {})
    metadata[TRUNCATED_KEY] = ",".join(sorted(set(columns) | truncated_columns(stats))).encode()
    return stats.replace_schema_metadata(metadata)


def truncated_columns(stats: pa.Table) -> frozenset[str]:
    raw = (stats.schema.metadata or {}).get(TRUNCATED_KEY, b"")
    return frozenset(name for name in raw.decode().split(",") if name)


def min_field(column: str) -> str:
    return column + _MIN


def max_field(column: str) -> str:
    return column + _MAX


def null_count_field(column: str) -> str:
    return column + _NULLS


def stats_columns(stats: pa.Table) -> pa.Schema:
    """The columns that have statistics, with their types."""
    return pa.schema(
        [pa.field(name[: -len(_MIN)], stats.schema.field(name).type) for name in stats.column_names if name.endswith(_MIN)]
    )


def check_stats_table(stats: pa.Table) -> None:
    """Raise InvalidStatsTable when `stats` does not follow the layout above."""
    names = set(stats.column_names)
    for field in stats_columns(stats):
        maximum = max_field(field.name)
        if maximum not in names:
            raise InvalidStatsTable(f"statistics of {field.name!r} have {min_field(field.name)} but no {maximum}")
        if stats.schema.field(maximum).type != field.type:
            raise InvalidStatsTable(
                f"statistics of {field.name!r}: {min_field(field.name)} is {field.type} but {maximum} is {stats.schema.field(maximum).type}"
            )
    for name in [VALUE_COUNT] + [null_count_field(f.name) for f in stats_columns(stats)]:
        if name in names and not pa.types.is_integer(stats.schema.field(name).type):
            raise InvalidStatsTable(f"statistics field {name} is {stats.schema.field(name).type}, not an integer")


def build_stats_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], types: Mapping[str, pa.DataType]) -> pa.Table:
    """A stats table from rows keyed by the field names above; bounds are
    typed by `types` (a value that does not fit becomes null: no statistics)."""
    arrays = {
        PARTITION: arrow_values.array([r[PARTITION] for r in rows], pa.string()),
        FILE_NAME: arrow_values.array([r[FILE_NAME] for r in rows], pa.string()),
        VALUE_COUNT: arrow_values.array([r.get(VALUE_COUNT) for r in rows], pa.int64()),
    }
    for column in columns:
        dtype = types.get(column)
        for name in (min_field(column), max_field(column)):
            arrays[name] = typed_array([r.get(name) for r in rows], dtype, column)
        arrays[null_count_field(column)] = arrow_values.array([r.get(null_count_field(column)) for r in rows], pa.int64())
    return pa.table(arrays)


def typed_array(values: list[Any], dtype: pa.DataType | None, column: str) -> pa.Array:
    """Values in the column's type; a value that does not fit becomes null
    (no statistics, so the file is kept) and is logged."""
    if dtype is None:
        return pa.array(values)
    try:
        return arrow_values.array(values, dtype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        fitted = []
        for value in values:
            try:
                arrow_values.array([value], dtype)
                fitted.append(value)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                log.debug("column %s: stats value %r does not fit %s; treated as missing", column, value, dtype)
                fitted.append(None)
        return arrow_values.array(fitted, dtype)


def stats_rows_of(files: pa.Table, stats: pa.Table) -> npt.NDArray[np.int64]:
    """For each row of a table with `partition` and `fileName`, the row of
    the stats table about the same file, or -1 (no statistics: it is kept).

    File names are matched first (by fingerprint, `fingerprints.index_in`;
    no joined keys), and the partitions of the matches compared after;
    Hudi's file names carry a unique file id, so they do not repeat across
    partitions. When one does, the first stats row of that name may be
    another partition's, so (partition, name) pairs are matched instead."""
    names, partitions = files.column(FILE_NAME), files.column(PARTITION)
    found = fingerprints.index_in(names, stats.column(FILE_NAME))
    same = pc.equal(partitions, pc.take(stats.column(PARTITION), found, memory_pool=READ_POOL))
    if not pc.all(pc.fill_null(same, arrow_values.TRUE)).as_py():
        found = pc.index_in(_file_identities(files), value_set=_file_identities(stats), memory_pool=READ_POOL)
    return np.asarray(to_numpy(found, null=-1), dtype=np.int64)


def _file_identities(table: pa.Table) -> pa.Array:
    """The identity of each row's file: partition, a NUL, file name."""
    joined = pc.binary_join_element_wise(table.column(PARTITION), table.column(FILE_NAME), "\x00", memory_pool=READ_POOL)
    return joined.combine_chunks(memory_pool=READ_POOL)
