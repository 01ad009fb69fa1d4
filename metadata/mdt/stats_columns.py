"""Column statistics records to the stats table, a column at a time, in Arrow.

The columnar counterpart of `MetadataTable._transpose` (kept as the
reference): records decoded by `columnar.decode_spans` become one Arrow
table per column (key, file, bounds typed by the table schema, counts,
deleted flag) without a Python object per record; keys that log blocks
changed arrive as merged `MetadataRecord`s and join as Python values. Bounds
of plain wrappers whose Arrow type matches the column's are cast as
decoded; dates, times, timestamps, decimals and anything that does not fit
go through `records.stat_value` and `stats_table.typed_array`, the
reference rules. The pivot aligns the columns on (partition, file) with
Arrow hash lookups, not a join.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata._moved import moved_attribute
from metadata.formats.stats_table import (
    FILE_NAME,
    PARTITION,
    typed_array,
)
from metadata.mdt import keys
from metadata.mdt.decoded import Decoded, IntArray
from metadata.mdt.hfile_cells import as_utf8, at_ascending
from metadata.mdt.native import cells as _native
from metadata.mdt.native import int64s, lets_gil_go
from metadata.mdt.record_gather import Field, PathField, RowText, Spans, Taken, gather
from metadata.mdt.records import LOGICAL_VALUE_TYPES, MetadataRecord, stat_value
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL
from metadata.util.arrow_values import scalar, to_numpy
from metadata.util.fingerprints import starts_with_any

STATS = "ColumnStatsMetadata|HoodieMetadataColumnStats"
PLAIN_WRAPPERS = frozenset({"BooleanWrapper", "IntWrapper", "LongWrapper", "FloatWrapper", "DoubleWrapper", "StringWrapper", "BytesWrapper"})
_INTEGER_TYPES = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())
# Wrapper -> column types its decoded values are cast to as they are (the reference gives the same).
_AS_DECODED: dict[str, tuple[pa.DataType, ...]] = {
    "IntWrapper": _INTEGER_TYPES,
    "LongWrapper": _INTEGER_TYPES,
    "FloatWrapper": (pa.float32(), pa.float64()),
    "DoubleWrapper": (pa.float64(),),
    "StringWrapper": (pa.string(),),
    "BytesWrapper": (pa.binary(),),
    "BooleanWrapper": (pa.bool_(),),
}


@dataclass
class _PythonPiece:
    """Records of one column held as Python values (merged records, or bounds the reference rules type)."""

    identities: list[str] = field(default_factory=list)  # keys without the column id
    files: list[str] = field(default_factory=list)
    mins: list[Any] = field(default_factory=list)
    maxs: list[Any] = field(default_factory=list)
    value_counts: list[int | None] = field(default_factory=list)
    null_counts: list[int | None] = field(default_factory=list)
    deleted: list[bool] = field(default_factory=list)
    total_sizes: list[int | None] = field(default_factory=list)
    total_uncompressed_sizes: list[int | None] = field(default_factory=list)

    def table(self, dtype: pa.DataType | None, column: str, sizes: bool = False) -> pa.Table:
        table = pa.table({"identity": arrow_values.array(self.identities, pa.string()), "file": arrow_values.array(self.files, pa.string()),
                         "value_count": arrow_values.array(self.value_counts, pa.int64()), "null_count": arrow_values.array(self.null_counts, pa.int64()),
                         "deleted": arrow_values.array(self.deleted, pa.bool_()),
                         "min": typed_array(self.mins, dtype, column), "max": typed_array(self.maxs, dtype, column)})
        if not sizes:
            return table
        return table.append_column("total_size", arrow_values.array(self.total_sizes, pa.int64())).append_column(
            "total_uncompressed_size", arrow_values.array(self.total_uncompressed_sizes, pa.int64()))


class FlatStats:
    """Column-stats records gathered per column; `pivot` makes the stats table."""

    def __init__(self, types: Mapping[str, pa.DataType], sizes: bool = False, columns: Collection[str] | None = None) -> None:
        self.types = types
        self.sizes = sizes  # also each record's totalSize and totalUncompressedSize (a roll-up sums them; a plan does not read them)
        # the columns gathered (None: all); a loose read's blocks also hold its neighbours' columns, left undecoded
        self.columns = None if columns is None else frozenset(columns)
        self.pieces: dict[str, list[pa.Table]] = {}
        self.python: dict[str, _PythonPiece] = {}

    def add_record(self, key: str, record: MetadataRecord) -> None:
        stats = record.column_stats
        if stats is None or (self.columns is not None and stats.column_name not in self.columns):
            return
        piece = self.python.setdefault(stats.column_name, _PythonPiece())
        piece.identities.append(key[keys.ID_LENGTH :])
        piece.files.append(stats.file_name)
        piece.mins.append(stats.min_value)
        piece.maxs.append(stats.max_value)
        piece.value_counts.append(stats.value_count)
        piece.null_counts.append(stats.null_count)
        piece.deleted.append(stats.is_deleted)
        if self.sizes:
            piece.total_sizes.append(stats.total_size)
            piece.total_uncompressed_sizes.append(stats.total_uncompressed_size)

    def paths_read(self) -> tuple[str, ...]:
        """The prefixes of the decoded paths `add_decoded` reads."""
        read = tuple(f"{STATS}.{name}" for name in ("isDeleted", "columnName|", "fileName|", "valueCount|", "nullCount|", "minValue|",
                                                     "maxValue|", "valueType|"))
        return (*read, f"{STATS}.totalSize|", f"{STATS}.totalUncompressedSize|") if self.sizes else read

    def add_decoded(self, identities: Spans, decoded: Decoded) -> None:
        """Records decoded columnar; `identities` spans each record's key
        without the column id (partition id and file id: the same file in
        every column). Each column's fields are gathered at its records
        together (`record_gather`), with no array of every record's to filter
        after."""
        deleted_path = f"{STATS}.isDeleted"  # a plain field: present exactly in the records with column stats
        if deleted_path not in decoded.present:
            return
        bounds = _Bounds(decoded)
        # in the layout of `_PythonPiece.table`: a column's tables are laid end to end
        names = ["identity", "file", "value_count", "null_count", "deleted"]
        values = [f"{STATS}.valueCount|long", f"{STATS}.nullCount|long", deleted_path]
        if self.sizes:
            names += ["total_size", "total_uncompressed_size"]
            values += [f"{STATS}.totalSize|long", f"{STATS}.totalUncompressedSize|long"]
        fields: list[Field] = [RowText(identities), PathField(f"{STATS}.fileName|string", Taken.TEXT), *(PathField(v, Taken.VALUES) for v in values)]
        for column, chosen in _records_by_column(decoded, f"{STATS}.columnName|string", decoded.present[deleted_path]):
            if self.columns is not None and column not in self.columns:
                continue
            dtype = self.types.get(column)
            low, high = bounds.leaf("minValue", chosen, dtype), bounds.leaf("maxValue", chosen, dtype)
            leaves = [leaf for leaf in (low, high) if isinstance(leaf, _Leaf)]
            gathered = gather(decoded, chosen, [*fields, *(leaf.field for leaf in leaves)])
            columns = dict(zip(names, gathered))
            leaf_values = dict(zip(leaves, gathered[len(names) :]))
            mins, maxs = (bound if not isinstance(bound, _Leaf) else _cast(leaf_values[bound], dtype) for bound in (low, high))
            if mins is None or maxs is None:  # typed by the reference rules, with the merged records
                piece = self.python.setdefault(column, _PythonPiece())
                piece.identities += columns["identity"].to_pylist()
                piece.files += columns["file"].to_pylist()
                piece.mins += bounds.python("minValue", chosen)
                piece.maxs += bounds.python("maxValue", chosen)
                piece.value_counts += columns["value_count"].to_pylist()
                piece.null_counts += columns["null_count"].to_pylist()
                piece.deleted += columns["deleted"].to_pylist()
                if self.sizes:
                    piece.total_sizes += columns["total_size"].to_pylist()
                    piece.total_uncompressed_sizes += columns["total_uncompressed_size"].to_pylist()
                continue
            self.pieces.setdefault(column, []).append(pa.table({**columns, "min": mins, "max": maxs}))

    def of_partitions(self, columns: list[str], partitions: list[str]) -> dict[str, pa.Table]:
        """Column -> its records (`table_of`) in these partitions (a loose read also holds its neighbours')."""
        ids = arrow_values.array(sorted(keys.partition_index_id(p) for p in partitions), pa.string())
        return {c: of_partitions(table, ids) for c in columns if (table := self.table_of(c)) is not None}

    def table_of(self, column: str) -> pa.Table | None:
        """Every record of a column (identity, file, min, max, counts, deleted; sizes when asked)."""
        tables = list(self.pieces.get(column, []))
        if column in self.python:
            tables.append(self.python[column].table(self.types.get(column), column, self.sizes))
        if not tables:
            return None
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def of_partitions(table: pa.Table, partition_ids: pa.Array) -> pa.Table:
    """Records (`FlatStats.table_of`) of the partitions with these ids (the identity's first characters)."""
    keep = starts_with_any(table.column("identity"), partition_ids)
    if keep is None:  # ids of another width: by Arrow
        return table.filter(pc.is_in(pc.utf8_slice_codeunits(table.column("identity"), 0, keys.ID_LENGTH), value_set=partition_ids))
    return arrow_values.kept_rows(table, keep)


NAMES_GATHERED = 32  # column names up to this many bytes are compared in place; longer ones by Arrow


def _records_by_column(decoded: Decoded, path: str, records: IntArray) -> list[tuple[str, IntArray]]:
    """Each column named at `path` (a missing name is ""), in order of first
    appearance, with its records among `records` (ascending). Keys sort by
    column id first, so each column's records are usually one run: names are
    compared with their neighbours' in place, and each run's is read once."""
    if path not in decoded.spans or not len(decoded.present[path]) or not len(records):
        return [("", records)] if len(records) else []
    at, found = decoded.locate(path, records)
    starts, lengths = decoded.spans[path]
    starts, lengths = (starts[at], np.where(found, lengths[at], 0)) if found is not None else (at_ascending(starts, at), at_ascending(lengths, at))
    if _native is not None:  # where each run of equal names begins, compiled
        firsts = np.frombuffer(_native.span_runs(decoded.buffer, int64s(starts), int64s(lengths), lets_gil_go()), dtype=np.int64)
        if len(firsts) <= max(4, len(records) // 64):
            return _runs_by_name(decoded, records, starts, lengths, firsts)
    elif (widest := int(lengths.max())) <= NAMES_GATHERED:
        width = np.arange(max(widest, 1))
        names = decoded.buffer[np.minimum(starts[:, None] + width, len(decoded.buffer) - 1)]
        names[width[None, :] >= lengths[:, None]] = 0  # bytes past a name are not its own
        same = (lengths[1:] == lengths[:-1]) & (names[1:] == names[:-1]).all(axis=1)
        firsts = np.concatenate([[0], np.flatnonzero(~same) + 1])
        if len(firsts) <= max(4, len(records) // 64):
            return _runs_by_name(decoded, records, starts, lengths, firsts)
    column_names = pc.fill_null(as_utf8(decoded.binary_at(path, records)), arrow_values.EMPTY_STRING)
    return [(column, records[np.flatnonzero(to_numpy(pc.equal(column_names, scalar(column, column_names.type))))])
            for column in pc.unique(column_names).to_pylist()]


def _runs_by_name(decoded: Decoded, records: IntArray, starts: IntArray, lengths: IntArray, firsts: IntArray) -> list[tuple[str, IntArray]]:
    """Each name (in order of first appearance) with its records, from where each run of equal names begins."""
    by_name: dict[str, list[IntArray]] = {}
    for first, stop in zip(firsts.tolist(), [*firsts[1:].tolist(), len(records)]):
        start = int(starts[first])
        name = decoded.buffer[start : start + int(lengths[first])].tobytes().decode("utf-8")  # not UTF-8: ValueError, the read's error
        by_name.setdefault(name, []).append(records[first:stop])
    return [(name, parts[0] if len(parts) == 1 else np.concatenate(parts)) for name, parts in by_name.items()]


# Per value type ordinal (and -1 and the last place for those outside the known ones), whether it is logical: one
# look-up a record, where `np.isin` took a pass per logical type over every record of a chunk
_LOGICAL_ORDINAL = np.zeros(max(LOGICAL_VALUE_TYPES) + 2, dtype=np.bool_)
_LOGICAL_ORDINAL[list(LOGICAL_VALUE_TYPES)] = True


class _Bounds:
    """min/max values of chosen records: as decoded where the wrapper and the
    column type allow, else as the reference rules give them."""

    def __init__(self, decoded: Decoded) -> None:
        self.decoded = decoded
        ordinal_path = f"{STATS}.valueType|HoodieValueTypeInfo.typeOrdinal"
        self.ordinals = np.full(decoded.count, -1, dtype=np.int64)  # -1: no valueType (before v9)
        # bounds the reference rules type (dates, decimals, ...); records without a valueType have none
        self.logical = np.zeros(decoded.count, dtype=np.bool_)
        if ordinal_path in decoded.present:
            rows, ordinals = decoded.present[ordinal_path], decoded.ints[ordinal_path]
            self.ordinals[rows] = ordinals
            self.logical[rows] = _LOGICAL_ORDINAL[np.clip(ordinals, -1, len(_LOGICAL_ORDINAL) - 1)]

    def _leaves(self, which: str) -> list[tuple[str, str]]:
        """(path, wrapper name) of each decoded value of a bound."""
        prefix = f"{STATS}.{which}|"
        return [(k, k[len(prefix) : -len(".value")]) for k in self.decoded.present if k.startswith(prefix) and k.endswith(".value")]

    def leaf(self, which: str, chosen: IntArray, dtype: pa.DataType | None) -> _Leaf | pa.Array | None:
        """Where the chosen records' bounds are to be gathered from (cast to
        `dtype` after, `_cast`), nulls of `dtype` when none of them has one,
        or None when the reference rules must type them."""
        if dtype is None:
            return None
        if at_ascending(self.logical, chosen).any():
            return None
        leaves = [(leaf, wrapper) for leaf, wrapper in self._leaves(which) if _any_among(self.decoded.present[leaf], chosen)]
        if not leaves:
            return pa.nulls(len(chosen), dtype)
        if len(leaves) > 1:
            return None
        leaf, wrapper = leaves[0]
        if dtype not in _AS_DECODED.get(wrapper, ()):
            return None
        if leaf not in self.decoded.spans:
            return _Leaf(PathField(leaf, Taken.VALUES))
        return _Leaf(PathField(leaf, Taken.TEXT_OR_NULL if wrapper == "StringWrapper" else Taken.BINARY))

    def _leaf_at(self, leaf: str, wrapper: str, rows: npt.NDArray[np.int64]) -> pa.Array:
        """A bound's decoded values at `rows` (ascending; null where absent)."""
        if leaf in self.decoded.spans:
            values = self.decoded.binary_at(leaf, rows)
            return as_utf8(values) if wrapper == "StringWrapper" else values
        return self.decoded.values_at(leaf, rows)

    def python(self, which: str, chosen: npt.NDArray[np.int64]) -> list[Any]:
        """The bounds of chosen records as the reference decoder gives them."""
        decoded = self.decoded
        position = {int(r): i for i, r in enumerate(chosen.tolist())}
        out: list[Any] = [None] * len(chosen)
        infos: list[str | None] | None = None
        for leaf, wrapper in self._leaves(which):
            values = self._leaf_at(leaf, wrapper, decoded.present[leaf]).to_pylist()
            plain = wrapper in PLAIN_WRAPPERS
            for row, value in zip(decoded.present[leaf].tolist(), values):
                at = position.get(row)
                if at is None:
                    continue
                ordinal = None if self.ordinals[row] < 0 else int(self.ordinals[row])
                if plain and ordinal not in LOGICAL_VALUE_TYPES:
                    out[at] = value
                else:
                    if infos is None:
                        infos = decoded.strings(f"{STATS}.valueType|HoodieValueTypeInfo.additionalInfo|string")
                    value_type = None if ordinal is None else {"typeOrdinal": ordinal, "additionalInfo": infos[row]}
                    out[at] = stat_value((wrapper, {"value": value}), value_type)
        return out


@dataclass(frozen=True)
class _Leaf:
    """A bound's decoded values, gathered as they are."""

    field: Field


def _cast(values: pa.Array, dtype: pa.DataType) -> pa.Array | None:
    """Gathered bounds as `dtype`, or None when one does not fit (the reference rules null it alone)."""
    try:
        return values.cast(dtype, safe=True, memory_pool=READ_POOL)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _any_among(present: IntArray, chosen: IntArray) -> bool:
    """Whether any of the rows `chosen` (ascending) is among `present` (ascending)."""
    if not len(present) or not len(chosen):
        return False
    first, last = int(chosen[0]), int(chosen[-1])
    inside = present[np.searchsorted(present, first) : np.searchsorted(present, last, side="right")]
    if last - first + 1 == len(chosen) or not len(inside):  # an unbroken range: any present row inside it
        return bool(len(inside))
    return bool(np.isin(inside, chosen, assume_unique=True).any())


def in_file_order(table: pa.Table) -> pa.Table:
    """A stats table by partition, then file name."""
    return table.sort_by([(PARTITION, "ascending"), (FILE_NAME, "ascending")])


# Names this module offered before it was split, for one release.
_MOVED = {"pivot": "metadata.mdt.stats_pivot"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
