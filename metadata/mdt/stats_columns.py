"""Column statistics records to the stats table, a column at a time.

The columnar counterpart of `MetadataTable._transpose` (kept as the
reference): records decoded by `columnar.decode_many` (or, for keys that log
blocks changed, merged `MetadataRecord`s) become flat per-record lists, and
the stats table is a join of one small table per column, built by Arrow.
Wrapped bounds of plain types are taken as decoded; dates, times, timestamps
and decimals go through `records.stat_value`, the reference rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt import keys
from metadata.mdt.columnar import Decoded
from metadata.mdt.records import LOGICAL_VALUE_TYPES, MetadataRecord, stat_value
from metadata.stats_table import FILE_NAME, PARTITION, VALUE_COUNT, build_stats_table, max_field, min_field, null_count_field, typed_array

STATS = "ColumnStatsMetadata|HoodieMetadataColumnStats"
PLAIN_WRAPPERS = frozenset({"BooleanWrapper", "IntWrapper", "LongWrapper", "FloatWrapper", "DoubleWrapper", "StringWrapper", "BytesWrapper"})


@dataclass
class FlatStats:
    """One entry per column-stats record."""

    keys: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    mins: list[Any] = field(default_factory=list)
    maxs: list[Any] = field(default_factory=list)
    value_counts: list[int | None] = field(default_factory=list)
    null_counts: list[int | None] = field(default_factory=list)
    deleted: list[bool] = field(default_factory=list)

    def add_record(self, key: str, record: MetadataRecord) -> None:
        stats = record.column_stats
        if stats is None:
            return
        self.keys.append(key)
        self.files.append(stats.file_name)
        self.columns.append(stats.column_name)
        self.mins.append(stats.min_value)
        self.maxs.append(stats.max_value)
        self.value_counts.append(stats.value_count)
        self.null_counts.append(stats.null_count)
        self.deleted.append(stats.is_deleted)

    def add_decoded(self, record_keys: list[str], decoded: Decoded) -> None:
        deleted_path = f"{STATS}.isDeleted"  # a plain field: present exactly in the records with column stats
        if deleted_path not in decoded.present:
            return
        rows = decoded.present[deleted_path]
        n = decoded.count
        ordinals: list[int | None] = _aligned(decoded, f"{STATS}.valueType|HoodieValueTypeInfo.typeOrdinal", n)
        infos = decoded.strings(f"{STATS}.valueType|HoodieValueTypeInfo.additionalInfo|string")
        files = decoded.strings(f"{STATS}.fileName|string")
        columns = decoded.strings(f"{STATS}.columnName|string")
        mins = _bounds(decoded, f"{STATS}.minValue", ordinals, infos)
        maxs = _bounds(decoded, f"{STATS}.maxValue", ordinals, infos)
        value_counts = _aligned(decoded, f"{STATS}.valueCount|long", n)
        null_counts = _aligned(decoded, f"{STATS}.nullCount|long", n)
        deleted = _aligned(decoded, deleted_path, n)
        for i in rows.tolist():
            self.keys.append(record_keys[i])
            self.files.append(files[i] or "")
            self.columns.append(columns[i] or "")
            self.mins.append(mins[i])
            self.maxs.append(maxs[i])
            self.value_counts.append(value_counts[i])
            self.null_counts.append(null_counts[i])
            self.deleted.append(bool(deleted[i]))

    def has_duplicate_keys(self) -> bool:
        return len(set(self.keys)) != len(self.keys)


def _numbers(decoded: Decoded, path: str, count: int) -> list[Any]:
    """The decoded ints, floats or booleans of a path, in `present` order."""
    for table in (decoded.ints, decoded.floats, decoded.bools):
        if path in table:
            return list(table[path].tolist())
    return [None] * count


def _aligned(decoded: Decoded, path: str, n: int) -> list[Any]:
    out: list[Any] = [None] * n
    if path in decoded.present:
        present = decoded.present[path].tolist()
        for i, v in zip(present, _numbers(decoded, path, len(present))):
            out[i] = v
    return out


def _bounds(decoded: Decoded, path: str, ordinals: list[int | None], infos: list[str | None]) -> list[Any]:
    out: list[Any] = [None] * decoded.count
    prefix = path + "|"
    for leaf in [k for k in decoded.present if k.startswith(prefix) and k.endswith(".value")]:
        wrapper = leaf[len(prefix) : -len(".value")]
        if leaf in decoded.spans:
            values: list[Any] = decoded.strings(leaf) if wrapper == "StringWrapper" else decoded.raw_bytes(leaf)
            indexes = decoded.present[leaf].tolist()
            picked = [values[i] for i in indexes]
        else:
            indexes = decoded.present[leaf].tolist()
            picked = _numbers(decoded, leaf, len(indexes))
        plain = wrapper in PLAIN_WRAPPERS
        for i, value in zip(indexes, picked):
            ordinal = ordinals[i]
            if plain and ordinal not in LOGICAL_VALUE_TYPES:
                out[i] = value
            else:
                value_type = None if ordinal is None else {"typeOrdinal": ordinal, "additionalInfo": infos[i]}
                out[i] = stat_value((wrapper, {"value": value}), value_type)
    return out


def pivot(flat: FlatStats, columns: list[str], known_partitions: list[str], per_file: bool,
          types: dict[str, pa.DataType]) -> pa.Table:
    """The stats table (layout of `metadata.stats_table`) of the live records
    of `columns` in `known_partitions`, one row per file (or partition)."""
    if not flat.keys:
        return build_stats_table([], columns, types)
    ids = pa.array([keys.partition_index_id(p) for p in known_partitions], pa.string())
    record_ids = pc.utf8_slice_codeunits(pa.array(flat.keys, pa.string()), keys.ID_LENGTH, 2 * keys.ID_LENGTH)
    where = pc.index_in(record_ids, value_set=ids)
    live = pc.and_(pc.is_valid(where), pc.invert(pa.array(flat.deleted, pa.bool_())))
    partition = pc.take(pa.array(known_partitions, pa.string()), where)
    name = pa.array(flat.files, pa.string()) if per_file else partition
    column_of = pa.array(flat.columns, pa.string())
    value_counts = pa.array(flat.value_counts, pa.int64())
    null_counts = pa.array(flat.null_counts, pa.int64())
    joined: pa.Table | None = None
    count_fields = []
    for c in columns:
        chosen = np.flatnonzero(pc.and_(live, pc.equal(column_of, c)).to_numpy(zero_copy_only=False))
        take = pa.array(chosen, pa.int64())
        part = pa.table({
            PARTITION: pc.take(partition, take),
            FILE_NAME: pc.take(name, take),
            f"{VALUE_COUNT}:{c}": pc.take(value_counts, take),
            min_field(c): typed_array([flat.mins[i] for i in chosen.tolist()], types.get(c), c),
            max_field(c): typed_array([flat.maxs[i] for i in chosen.tolist()], types.get(c), c),
            null_count_field(c): pc.take(null_counts, take),
        })
        count_fields.append(f"{VALUE_COUNT}:{c}")
        joined = part if joined is None else joined.join(part, keys=[PARTITION, FILE_NAME], join_type="full outer", coalesce_keys=True)
    assert joined is not None
    if not joined.num_rows:
        return build_stats_table([], columns, types)
    counts = [joined.column(f) for f in count_fields]
    value_count = counts[0] if len(counts) == 1 else pc.max_element_wise(*counts, skip_nulls=True)
    ordered = {PARTITION: joined.column(PARTITION), FILE_NAME: joined.column(FILE_NAME), VALUE_COUNT: value_count}
    for c in columns:
        for f in (min_field(c), max_field(c), null_count_field(c)):
            ordered[f] = joined.column(f)
    table = pa.table(ordered)
    return table.sort_by([(PARTITION, "ascending"), (FILE_NAME, "ascending")]).combine_chunks()
