"""Build and keep a table's metadata table: `files`, `column_stats` and
`partition_stats` (RFC-15 and RFC-27, write side), in Hudi's formats.

Order of writes, so that a reader never sees half of anything:
1. file groups' files (logs, HFiles), each written whole;
2. the MDT instant: requested, inflight, completed (the completed file is
   what makes the files count, RFC-15 design V2);
3. for a new partition, the data table's `hoodie.table.metadata.partitions`
   last (backup and checksum, as Hudi updates hoodie.properties).
A crash leaves at most a pending MDT instant; the next build or sync deletes
what it wrote and redoes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from metadata.avro_schema import avro_to_arrow_schema, with_meta_fields
from metadata.errors import CleanedFilesError, HudiError, IndexWriteError
from metadata.file_group import FileSlice
from metadata.file_naming import BaseFileName, LogFileName, classify
from metadata.instant import BEFORE_ALL_INSTANTS, Action, Instant, instant_epoch_millis
from metadata.instant_content import encode_avro_instant
from metadata.listing import StorageListing
from metadata.log_format import BlockType, HeaderKey, LogBlock, encode_block, encode_delete_records
from metadata.mdt.bloom_filters import bloom_filter_records, removed_base_file_bloom_records
from metadata.mdt.expression_index import (
    ExpressionIndexPartition,
    ExpressionIndexType,
    IndexExpressions,
    bloom_records,
    defined_expression_indexes,
    expression_ranges,
    file_records,
    partition_records,
    partition_stat_key,
    with_expression_definition,
)
from metadata.mdt.file_groups import (
    BUILD_ORDER,
    PARTITION_ORDER,
    MdtPartition,
    MetadataPartition,
    SecondaryIndexPartition,
    file_group_id,
    file_group_index,
    record_index_file_groups,
)
from metadata.mdt.file_stats import ColumnRange, blocks_counting, columns_to_index, leaf_type, merge_ranges, roll_up
from metadata.mdt.indexes import INDEX_DEFS_KEY, defined_secondary_indexes, index_definitions, is_partitioned_record_index
from metadata.mdt.keys import column_stats_key, partition_stats_key
from metadata.mdt.reader import BUILT_THROUGH, METADATA_FOLDER, PENDING_AT_BUILD, KeyQuery, MetadataTableReader, build_coverage
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_keys import FileKeys, keys_of_files
from metadata.mdt.record_schema import files_record, range_record, record_index_record, record_schema_json, removed_bloom_filter_records
from metadata.mdt.records import ALL_PARTITIONS_KEY, MetadataRecord
from metadata.mdt.secondary_index import INDEX_DEFS_PATH, check_indexable, entries, records_of, with_definition
from metadata.mdt.stats_engine import LocalStatsEngine, StatsEngine, engine_ranges
from metadata.mdt.validate import committed_files
from metadata.mdt.write.cell_spill import DEFAULT_BUDGET_BYTES, CellSpill
from metadata.mdt.write.hfile_writer import HFileWriter
from metadata.mdt.write.routed_cells import ColumnStatsCells, RoutedCell, ranges_only, routed
from metadata.mdt.write.transaction import Fault, MetadataTransaction
from metadata.partition_path import from_metadata_partition, to_metadata_partition
from metadata.record_key import RecordKeyRule
from metadata.slice_rows import changed_slices
from metadata.storage import join
from metadata.stored_table import TableParts
from metadata.table import HudiTable
from metadata.table_config import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    BaseFileFormat,
    TableConfig,
    TableType,
)
from metadata.timeline_models import COMPACTION_PLAN

log = logging.getLogger(__name__)

INDEXED_COLUMNS = "hudi-bridge.columns"
DEFAULT_COMPACT_AFTER = 10  # hoodie.metadata.compact.max.delta.commits
PARTITION_STATS_PER_RUN = 200  # a sync rolls touched partitions up this many at a time


@dataclass
class IndexReport:
    action: str
    partitions: list[str] = field(default_factory=list)
    instants: list[str] = field(default_factory=list)
    files_indexed: int = 0
    records_written: int = 0
    compacted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)




class MetadataTableWriter:
    def __init__(self, path: str, engine: StatsEngine | None = None, fault: Fault | None = None,
                 compact_after: int = DEFAULT_COMPACT_AFTER, progress: Callable[[str], None] | None = None,
                 memory_budget: int = DEFAULT_BUDGET_BYTES, batch_files: int | None = None,
                 storage_options: Mapping[str, str] | None = None, index_expressions: IndexExpressions | None = None) -> None:
        """`memory_budget`: bytes of encoded records a build holds before
        spilling sorted runs to temporary files; `batch_files`: files whose
        statistics are computed (and held) at once (None: the engine's choice); `index_expressions`
        evaluates expression indexes (without it they are not maintained)."""
        data = TableParts.load(path, storage_options=storage_options)
        self.version = data.config.version
        self.schema_json = record_schema_json(self.version)
        self.tx = MetadataTransaction(data, self.schema_json, fault)
        self.storage = self.tx.storage
        self.mdt_storage = self.tx.mdt_storage
        self.fault = self.tx.fault
        self.engine = engine or LocalStatsEngine()
        self.compact_after = compact_after
        self.progress = progress or (lambda message: None)
        self.memory_budget = memory_budget
        self.batch_files = batch_files
        self.index_expressions = index_expressions

    @property
    def data(self) -> TableParts:
        """The data table as the transaction last loaded it."""
        return self.tx.data

    # Public operations ---------------------------------------------------------------
    def build(self, partitions: Sequence[MetadataPartition] = BUILD_ORDER, columns: Sequence[str] | None = None,
              rebuild: bool = False) -> IndexReport:
        """Initialise the partitions not built yet; with `rebuild`, also rebuild
        the named partitions that exist. A rebuild writes new base files beside
        the old ones and swaps them in with one commit (an MDT compaction), so
        it touches only the partitions it names, leaves every other index (Hudi's
        secondary indexes included) alone, and a failure leaves the old ones."""
        started = time.monotonic()
        report = IndexReport("build")
        check_columns(self.data, columns)  # before anything is touched
        asked: list[MetadataPartition] = [p for p in PARTITION_ORDER if p in partitions]
        asked += [p for p in partitions if isinstance(p, (SecondaryIndexPartition, ExpressionIndexPartition))]
        self._check_secondary([p for p in asked if isinstance(p, SecondaryIndexPartition)], asked)
        self._check_expression([p for p in asked if isinstance(p, ExpressionIndexPartition)])
        if MdtPartition.RECORD_INDEX in asked and is_partitioned_record_index(index_definitions(self.storage, self.data.config.raw)):
            raise IndexWriteError(f"{self.storage.uri}: the table defines a partitioned record index (Hudi 1.1), whose file groups "
                                  "are per data partition; hudi-bridge writes the global one. Build it with Apache Hudi")
        with self.tx.writing():
            built = set(self.data.config.metadata_partitions)
            if MdtPartition.FILES.value not in built:
                self._reset_metadata_folder()
                built = set()
            else:
                self._sync_locked(report)
            todo = [p for p in [*PARTITION_ORDER, *asked[len([a for a in asked if isinstance(a, MdtPartition)]):]]
                    if (p in asked or p is MdtPartition.FILES) and p.value not in built]
            redo = [p for p in asked if p.value in built] if rebuild else []
            if MdtPartition.COLUMN_STATS in redo and MdtPartition.PARTITION_STATS.value in built and MdtPartition.PARTITION_STATS not in redo:
                redo.append(MdtPartition.PARTITION_STATS)  # both hold the same columns: rebuilt from one pass
                report.notes.append("partition_stats rebuilt with column_stats (they index the same columns)")
            skipped = [p.value for p in asked if p.value in built and p not in redo]
            if skipped:
                report.notes.append(f"already built, left alone: {', '.join(skipped)} (use --rebuild to rebuild)")
            if not todo and not redo:
                report.seconds = time.monotonic() - started
                return report
            if todo:
                self._define([p for p in todo if isinstance(p, (SecondaryIndexPartition, ExpressionIndexPartition))])
                self.tx.set_config({METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(sorted({*self._inflight(), *(p.value for p in todo)}))})
            snapshot = _Snapshot.take(self.data, self.engine, columns, self.batch_files, self.progress,
                                      rollups_wanted=MdtPartition.PARTITION_STATS in {*todo, *redo})
            snapshot.expressions = self.index_expressions
            if redo:
                self._rebuild(redo, snapshot, report)
            for partition in todo:
                self._initialise(partition, snapshot, report)
                report.partitions.append(partition.value)
            if todo:
                listed = sorted({*self.data.config.metadata_partitions, *(p.value for p in todo)})
                self.fault("before config update")
                self.tx.set_config({METADATA_PARTITIONS_KEY: ",".join(listed),
                                  METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(sorted(set(self._inflight()) - {p.value for p in todo})) or None})
                self.fault("after config update")
        report.seconds = time.monotonic() - started
        return report

    def sync(self) -> IndexReport:
        started = time.monotonic()
        report = IndexReport("sync")
        with self.tx.writing():
            if MdtPartition.FILES.value not in self.data.config.metadata_partitions:
                raise IndexWriteError(f"{self.storage.uri}: no metadata table to sync; run `hudi-bridge index build` first")
            self._sync_locked(report)
        report.seconds = time.monotonic() - started
        return report

    def compact(self, force: bool = False) -> IndexReport:
        started = time.monotonic()
        report = IndexReport("compact")
        with self.tx.writing():
            self._compact_locked(report, force=force)
        report.seconds = time.monotonic() - started
        return report

    def drop(self, partitions: Sequence[MdtPartition | str]) -> IndexReport:
        """Remove metadata partitions: any this writer builds, or any other the
        table lists (Hudi's secondary or expression indexes)."""
        started = time.monotonic()
        report = IndexReport("drop")
        with self.tx.writing():
            self._drop(list(partitions), report)
        report.seconds = time.monotonic() - started
        return report

    # State -------------------------------------------------------------------------------
    def _file_ranges(self, files: Sequence[tuple[str, str | None]], columns: Sequence[str], schema: pa.Schema) -> list[ColumnRange]:
        return engine_ranges(self.engine, self.storage.uri, files, columns, schema, _completed(self.data), self.storage.storage_options)

    def _inflight(self) -> list[str]:
        return [p for p in self.data.config.raw.get(METADATA_PARTITIONS_INFLIGHT_KEY, "").split(",") if p]

    # The metadata table itself ----------------------------------------------------------
    def _reset_metadata_folder(self) -> None:
        """No partition is listed: whatever is in the folder is a leftover no reader uses."""
        if self.storage.exists(METADATA_FOLDER):
            self.storage.filesystem.delete_dir(self.storage.full_path(METADATA_FOLDER))
        extra = {
            "hoodie.table.keygenerator.type" if self.version >= 8 else "hoodie.table.keygenerator.class":
                "HOODIE_TABLE_METADATA" if self.version >= 8 else "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
            "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
            "hoodie.archivelog.folder": "history" if self.version >= 8 else "archived",
        }
        if self.version >= 8:
            extra.update({"hoodie.record.merge.mode": "CUSTOM", "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                          "hoodie.table.initial.version": str(self.version)})
        database = self.data.config.raw.get("hoodie.database.name")
        if database:
            extra["hoodie.database.name"] = database
        TableConfig.new(f"{self.data.config.name}_metadata", TableType.MERGE_ON_READ, self.version,
                        record_key_fields=("key",), base_file_format=BaseFileFormat.HFILE, populate_meta_fields=False,
                        extra=extra).write(self.mdt_storage)
        self.fault("after metadata table properties")

    def _initialisation_time(self, mdt: TableParts, partition: MetadataPartition) -> str:
        used = {i.requested_time for i in mdt.timeline.instants}
        if self._written_before(mdt, partition.value):
            # A partition made again after a drop: its old commits name files it no
            # longer has, so its first instant must be newer than theirs (as
            # Hudi's async indexer's is), or a view would look for those files.
            return self.tx.new_time()
        if self.version >= 8:
            n = 0
            while f"{n:017d}" in used:
                n += 1
            return f"{n:017d}"
        latest = self.data.timeline.latest_completed()
        base = latest.requested_time if latest else BEFORE_ALL_INSTANTS
        n = 10 + (PARTITION_ORDER.index(partition) if isinstance(partition, MdtPartition) else len(PARTITION_ORDER))
        while f"{base}{n:03d}" in used:
            n += 1
        return f"{base}{n:03d}"

    @staticmethod
    def _written_before(mdt: TableParts, name: str) -> bool:
        """Whether a completed metadata-table commit wrote files of this partition."""
        timeline = mdt.timeline
        return any(stat.partition_path == name for instant in timeline.completed()
                   if instant.action in (Action.DELTA_COMMIT, Action.COMMIT) for stat in timeline.commit_metadata(instant).write_stats())

    def _initialise(self, partition: MetadataPartition, snapshot: _Snapshot, report: IndexReport) -> None:
        mdt = self.tx.mdt()
        ts = self._initialisation_time(mdt, partition)
        self.tx.initialising.append((ts, partition))
        self.progress(f"building {partition.value} at metadata instant {ts}")
        groups = self._file_group_count(partition)
        if partition is MdtPartition.RECORD_INDEX and not self._existing_groups(partition):
            groups = record_index_file_groups(snapshot.key_count())
        written: list[tuple[str, str, int]] = []
        self.tx.write_pending(mdt, ts, Action.DELTA_COMMIT)
        self.fault(f"{partition.value}: after requested")
        self.mdt_storage.write_bytes(join(partition.value, ".hoodie_partition_metadata"),
                                     f"#partition metadata\ncommitTime={ts}\npartitionDepth=1\n".encode())
        spills = self._spill(groups, self._snapshot_cells(snapshot, partition, ts, groups))
        for index, spill in spills.items():
            fg = file_group_id(partition, index)
            empty_log = f".{fg}_{ts}.log.1_0-0-0"
            data = encode_block(LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: ts}, encode_delete_records([])))
            self.mdt_storage.write_bytes(join(partition.value, empty_log), data)
            written.append((fg, join(partition.value, empty_log), len(data)))
            if spill.count:
                base = join(partition.value, f"{fg}_{self.tx.write_token()}_{ts}.hfile")
                written.append((fg, base, self._write_hfile(base, spill)))
                report.records_written += spill.count
            self.fault(f"{partition.value}: after file group {index}")
        extra = {BUILT_THROUGH: snapshot.built_through, PENDING_AT_BUILD: ",".join(snapshot.pending)}
        if partition in (MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS):
            extra[INDEXED_COLUMNS] = ",".join(snapshot.columns)
        self.tx.complete(mdt, ts, Action.DELTA_COMMIT, written, "BULK_INSERT", extra)
        report.files_indexed = max(report.files_indexed, snapshot.file_count)

    def _file_group_count(self, partition: MetadataPartition) -> int:
        return len(self._existing_groups(partition)) or partition.default_file_groups

    def _existing_groups(self, partition: MetadataPartition) -> set[str]:
        if not self.mdt_storage.exists(partition.value):
            return set()
        files, _ = self.mdt_storage.list_dir(partition.value)
        groups = set()
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, (BaseFileName, LogFileName)):
                groups.add(parsed.file_id)
        return groups

    def _hfile(self, cells: list[tuple[bytes, bytes]]) -> bytes:
        writer = HFileWriter()
        writer.add_all(cells)
        return writer.finish(self._file_info())

    def _file_info(self) -> dict[bytes, bytes]:
        return {b"schema": self.schema_json.encode()}

    # Timeline files of the MDT ---------------------------------------------------------
    # Sync ------------------------------------------------------------------------------------
    def _synced(self, mdt: TableParts) -> Callable[[Instant], bool]:
        """Whether a completed data instant is already in the metadata table:
        it has its own delta commit, or the latest build's snapshot held it."""
        completed = {i.requested_time for i in mdt.timeline.completed()}
        coverage = build_coverage(mdt)
        return lambda instant: instant.requested_time in completed or coverage.covers(instant.requested_time)

    def _sync_locked(self, report: IndexReport) -> None:
        order = (lambda i: (i.completion_time or i.requested_time)) if self.data.timeline.uses_completion_time else (lambda i: i.requested_time)
        built = self._built()
        self._refuse_to_leave_indexes_behind(self.tx.mdt(), built)
        mdt = self.tx.roll_back_failed(self.tx.mdt(), report.notes)
        is_synced = self._synced(mdt)
        todo = sorted((i for i in self.data.timeline.completed() if not is_synced(i)), key=order)
        schema = table_schema(self.data)
        columns = self._indexed_columns(mdt, schema)
        for n, instant in enumerate(todo, 1):
            self.progress(f"syncing {instant.action} {instant.requested_time} ({n}/{len(todo)})")
            change = _Change.of(self.data, instant)
            if change is None:
                report.notes.append(f"{instant.action} {instant.requested_time}: nothing for the metadata table")
                continue
            self._apply(mdt, instant.requested_time, change, built, columns, schema, report)
            report.instants.append(instant.requested_time)
            mdt = self.tx.mdt()
        if todo:
            self._compact_locked(report, force=False)

    def _refuse_to_leave_indexes_behind(self, mdt: TableParts, built: list[MetadataPartition]) -> None:
        """Partitions this writer does not maintain (Hudi's expression indexes,
        secondary indexes on columns whose index text it does not write, a
        partitioned record index) would fall behind the
        instants a sync adds, and a planner trusting the metadata table's
        instants would then miss rows they do not index: refuse, before
        anything is written, and say how to go on."""
        unmaintained = sorted(set(self.data.config.metadata_partitions) - {p.value for p in built})
        if not unmaintained:
            return
        is_synced = self._synced(mdt)
        behind = [i.requested_time for i in self.data.timeline.completed()
                  if not is_synced(i) and (change := _Change.of(self.data, i)) is not None and (change.added or change.deleted)]
        if behind:
            names = ",".join(unmaintained)
            raise IndexWriteError(
                f"{self.storage.uri}: the metadata table holds {', '.join(unmaintained)}, which hudi-bridge does not maintain; "
                f"syncing {len(behind)} instant(s) ({behind[0]} ..) would leave them behind and plans would miss rows they do not "
                f"index. Sync with Apache Hudi, or set them aside first: hudi-bridge index drop {self.storage.uri} --partitions {names}")

    def _built(self) -> list[MetadataPartition]:
        """The listed partitions this writer keeps: its own, and secondary
        indexes defined on one column whose index text it writes."""
        listed = set(self.data.config.metadata_partitions)
        definitions = index_definitions(self.storage, self.data.config.raw)
        # A partitioned record index (Hudi 1.1) has file groups per data partition: not written here.
        own: list[MetadataPartition] = [p for p in PARTITION_ORDER if p.value in listed
                                        and not (p is MdtPartition.RECORD_INDEX and is_partitioned_record_index(definitions))]
        expressions = self.index_expressions is not None and any(p.startswith("expr_index_") for p in listed)
        whole = table_schema(self.data) if expressions or any(p.startswith("secondary_index_") for p in listed) else None
        schema = {f.name: f.type for f in whole} if whole is not None else {}
        for index in defined_secondary_indexes(definitions):
            if index.value in listed and index.column in schema:
                try:
                    check_indexable(index.column, schema[index.column])
                except IndexWriteError:
                    continue
                own.append(index)
        if expressions and whole is not None:
            own += [e for e in defined_expression_indexes(definitions) if e.value in listed and self._expression_type(e, whole) is not None]
        return own

    def _expression_type(self, index: ExpressionIndexPartition, schema: pa.Schema) -> pa.DataType | None:
        """f's result type, when this writer maintains the index: a function
        evaluated here, and for bloom filters a result whose text is Java's
        (strings, integers)."""
        source = leaf_type(schema, index.column)
        if self.index_expressions is None or source is None:
            return None
        dtype = self.index_expressions.result_type(index, source)
        if dtype is not None and index.index_type is ExpressionIndexType.BLOOM_FILTERS and not (
                pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_integer(dtype)):
            return None
        return dtype

    def _check_expression(self, asked: list[ExpressionIndexPartition]) -> None:
        """Before anything is written: table version 8+ (as Hudi), a column of
        the schema, a function evaluated here on its type, column_stats records."""
        if not asked:
            return
        if self.version < 8:
            raise IndexWriteError(f"{self.storage.uri}: expression indexes are Hudi 1.x (table version 8+); this table is version {self.version}")
        schema = table_schema(self.data)
        for index in asked:
            if leaf_type(schema, index.column) is None:
                raise IndexWriteError(f"expression index {index.value}: no column {index.column} in the table's schema")
            if self._expression_type(index, schema) is None:
                raise IndexWriteError(f"expression index {index.value}: {index.function} is not evaluated here on a "
                                      f"{leaf_type(schema, index.column)} column" + (
                                          " (bloom filters hold strings and integers)" if index.index_type is ExpressionIndexType.BLOOM_FILTERS else ""))

    def _check_secondary(self, asked: list[SecondaryIndexPartition], partitions: list[MetadataPartition]) -> None:
        """Before anything is written: a secondary index needs table version 8+,
        a column whose index text is known, and the record index it is read through."""
        if not asked:
            return
        if self.version < 8:
            raise IndexWriteError(f"{self.storage.uri}: secondary indexes are Hudi 1.x (table version 8+); this table is version {self.version}")
        schema = {f.name: f.type for f in table_schema(self.data)}
        for index in asked:
            check_indexable(index.column, schema.get(index.column))
        if MdtPartition.RECORD_INDEX not in partitions and MdtPartition.RECORD_INDEX.value not in self.data.config.metadata_partitions:
            raise IndexWriteError(f"{self.storage.uri}: a secondary index is read through the record index: build record_index too")

    def _define(self, indexes: list[SecondaryIndexPartition | ExpressionIndexPartition]) -> None:
        """Index definitions (`.hoodie/.index_defs/index.json`) for new secondary and expression indexes, as Hudi 1.1 writes them."""
        if not indexes:
            return
        definitions = index_definitions(self.storage, self.data.config.raw)
        for index in indexes:
            written = with_expression_definition(definitions, index) if isinstance(index, ExpressionIndexPartition) \
                else with_definition(definitions, index)
            self.storage.write_bytes(INDEX_DEFS_PATH, written)
            definitions = index_definitions(self.storage, {INDEX_DEFS_KEY: INDEX_DEFS_PATH})
        if self.data.config.raw.get(INDEX_DEFS_KEY) != INDEX_DEFS_PATH:
            self.tx.set_config({INDEX_DEFS_KEY: INDEX_DEFS_PATH})

    def _indexed_columns(self, mdt: TableParts, schema: pa.Schema) -> list[str]:
        for instant in reversed(mdt.timeline.completed()):
            if instant.action in (Action.DELTA_COMMIT, Action.COMMIT):  # a rebuild's compaction may set them
                extra = mdt.timeline.commit_metadata(instant).extra_metadata
                if INDEXED_COLUMNS in extra:
                    return [c for c in extra[INDEXED_COLUMNS].split(",") if c]
        return columns_to_index(schema)

    def _apply(self, mdt: TableParts, ts: str, change: _Change, built: list[MetadataPartition], columns: list[str],
               schema: pa.Schema, report: IndexReport) -> None:
        records: dict[MetadataPartition, dict[str, dict[str, Any]]] = {p: {} for p in built}
        files = records.get(MdtPartition.FILES, {})
        current = set(self._reader_partitions())
        for partition in sorted(set(change.added) | set(change.deleted)):
            entries = {name: (size, False) for name, size in change.added.get(partition, {}).items()}
            entries.update(dict.fromkeys(change.deleted.get(partition, ()), (0, True)))
            key = to_metadata_partition(partition)
            files[key] = files_record(key, entries)
        new_partitions = {p for p in change.added if p not in current}
        listed = {to_metadata_partition(p): (0, False) for p in new_partitions}
        listed.update({to_metadata_partition(p): (0, True) for p in change.dropped_partitions})
        if listed:
            files[ALL_PARTITIONS_KEY] = files_record(ALL_PARTITIONS_KEY, listed, all_partitions=True)
        new_ranges: dict[str, list[ColumnRange]] = {}
        # A file a later clean (synced in this same run) already removed gets no
        # statistics and gives no keys: that clean's sync writes its tombstone.
        present = {p: [n for n in names if self.storage.exists(join(p, n))] for p, names in change.added.items()} \
            if set(records) - {MdtPartition.FILES} else {}
        if MdtPartition.COLUMN_STATS in records or MdtPartition.PARTITION_STATS in records:
            targets = [(join(p, name), ts if name.startswith(".") and self.version < 8 else None)
                       for p, names in present.items() for name in names]
            for r in self._file_ranges(targets, columns, schema):
                new_ranges.setdefault(r.file_name, []).append(r)
            report.files_indexed += len(targets)
        if MdtPartition.COLUMN_STATS in records:
            stats = records[MdtPartition.COLUMN_STATS]
            for partition, added in change.added.items():
                for name in added:
                    for r in new_ranges.get(name, []):
                        stats[column_stats_key(r.column, partition, name)] = range_record(
                            column_stats_key(r.column, partition, name), r, self.version)
            for partition, deleted in change.deleted.items():
                for name in deleted:
                    for column in columns:
                        key = column_stats_key(column, partition, name)
                        dtype = leaf_type(schema, column) or pa.string()
                        stats[key] = range_record(key, ColumnRange(name, column, dtype, None, None, 0, 0), self.version, deleted=True)
        if MdtPartition.RECORD_INDEX in records:
            records[MdtPartition.RECORD_INDEX].update(self._record_locations(ts, change, present))
        for expression_index in [p for p in records if isinstance(p, ExpressionIndexPartition)]:
            records[expression_index].update(self._expression_changes(ts, change, expression_index, present, schema))
        secondary = [p for p in records if isinstance(p, SecondaryIndexPartition)]
        if secondary:
            for secondary_index, found in self._secondary_changes(ts, change, secondary).items():
                records[secondary_index].update(found)
        if MdtPartition.BLOOM_FILTERS in records:
            extension = self.data.config.base_file_format.extension
            blooms = records[MdtPartition.BLOOM_FILTERS]
            blooms.update(bloom_filter_records(self.storage, [(p, n) for p, names in present.items() for n in names], ts, extension))
            blooms.update(removed_base_file_bloom_records([(p, n) for p, names in change.deleted.items() for n in names], ts, extension))
        if MdtPartition.PARTITION_STATS in records:
            touched = sorted((set(change.added) | set(change.deleted)) - change.dropped_partitions)
            records[MdtPartition.PARTITION_STATS].update(
                self._partition_stats(ts, touched, columns, schema, new_ranges))
        self.tx.write_pending(mdt, ts, Action.DELTA_COMMIT)
        self.fault(f"{ts}: after requested")
        written: list[tuple[str, str, int]] = []
        for target, by_key in records.items():
            if not by_key:
                continue
            groups = self._file_group_count(target)
            cells: dict[int, list[tuple[bytes, bytes]]] = {}
            for key, record in by_key.items():
                cells.setdefault(file_group_index(target.routing_key(key), groups), []).append(
                    (key.encode(), encode_record(record, self.schema_json)))
            for index, group_cells in sorted(cells.items()):
                fg = file_group_id(target, index)
                name = self._log_name(mdt, target, fg, ts)
                block = LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: self.schema_json},
                                 self._hfile(sorted(group_cells)))
                data = encode_block(block)
                self.mdt_storage.write_bytes(join(target.value, name), data)
                written.append((fg, join(target.value, name), len(data)))
                report.records_written += len(group_cells)
                self.fault(f"{ts}: after log {target.value}/{index}")
        self.tx.complete(mdt, ts, Action.DELTA_COMMIT, written, "UPSERT_PREPPED")
        if not written:
            log.debug("instant %s changed nothing the metadata table holds", ts)

    def _secondary_changes(self, ts: str, change: _Change,
                           indexes: list[SecondaryIndexPartition]) -> dict[SecondaryIndexPartition, dict[str, dict[str, Any]]]:
        """Secondary index records for what one instant did: the (value, record
        key) pairs of the file groups it changed, before and after it; those
        gone are written deleted, the new ones live. Where a state cannot be
        read back (a later clean removed its files), and after a rollback,
        every pair of the touched partitions' latest slices is written live:
        a stale pair only keeps a file group, a missing one would lose rows."""
        out: dict[SecondaryIndexPartition, dict[str, dict[str, Any]]] = {p: {} for p in indexes}
        table = HudiTable(self.data.storage, self.data.config, self.data.timeline, listing=StorageListing(self.data.storage))
        rewrite = sorted(change.rekeyed_partitions)
        touched = sorted(change.added) if change.keyed else []
        if touched:
            earlier = [i.requested_time for i in self.data.timeline.completed() if i.requested_time < ts]
            try:
                before = table.view(as_of=max(earlier)).latest_file_slices(touched) if earlier else []
                after = table.view(as_of=ts).latest_file_slices(touched)
            except CleanedFilesError:
                rewrite = sorted({*rewrite, *touched})
            else:
                gone, came = changed_slices(before, after)
                for index in indexes:
                    was, now = entries(table, gone, index.column), entries(table, came, index.column)
                    out[index].update(records_of([(v, k, True) for v, k in sorted(was - now, key=str)]
                                                 + [(v, k, False) for v, k in sorted(now - was, key=str)]))
        if rewrite:
            current = table.view().latest_file_slices(rewrite)
            for index in indexes:
                out[index].update(records_of((v, k, False) for v, k in entries(table, current, index.column)))
        return out

    def _expression_changes(self, ts: str, change: _Change, index: ExpressionIndexPartition, present: dict[str, list[str]],
                            schema: pa.Schema) -> dict[str, dict[str, Any]]:
        """An expression index's records for one instant: f(column) of the
        files it wrote, tombstones for those it removed, and the touched
        partitions' partition-level records again."""
        assert self.index_expressions is not None
        dtype = self._expression_type(index, schema)
        assert dtype is not None
        counts = blocks_counting(ts if self.version < 8 else None, _completed(self.data))
        if index.index_type is ExpressionIndexType.BLOOM_FILTERS:
            blooms = dict(bloom_records(self.storage, [(p, n) for p, names in present.items() for n in names], index,
                                        self.index_expressions, counts, schema, ts))
            blooms.update(removed_bloom_filter_records([(p, n) for p, names in change.deleted.items() for n in sorted(names)], ts))
            return blooms

        def ranges_of(paths: Sequence[str]) -> list[ColumnRange]:
            assert self.index_expressions is not None
            return expression_ranges(self.storage, paths, index, self.index_expressions, counts, schema)

        out: dict[str, dict[str, Any]] = {}
        new_ranges: dict[str, list[ColumnRange]] = {}
        for partition, names in present.items():
            found = ranges_of([join(partition, n) for n in names])
            out.update(file_records(index, partition, found, self.version))
            new_ranges.update({r.file_name: [r] for r in found})
        for partition, deleted in change.deleted.items():
            gone = [ColumnRange(name, index.column, dtype, None, None, 0, 0) for name in sorted(deleted)]
            out.update(file_records(index, partition, gone, self.version, deleted=True))
        touched = sorted((set(change.added) | set(change.deleted)) - change.dropped_partitions)
        out.update(self._partition_stats(ts, touched, [index.column], pa.schema([(index.column, dtype)]), new_ranges,
                                         source=index.value, ranges_of=ranges_of, key_of=partition_stat_key))
        return out

    def _record_locations(self, ts: str, change: _Change, present: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
        """record_index records for what one instant did: the keys of the files
        it wrote that are still there (a removed one's keys are in newer
        files); after a rollback, the keys of the touched partitions' latest
        slices (a rolled-back clustering may have moved keys back)."""
        targets = []
        if change.keyed:
            extension = self.data.config.base_file_format.extension
            for partition, names in present.items():
                for name in names:
                    parsed = classify(name, extension, join(partition, name))
                    if isinstance(parsed, (BaseFileName, LogFileName)):
                        targets.append((join(partition, name), partition, parsed.file_id, ts))
        if change.rekeyed_partitions:
            targets += _key_targets(latest_slices_from_storage(self.data, ts, sorted(change.rekeyed_partitions)))
        found = keys_of_files(self.storage, targets, blocks_counting(ts if change.keyed else None, _completed(self.data)),
                              RecordKeyRule.of(self.data.config))
        return dict(record_index_entries(found, timeline_is_utc(self.data.config)))

    def _log_name(self, mdt: TableParts, partition: MetadataPartition, fg: str, ts: str) -> str:
        """v8+: one log file per writing instant. v6: a new log version in the
        latest slice (appending to a file would leave half a block on a crash)."""
        if self.version >= 8:
            return f".{fg}_{ts}.log.1_{self.tx.write_token()}"
        files, _ = self.mdt_storage.list_dir(partition.value)
        base_instant, version = "", 0
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, BaseFileName) and parsed.file_id == fg and parsed.instant_time > base_instant:
                base_instant, version = parsed.instant_time, 0
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, LogFileName) and parsed.file_id == fg and parsed.instant_time >= base_instant:
                if parsed.instant_time > base_instant:
                    base_instant, version = parsed.instant_time, 0
                version = max(version, parsed.version)
        return f".{fg}_{base_instant or ts}.log.{version + 1}_{self.tx.write_token()}"

    def _reader_partitions(self) -> list[str]:
        reader = MetadataTableReader(self.data)
        try:
            record = reader.read(MdtPartition.FILES.value, KeyQuery(keys=[ALL_PARTITIONS_KEY])).get(ALL_PARTITIONS_KEY)
        finally:
            reader.close()
        return [from_metadata_partition(p) for p, e in ((record.files or {}) if record else {}).items() if not e.is_deleted]

    def _partition_stats(self, ts: str, partitions: list[str], columns: list[str], schema: pa.Schema,
                         new_ranges: dict[str, list[ColumnRange]], source: str = MdtPartition.COLUMN_STATS.value,
                         ranges_of: Callable[[Sequence[str]], list[ColumnRange]] | None = None,
                         key_of: Callable[[str, str], str] = partition_stats_key) -> dict[str, dict[str, Any]]:
        """partition_stats of the touched partitions: a roll-up of their latest
        slices as of `ts`, from the file-level stats already held in `source`
        plus the new ones (an expression index keeps both in its own partition)."""
        if not partitions:
            return {}
        out: dict[str, dict[str, Any]] = {}
        reader = MetadataTableReader(self.data)  # one reader for every run: opening the metadata table costs seconds at scale
        try:
            for chunk in (partitions[i:i + PARTITION_STATS_PER_RUN] for i in range(0, len(partitions), PARTITION_STATS_PER_RUN)):
                self._roll_up_run(out, reader, ts, chunk, columns, schema, new_ranges, source, ranges_of, key_of)
        finally:
            reader.close()
        return out

    def _roll_up_run(self, out: dict[str, dict[str, Any]], reader: MetadataTableReader, ts: str, chunk: list[str], columns: list[str],
                     schema: pa.Schema,
                     new_ranges: dict[str, list[ColumnRange]], source: str, ranges_of: Callable[[Sequence[str]], list[ColumnRange]] | None,
                     key_of: Callable[[str, str], str]) -> None:
        """partition_stats of a run of partitions into `out`: their slices and
        held statistics are read for the run only, so memory follows a run,
        not the table (a commit may touch every partition)."""
        slices_of: dict[str, list[FileSlice]] = {}
        for s in latest_slices_from_storage(self.data, ts, chunk):
            slices_of.setdefault(s.partition, []).append(s)
        held = self._held_ranges(reader, source, chunk, columns, schema)
        held.update(new_ranges)  # the new files' ranges win
        missing = [path for p in chunk for s in slices_of.get(p, []) for path in s.files if path.rsplit("/", 1)[-1] not in held]
        if missing:
            extra = ranges_of(missing) if ranges_of is not None else self._file_ranges([(p, None) for p in missing], columns, schema)
            for r in extra:
                held.setdefault(r.file_name, []).append(r)
        for partition in chunk:
            ranges = [r for s in slices_of.get(partition, []) for path in s.files for r in held.get(path.rsplit("/", 1)[-1], [])]
            for column, r in roll_up(ranges, partition).items():
                key = key_of(column, partition)
                out[key] = range_record(key, r, self.version, partition_stats=True)

    def _held_ranges(self, reader: MetadataTableReader, source: str, partitions: list[str], columns: list[str],
                     schema: pa.Schema) -> dict[str, list[ColumnRange]]:
        """File name -> the live ranges `source` holds for these partitions' files."""
        try:
            held = reader.read(source, KeyQuery(prefixes=[column_stats_key(c, p, "")[:24] for c in columns for p in partitions]))
        except HudiError:
            held = {}
        types: dict[str, pa.DataType] = {}
        by_file: dict[str, list[ColumnRange]] = {}
        for record in held.values():
            stats = record.column_stats
            if stats and not stats.is_deleted:
                dtype = types.get(stats.column_name)
                if dtype is None:
                    dtype = types[stats.column_name] = leaf_type(schema, stats.column_name) or pa.string()
                by_file.setdefault(stats.file_name, []).append(_range_of(stats, dtype))
        return by_file

    # Compaction and rebuilds: new base files swapped in by one commit -----------------------------
    def _compact_locked(self, report: IndexReport, force: bool) -> None:
        mdt = self.tx.roll_back_failed(self.tx.mdt(), report.notes)
        pending = [i for i in self.data.timeline.pending() if not i.is_compaction]
        built = self._built()
        due = []
        reader = MetadataTableReader(self.data)
        try:
            for partition in built:
                slices = reader.file_slices(partition.value)
                if any(len(s.log_files) > self.compact_after for s in slices) or force and any(s.log_files for s in slices):
                    due.append(partition)
            if not due:
                return
            if pending:
                report.notes.append(f"compaction of {', '.join(p.value for p in due)} deferred: data instants "
                                    f"{', '.join(i.requested_time for i in pending)} are pending")
                return
            merged = {p: reader.read(p.value, KeyQuery()) for p in due}
            ts, slices_of = self._request_compaction(mdt, reader, due)
        finally:
            reader.close()
        written: list[tuple[str, str, int]] = []
        for partition in due:
            groups = len({s.file_id for s in slices_of[partition]})
            cells = ((key, encode_record(_raw(record), self.schema_json)) for key, record in merged[partition].items() if not _is_dropped(record))
            self._write_bases(partition, ts, groups, routed(partition, groups, cells), written, "compaction")
            report.compacted.append(partition.value)
        self.tx.complete(mdt, ts, Action.COMMIT, written, "COMPACT", compacted=True)

    def _rebuild(self, partitions: list[MetadataPartition], snapshot: _Snapshot, report: IndexReport) -> None:
        """Every file group of each partition gets a new base file from the
        snapshot; the completed compaction commit swaps them all in at once
        (Hudi's readers take compaction instants as valid). Until then readers
        see the old slices; a crash leaves a pending instant the next run rolls back."""
        mdt = self.tx.mdt()
        reader = MetadataTableReader(self.data)
        try:
            ts, slices_of = self._request_compaction(mdt, reader, partitions)
        finally:
            reader.close()
        self.progress(f"rebuilding {', '.join(p.value for p in partitions)} at metadata instant {ts}")
        written: list[tuple[str, str, int]] = []
        for partition in partitions:
            groups = len({s.file_id for s in slices_of[partition]}) or self._file_group_count(partition)
            report.records_written += self._write_bases(partition, ts, groups, self._snapshot_cells(snapshot, partition, ts, groups),
                                                        written, "rebuild")
            report.partitions.append(partition.value)
        extra = {INDEXED_COLUMNS: ",".join(snapshot.columns)} if {MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS} & set(partitions) else {}
        self.tx.complete(mdt, ts, Action.COMMIT, written, "COMPACT", extra, compacted=True)
        report.files_indexed = max(report.files_indexed, snapshot.file_count)
        report.notes.append(f"rebuilt beside the old file slices and swapped in by metadata instant {ts}: {', '.join(p.value for p in partitions)}")

    def _request_compaction(self, mdt: TableParts, reader: MetadataTableReader,
                            partitions: Sequence[MetadataPartition]) -> tuple[str, dict[MetadataPartition, list[FileSlice]]]:
        """A new compaction instant (requested and inflight) over the partitions' current slices."""
        ts = self.tx.new_time() if self.version >= 8 else (reader.latest_instant + "001")
        slices_of = {p: reader.file_slices(p.value) for p in partitions}
        operations: list[dict[str, Any]] = [{"baseInstantTime": s.base_instant, "deltaFilePaths": [f.rsplit("/", 1)[-1] for f in s.log_files],
                                             "dataFilePath": s.base_file_name, "fileId": s.file_id, "partitionPath": p.value, "metrics": {}}
                                            for p in partitions for s in slices_of[p]]
        plan = encode_avro_instant(COMPACTION_PLAN, {"operations": operations, "extraMetadata": None, "version": 2})
        self.tx.requested.append(ts)
        self.mdt_storage.write_bytes(join(mdt.config.timeline_path, f"{ts}.compaction.requested"), plan)
        self.mdt_storage.write_bytes(join(mdt.config.timeline_path, f"{ts}.compaction.inflight"), b"")
        self.fault("compaction: after requested")
        return ts, slices_of

    def _write_bases(self, partition: MetadataPartition, ts: str, groups: int, cells: Iterable[RoutedCell],
                     written: list[tuple[str, str, int]], step: str) -> int:
        """One HFile per file group (empty ones too: each replaces its group's
        old slice), cells routed by Hudi's key hash; returns the cells written."""
        spills = self._spill(groups, cells)
        for index, spill in spills.items():
            fg = file_group_id(partition, index)
            name = join(partition.value, f"{fg}_{self.tx.write_token()}_{ts}.hfile")
            written.append((fg, name, self._write_hfile(name, spill)))
            self.fault(f"{step}: after {partition.value}/{index}")
        return sum(spill.count for spill in spills.values())

    def _snapshot_cells(self, snapshot: _Snapshot, partition: MetadataPartition, ts: str, groups: int) -> Iterator[RoutedCell]:
        """A partition's cells from the snapshot, routed; column_stats cells
        are made where the engine read the files (on Spark: the executors)."""
        if partition is MdtPartition.COLUMN_STATS:
            return snapshot.column_stats_cells(ColumnStatsCells(self.version, groups, self.schema_json))
        return routed(partition, groups, ((key, encode_record(record, self.schema_json))
                                          for key, record in snapshot.records(partition, self.version, ts)))

    def _spill(self, groups: int, cells: Iterable[RoutedCell]) -> dict[int, CellSpill]:
        """Cells gathered per file group, sorted within the memory budget."""
        spills = {i: CellSpill(max(1, self.memory_budget // groups)) for i in range(groups)}
        for index, key, value in cells:
            spills[index].add(key, value)
        return spills

    def _write_hfile(self, name: str, spill: CellSpill) -> int:
        """An HFile of the spill's cells in key order, written whole; its size."""
        with self.mdt_storage.write_stream(name) as out:
            hfile = HFileWriter(sink=out)
            hfile.add_all(spill.sorted_cells())
            return hfile.close(self._file_info())

    # Drop -------------------------------------------------------------------------------------
    def _drop(self, partitions: list[MdtPartition | str], report: IndexReport) -> None:
        if not partitions:
            return
        names = {p.value if isinstance(p, MdtPartition) else p for p in partitions}
        if MdtPartition.FILES.value in names:
            names = set(self.data.config.metadata_partitions) | names  # nothing is read without `files`
        remaining = [p for p in self.data.config.metadata_partitions if p not in names]
        self.tx.set_config({METADATA_PARTITIONS_KEY: ",".join(remaining) or None,
                          METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(p for p in self._inflight() if p not in names) or None})
        self.fault("drop: after config update")
        if MdtPartition.FILES.value in names:
            if self.storage.exists(METADATA_FOLDER):
                self.storage.filesystem.delete_dir(self.storage.full_path(METADATA_FOLDER))
        else:
            for name in names:
                if self.mdt_storage.exists(name):
                    self.storage.filesystem.delete_dir(self.mdt_storage.full_path(name))
        report.partitions.extend(sorted(names))


# Helpers --------------------------------------------------------------------------------------
def _completed(data: TableParts) -> frozenset[str]:
    """Data instants whose log blocks count when a whole log file is read."""
    return frozenset(i.requested_time for i in data.timeline.completed())


def check_columns(data: TableParts, columns: Sequence[str] | None) -> None:
    """Columns asked for that the table's schema lacks fail before any write."""
    if columns:
        _check_columns(data, table_schema(data), columns)


def _check_columns(data: TableParts, schema: pa.Schema, columns: Sequence[str]) -> None:
    unknown = [c for c in columns if leaf_type(schema, c) is None]
    if unknown and schema.names:
        raise IndexWriteError(f"{data.storage.uri}: no column {', '.join(map(repr, unknown))} in the table schema")


def table_schema(data: TableParts) -> pa.Schema:
    """The table's Arrow schema (latest commit's, meta fields included when populated)."""
    try:
        schema = avro_to_arrow_schema(data.timeline.avro_schema())
    except (HudiError, ValueError, KeyError):
        schema = pa.schema([])
    return with_meta_fields(schema) if data.config.populate_meta_fields and "_hoodie_commit_time" not in schema.names else schema


def _range_of(stats: Any, dtype: pa.DataType) -> ColumnRange:
    return ColumnRange(stats.file_name, stats.column_name, dtype, stats.min_value, stats.max_value,
                       stats.null_count or 0, stats.value_count or 0, stats.total_size or 0, stats.total_uncompressed_size or 0)


def latest_slices_from_storage(data: TableParts, as_of: str, partitions: list[str] | None = None) -> list[FileSlice]:
    """Latest slices as of a data instant, listed from storage. When a later
    clean (synced in this same run) removed files of that state, today's
    slices: that clean's sync writes these partitions again."""
    table = HudiTable(data.storage, data.config, data.timeline, listing=StorageListing(data.storage))
    try:
        return table.view(as_of=as_of).latest_file_slices(partitions)
    except CleanedFilesError:
        return table.view().latest_file_slices(partitions)


def _key_targets(slices: list[FileSlice]) -> list[tuple[str, str, str, str]]:
    """(path, partition, file id, base instant) of every file of these slices, for `keys_of_files`."""
    return [(path, s.partition, s.file_id, s.base_instant) for s in slices for path in s.files]


def timeline_is_utc(config: TableConfig) -> bool:
    """Whether instant times are UTC (`hoodie.table.timeline.timezone`; LOCAL by default)."""
    return config.raw.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC"


def record_index_entries(found: Sequence[FileKeys], utc: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, record_index record) of every key of these files, once each: a
    key in several files (a base file and its logs) takes the last file's place."""
    if not found:
        return
    keys = pa.chunked_array([f.keys for f in found], pa.string())
    owner = pa.chunked_array([pa.array(np.full(len(f.keys), n, np.int32)) for n, f in enumerate(found)], pa.int32())
    table = pa.table({"key": keys, "owner": owner}).drop_null()
    last = table.group_by("key", use_threads=False).aggregate([("owner", "max")])
    millis = [instant_epoch_millis(f.instant, utc) for f in found]
    for key, n in zip(last.column("key").to_pylist(), last.column("owner_max").to_pylist()):
        file = found[n]
        yield key, record_index_record(key, file.partition, file.file_id, millis[n])


def _is_dropped(record: MetadataRecord) -> bool:
    """A deleted entry, which a compaction leaves out as Hudi's does."""
    if record.column_stats and record.column_stats.is_deleted:
        return True
    return any(isinstance(meta := record.raw.get(name), dict) and bool(meta.get("isDeleted"))
               for name in ("BloomFilterMetadata", "SecondaryIndexMetadata"))


def _raw(record: MetadataRecord) -> dict[str, Any]:
    """The merged record in the writer's form (files maps without tombstones)."""
    data = dict(record.raw)
    data["key"] = record.key
    if record.files is not None:
        data["filesystemMetadata"] = {n: {"size": e.size, "isDeleted": False} for n, e in record.files.items() if not e.is_deleted}
    if record.column_stats is not None and isinstance(data.get("ColumnStatsMetadata"), dict):
        stats = dict(data["ColumnStatsMetadata"])
        cs = record.column_stats
        stats.update(valueCount=cs.value_count, nullCount=cs.null_count, totalSize=cs.total_size,
                     totalUncompressedSize=cs.total_uncompressed_size)
        data["ColumnStatsMetadata"] = stats
    return data


@dataclass
class _Change:
    """What one data instant did to the files of the table."""

    added: dict[str, dict[str, int]]
    deleted: dict[str, set[str]]
    dropped_partitions: set[str]
    keyed: bool = False  # the added files' keys go to the record index (not for a compaction: keys stay put)
    rekeyed_partitions: set[str] = field(default_factory=set)  # record-index locations to write again

    @classmethod
    def of(cls, data: TableParts, instant: Instant) -> _Change | None:
        timeline = data.timeline
        if instant.action.writes_data:
            added: dict[str, dict[str, int]] = {}
            for stat in timeline.commit_metadata(instant).write_stats():
                added.setdefault(stat.partition_path, {})[stat.file_name] = stat.file_size_in_bytes or 0
                for path, size in stat.cdc_stats:  # change-data logs: Hudi's files partition lists them too
                    added[stat.partition_path][path.rpartition("/")[2]] = size
            return cls(added, {}, set(), keyed=not instant.is_compaction)
        if instant.action is Action.CLEAN:
            clean = timeline.clean_metadata(instant)
            return cls({}, clean.deleted_file_names(), clean.deleted_partitions())
        if instant.action is Action.ROLLBACK:
            rollback = timeline.rollback_metadata(instant)
            deleted = {p: set(names) for p, names in rollback.deleted_files.items() if names}
            return cls({}, deleted, set(), rekeyed_partitions=set(deleted))
        if instant.action is Action.RESTORE:
            raise IndexWriteError(f"{timeline.instant_file(instant)}: a restore is not synced incrementally; "
                                  "rebuild the metadata table with `hudi-bridge index build --rebuild`")
        return None


@dataclass
class _Snapshot:
    """The table's committed files at one instant, and their statistics
    computed a batch of files at a time (only one batch is held)."""

    data: TableParts
    engine: StatsEngine
    columns: list[str]
    files: dict[str, dict[str, int]]
    built_through: str
    pending: list[str]
    schema: pa.Schema
    batch_files: int | None = None  # None: the engine's
    progress: Callable[[str], None] = lambda message: None
    rollups_wanted: bool = True  # partition_stats is built from the same pass
    _rollups: dict[str, dict[str, ColumnRange]] | None = None  # partition -> column -> range over latest slices
    _keys: list[FileKeys] | None = None  # record keys of the latest slices' files
    expressions: IndexExpressions | None = None  # evaluates expression indexes

    @classmethod
    def take(cls, data: TableParts, engine: StatsEngine, columns: Sequence[str] | None,
             batch_files: int | None = None, progress: Callable[[str], None] | None = None,
             rollups_wanted: bool = True) -> _Snapshot:
        latest = data.timeline.latest_completed()
        built_through = latest.requested_time if latest else ""
        schema = table_schema(data)
        listing = StorageListing(data.storage)
        extension = data.config.base_file_format.extension
        files: dict[str, dict[str, int]] = {}
        for partition, stored in listing.files_for(listing.partitions()).items():
            kept = {f.name: f.size for f in committed_files(data, stored, extension)}
            if kept:
                files[partition] = kept
        chosen = list(columns) if columns else columns_to_index(schema)
        _check_columns(data, schema, chosen)
        pending = sorted(i.requested_time for i in data.timeline.pending())
        return cls(data, engine, chosen, files, built_through, pending, schema, batch_files and max(1, batch_files),
                   progress or (lambda message: None), rollups_wanted)

    @property
    def file_count(self) -> int:
        return sum(len(f) for f in self.files.values())

    def file_keys(self) -> list[FileKeys]:
        """Record keys of every file of the latest slices, base file first, then logs in order."""
        if self._keys is None:
            targets = _key_targets(latest_slices_from_storage(self.data, self.built_through)) if self.built_through else []
            self.progress(f"reading the record keys of {len(targets)} files")
            self._keys = keys_of_files(self.data.storage, targets, blocks_counting(None, _completed(self.data)),
                                       RecordKeyRule.of(self.data.config))
        return self._keys

    def key_count(self) -> int:
        return sum(len(f.keys) for f in self.file_keys())

    def _latest_slice_files(self) -> dict[str, str]:
        """File name -> partition of every file in a latest slice (what partition_stats covers)."""
        if not self.built_through:
            return {}
        return {path.rsplit("/", 1)[-1]: s.partition
                for s in latest_slices_from_storage(self.data, self.built_through) for path in s.files}

    def _range_batches(self, then: ColumnStatsCells | None = None) -> Iterator[list[RoutedCell]]:
        """Each file's column_stats cells made by `then` (none without it), a
        batch of files at a time; folds the latest slices' ranges into
        per-partition roll-ups on the way."""
        targets = [(p, name) for p, names in self.files.items() for name in names]
        latest = self._latest_slice_files() if self.rollups_wanted else {}
        rollups: dict[str, dict[str, ColumnRange]] = {}
        completed = _completed(self.data)
        batch_files = self.batch_files or self.engine.batch_files
        for start in range(0, len(targets), batch_files):
            batch = targets[start : start + batch_files]
            found = self.engine.map_ranges(self.data.storage.uri, [(join(p, n), None) for p, n in batch], self.columns, self.schema,
                                           completed, self.data.storage.storage_options, then or ranges_only)
            for ranges, cells in found:
                for r in ranges:
                    p = latest.get(r.file_name)
                    if p is not None:
                        per_column = rollups.setdefault(p, {})
                        per_column[r.column] = merge_ranges(per_column.get(r.column), r)
                yield cells
            self.progress(f"statistics of {min(start + batch_files, len(targets))} of {len(targets)} files")
        self._rollups = {p: {c: replace(r, file_name=p) for c, r in per_column.items()} for p, per_column in rollups.items()}

    def column_stats_cells(self, then: ColumnStatsCells) -> Iterator[RoutedCell]:
        """Every committed file's column_stats cells, routed (`then` makes them where the files were read)."""
        for cells in self._range_batches(then):
            yield from cells

    def _expression_records(self, index: ExpressionIndexPartition, version: int, instant: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """f(column) of every committed file, then one roll-up per partition
        over its latest slices; or each file's bloom filter of f(column)."""
        assert self.expressions is not None
        counts = blocks_counting(None, _completed(self.data))
        if index.index_type is ExpressionIndexType.BLOOM_FILTERS:  # stamped with the building instant, as the bloom_filters partition
            yield from bloom_records(self.data.storage, [(p, n) for p, names in sorted(self.files.items()) for n in names], index,
                                     self.expressions, counts, self.schema, instant)
            return
        latest = self._latest_slice_files()
        rollups: dict[str, ColumnRange] = {}
        for partition, names in sorted(self.files.items()):
            self.progress(f"evaluating {index.function}({index.column}) over {len(names)} files of {partition or 'the table'}")
            found = expression_ranges(self.data.storage, [join(partition, n) for n in names], index, self.expressions, counts, self.schema)
            yield from file_records(index, partition, found, version)
            for r in found:
                if latest.get(r.file_name) == partition:
                    rollups[partition] = merge_ranges(rollups.get(partition), replace(r, file_name=partition))
        yield from partition_records(index, rollups, version)

    def records(self, partition: MetadataPartition, version: int, instant: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, record) of one MDT partition written at `instant`, produced a batch at a time."""
        if isinstance(partition, ExpressionIndexPartition):
            yield from self._expression_records(partition, version, instant)
            return
        if isinstance(partition, SecondaryIndexPartition):
            slices = latest_slices_from_storage(self.data, self.built_through) if self.built_through else []
            self.progress(f"reading {partition.column} of {len(slices)} file slices")
            table = HudiTable(self.data.storage, self.data.config, self.data.timeline, listing=StorageListing(self.data.storage))
            yield from records_of((v, k, False) for v, k in sorted(entries(table, slices, partition.column), key=str))
            return
        if partition is MdtPartition.FILES:
            for p, names in self.files.items():
                key = to_metadata_partition(p)
                yield key, files_record(key, {n: (size, False) for n, size in names.items()})
            yield ALL_PARTITIONS_KEY, files_record(ALL_PARTITIONS_KEY, {to_metadata_partition(p): (0, False) for p in self.files},
                                                   all_partitions=True)
        elif partition is MdtPartition.RECORD_INDEX:
            yield from record_index_entries(self.file_keys(), timeline_is_utc(self.data.config))
        elif partition is MdtPartition.BLOOM_FILTERS:  # stamped with the building instant, as Hudi's initialisation does
            yield from bloom_filter_records(self.data.storage, [(p, n) for p, names in self.files.items() for n in names], instant,
                                            self.data.config.base_file_format.extension)
        else:
            if self._rollups is None:
                for _ in self._range_batches():
                    pass
            for p, per_column in sorted((self._rollups or {}).items()):
                for column, r in per_column.items():
                    key = partition_stats_key(column, p)
                    yield key, range_record(key, r, version, partition_stats=True)
