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

from metadata.errors import InvalidStatsTable
from metadata.util import arrow_values, fingerprints
from metadata.util.arrow_memory import READ_POOL
from metadata.util.arrow_values import to_numpy

log = logging.getLogger(__name__)

PARTITION = "partition"
FILE_NAME = "fileName"
VALUE_COUNT = "valueCount"
_MIN, _MAX, _NULLS = "_minValue", "_maxValue", "_nullCount"
NULL_COUNT_SUFFIX = _NULLS


NUL = arrow_values.scalar("\x00", pa.string())  # joins a partition and a name (a Python str there would import pandas)
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


class ListedFiles:
    """Listed files (partition, fileName, size) a verdict is taken on: the
    rows of a table, or its rows at `positions` (a run's rows of a whole
    listing, matched where they lie and never copied out whole)."""

    def __init__(self, table: pa.Table, positions: npt.NDArray[np.signedinteger] | None = None) -> None:
        self.table = table
        self.positions = positions
        self._partitions: pa.Array | pa.ChunkedArray | None = None
        self._rows: pa.Table | None = None

    def __len__(self) -> int:
        return self.table.num_rows if self.positions is None else len(self.positions)

    @property
    def partitions(self) -> pa.Array | pa.ChunkedArray:
        """Each listed file's partition (taken once)."""
        if self._partitions is None:
            column = self.table.column(PARTITION)
            self._partitions = column if self.positions is None else arrow_values.taken(column, self.positions)
        return self._partitions

    def rows(self, which: npt.NDArray[np.signedinteger] | None = None) -> pa.Table:
        """The listed files (those at these indexes among them, ascending) as a table (all of them taken once)."""
        if which is not None:
            return arrow_values.taken(self.table, which if self.positions is None else self.positions[which])
        if self._rows is None:
            self._rows = self.table if self.positions is None else arrow_values.taken(self.table, self.positions)
        return self._rows


def listed_rows_of(stats: pa.Table, listed: ListedFiles) -> npt.NDArray[np.int64]:
    """For each stats row, the index of the listed file it is about, or -1
    (not listed). `stats_rows_of` the other way round, by the same rules:
    names first, partitions compared after, (partition, name) pairs when a
    name matched another partition's file. A run's files are matched where
    they lie (`fingerprints.index_in_at`); without the compiled part they are
    taken. A file listed twice (no listing does) is matched at its first row."""
    names = stats.column(FILE_NAME)
    compiled = None if listed.positions is None else fingerprints.index_in_at(names, listed.table.column(FILE_NAME), listed.positions)
    if compiled is None:
        compiled = to_numpy(fingerprints.index_in(names, listed.rows().column(FILE_NAME)), null=-1)
    found: npt.NDArray[np.int64] = np.asarray(compiled, dtype=np.int64)
    matched = np.flatnonzero(found >= 0)
    same = pc.equal(pc.take(stats.column(PARTITION), arrow_values.from_numpy(matched), memory_pool=READ_POOL),
                    pc.take(listed.partitions, arrow_values.from_numpy(found[matched]), memory_pool=READ_POOL), memory_pool=READ_POOL)
    if pc.all(same).as_py() is not False:
        return found
    exact = pc.index_in(_file_identities(stats), value_set=_file_identities(listed.rows()), memory_pool=READ_POOL)
    return np.asarray(to_numpy(exact, null=-1), dtype=np.int64)


def listed_may_match(count: int, listed: npt.NDArray[np.int64], keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Per listed file (of `count`), whether it may hold a match, given each
    stats row's listed file (`listed_rows_of`) and verdict: a file no stats
    row is about may hold anything; one that two rows are about (a damaged
    index) may when either allows it."""
    may = np.ones(count, dtype=bool)
    about = listed >= 0
    may[listed[about]] = False
    may[listed[about & keep]] = True
    return may


def stats_row_per_listed(count: int, listed: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per listed file (of `count`), the first stats row about it, or -1 (`stats_rows_of`'s answer from `listed_rows_of`'s)."""
    found = np.full(count, -1, dtype=np.int64)
    rows = np.flatnonzero(listed >= 0)[::-1]
    found[listed[rows]] = rows  # written last to first: the first row about a file stays
    return found


def _file_identities(table: pa.Table) -> pa.Array:
    """The identity of each row's file: partition, a NUL, file name."""
    joined = pc.binary_join_element_wise(table.column(PARTITION), table.column(FILE_NAME), NUL, memory_pool=READ_POOL)
    return joined.combine_chunks(memory_pool=READ_POOL)
