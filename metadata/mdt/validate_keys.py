"""`table validate` for the indexes keyed by record key: the record index
(each live key's file group) and the secondary indexes ((value, key) pairs).

The truth is read, not derived from what a writer recorded: every latest
file slice's merged rows (logs applied, deletes gone), one slice at a time.
A key the index misses or places in another file group makes a plan on that
key drop its rows: a difference. An entry of a key that is gone (or of a
value the key no longer has) only keeps a file more: a note that names them.
Hudi 1.0.2 leaves such entries itself: a delete logged to a version 6
MERGE_ON_READ table does not reach its record index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from metadata.errors import IndexWriteError
from metadata.mdt.file_groups import MdtPartition, SecondaryIndexPartition
from metadata.mdt.indexes import record_index_entries, record_index_is_global, record_locations, secondary_indexes, split_secondary_key
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.secondary_index import check_indexable, value_text
from metadata.table.file_group import FileSlice
from metadata.table.hudi_table import HudiTable
from metadata.table.record_key import RecordKeyError, RecordKeyRule
from metadata.table.slice_rows import merged_rows, table_read_schema

SHOWN = 10  # differences named per index and kind; the rest are counted

Location = tuple[str, str]  # (partition, file id)


@dataclass
class KeyIndexCheck:
    """What the key-indexed partitions were found to hold, for the report."""

    differences: list[str] = field(default_factory=list)
    behind: list[str] = field(default_factory=list)  # explained by instants the metadata table does not hold yet
    notes: list[str] = field(default_factory=list)
    keys_checked: int = 0


@dataclass
class _Truth:
    """Each live key's file groups, and each indexed column's (value text, key) pairs, from the latest slices."""

    locations: dict[str, set[Location]] = field(default_factory=dict)
    pairs: dict[str, dict[tuple[str | None, str], Location]] = field(default_factory=dict)


def check_key_indexes(table: HudiTable, mdt: MetadataTable, slices: Sequence[FileSlice], behind_groups: set[str]) -> KeyIndexCheck:
    """The record index and the secondary indexes against the rows of `slices`
    (the latest slices as the metadata table lists them). Differences in the
    file groups `behind_groups` (written by instants not synced yet) are set
    apart: a sync explains them."""
    check = KeyIndexCheck()
    built = set(table.config.metadata_partitions)
    with_record_index = MdtPartition.RECORD_INDEX in built
    indexes = _comparable(table, secondary_indexes(mdt), check)
    if not with_record_index and not indexes:
        return check
    rule = RecordKeyRule.of(table.config)
    truth = _read_truth(table, slices, rule, [index.column for index in indexes], check)
    if truth is None:
        return check
    if with_record_index:
        _compare_record_index(mdt, truth, behind_groups, check)
    for index in indexes:
        _compare_secondary_index(mdt, index, truth.pairs[index.column], behind_groups, check)
    return check


def _comparable(table: HudiTable, indexes: list[SecondaryIndexPartition], check: KeyIndexCheck) -> list[SecondaryIndexPartition]:
    """The secondary indexes whose value text is known exactly for their column's type."""
    fields = {f.name: f.type for f in table_read_schema(table)} if indexes else {}
    kept = []
    for index in indexes:
        try:
            check_indexable(index.column, fields.get(index.column))
        except IndexWriteError as exc:
            check.notes.append(f"{index.value} not compared: {str(exc).split(': ', 1)[-1]}")
            continue
        kept.append(index)
    return kept


def _read_truth(table: HudiTable, slices: Sequence[FileSlice], rule: RecordKeyRule, columns: list[str],
                check: KeyIndexCheck) -> _Truth | None:
    truth = _Truth(pairs={column: {} for column in columns})
    wanted = list(dict.fromkeys([*rule.columns, *columns]))
    for piece in slices:
        rows = merged_rows(table, piece, wanted)
        if not rows.num_rows:
            continue
        where = f"{table.base_uri}/{piece.partition}" if piece.partition else table.base_uri
        try:
            keys = rule.keys_of(_with_columns(rows, wanted), where).to_pylist()
        except RecordKeyError as exc:
            check.notes.append(f"the record and secondary indexes not compared: {exc}")
            return None
        location = (piece.partition, piece.file_id)
        for key in keys:
            truth.locations.setdefault(key, set()).add(location)
        named = {name.lower(): name for name in rows.column_names}
        for column in columns:
            values = rows.column(named[column.lower()]).to_pylist() if column.lower() in named else [None] * len(keys)
            for value, key in zip(values, keys):
                truth.pairs[column][value_text(value), key] = location
    return truth


def _with_columns(rows: pa.Table, columns: Iterable[str]) -> pa.Table:
    """The rows with any of `columns` they lack (a column added later) as nulls."""
    for column in columns:
        if column.lower() not in {name.lower() for name in rows.column_names}:
            rows = rows.append_column(column, pa.nulls(rows.num_rows, pa.string()))
    return rows


def _compare_record_index(mdt: MetadataTable, truth: _Truth, behind_groups: set[str], check: KeyIndexCheck) -> None:
    """Each live key at its file group(s), and no entry of a key that is gone. A global index keeps a key once; a
    partitioned one (Hudi 1.1+) once per data partition."""
    live = sorted(truth.locations)
    global_index = record_index_is_global(mdt)
    if global_index:
        found = {key: {location} for key, location in record_locations(mdt, live).items()}
    else:
        found = {}
        for key, location in record_index_entries(mdt, live):
            found.setdefault(key, set()).add(location)
    check.keys_checked += len(live)
    missing: list[str] = []
    misplaced: list[str] = []
    duplicates: list[str] = []
    for key in live:
        held, there = found.get(key, set()), truth.locations[key]
        if held == there:
            continue
        if held and held < there and global_index:  # a key inserted twice: the table's, not the index's (key_uniqueness)
            duplicates.append(f"key {key!r} in {_where(there)}")
            continue
        explained = {file_id for _, file_id in held | there} & behind_groups
        line = (f"record_index: key {key!r} is in {_where(there)}, but the index has no entry for it: a plan on the key "
                "would drop its row" if not held else f"record_index: key {key!r} is in {_where(there)}, the index says {_where(held)}")
        (check.behind if explained else missing if not held else misplaced).append(line)
    _stale("record_index", [f"key {key!r}" for key in sorted(_every_key(mdt, MdtPartition.RECORD_INDEX) - truth.locations.keys())], check)
    for kind in (missing, misplaced):
        _add(kind, check)
    if duplicates:
        check.notes.append(f"record_index: {len(duplicates)} key(s) live in more than one file group ({', '.join(duplicates[:3])}): a global "
                           "record index keeps one of each, so plans do not prune on it until keys are shown unique")


def _compare_secondary_index(mdt: MetadataTable, index: SecondaryIndexPartition, truth: dict[tuple[str | None, str], Location],
                             behind_groups: set[str], check: KeyIndexCheck) -> None:
    """Every live (value, key) pair of the column, and no pair that is gone."""
    held: set[tuple[str | None, str]] = set()
    for records in mdt.reader.read_each_slice(index.value, KeyQuery()):
        for stored_key, record in records.items():
            meta = record.raw.get("SecondaryIndexMetadata")
            if isinstance(meta, dict) and meta.get("isDeleted"):
                continue
            held.add(split_secondary_key(stored_key))
    check.keys_checked += len(truth)
    missing: list[str] = []
    for value, key in sorted(truth.keys() - held, key=str):
        line = (f"{index.value}: no entry for value {value!r} of key {key!r} (in {_where({truth[value, key]})}): a plan on "
                f"{index.column} = {value!r} would drop the row")
        (check.behind if truth[value, key][1] in behind_groups else missing).append(line)
    _stale(index.value, [f"value {value!r} of key {key!r}" for value, key in sorted(held - truth.keys(), key=str)], check)
    _add(missing, check)


def _every_key(mdt: MetadataTable, partition: str) -> set[str]:
    return {key for records in mdt.reader.read_each_slice(partition, KeyQuery()) for key in records}


def _where(locations: set[Location]) -> str:
    return " and ".join(f"{partition}/{file_id}" if partition else file_id for partition, file_id in sorted(locations))


def _add(lines: list[str], check: KeyIndexCheck) -> None:
    check.differences.extend(lines[:SHOWN])
    if len(lines) > SHOWN:
        check.differences.append(f"... and {len(lines) - SHOWN} more like the line above")


def _stale(index: str, entries: list[str], check: KeyIndexCheck) -> None:
    if entries:
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        check.notes.append(f"{index}: {len(entries)} stale entr{'y' if len(entries) == 1 else 'ies'} ({shown}), which no latest row "
                           "holds: a plan keeps a file more for them, no row is lost")
