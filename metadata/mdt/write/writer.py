"""Build and keep a table's metadata table (RFC-15 and RFC-27, write side),
in Hudi's formats: one partition writer per metadata partition
(`metadata.mdt.write.partitions`), one transaction around them.

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
from collections.abc import Callable, Mapping, Sequence

from metadata.errors import IndexWriteError
from metadata.mdt.expression_index import ExpressionIndexPartition, IndexExpressions
from metadata.mdt.file_groups import BUILD_ORDER, PARTITION_ORDER, MdtPartition, MetadataPartition, SecondaryIndexPartition
from metadata.mdt.file_stats import is_indexable
from metadata.mdt.indexes import index_definitions, is_partitioned_record_index
from metadata.mdt.reader import METADATA_FOLDER
from metadata.mdt.record_schema import record_schema_json
from metadata.mdt.stats_engine import LocalStatsEngine, StatsEngine
from metadata.mdt.synced_instants import BUILT_THROUGH, PENDING_AT_BUILD
from metadata.mdt.write.cell_spill import DEFAULT_BUDGET_BYTES
from metadata.mdt.write.change import TableChange
from metadata.mdt.write.compaction import Compaction
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.file_group_io import FileGroupFiles, Written
from metadata.mdt.write.partitions import partition_writer
from metadata.mdt.write.report import IndexReport
from metadata.mdt.write.scope import INDEXED_COLUMNS, IndexScope
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import SyncInputs
from metadata.mdt.write.table_inputs import check_columns, table_schema
from metadata.mdt.write.transaction import WRITER_KEY, Fault, MetadataTransaction
from metadata.table.config import METADATA_PARTITIONS_INFLIGHT_KEY, METADATA_PARTITIONS_KEY
from metadata.table.stored_table import TableParts
from metadata.timeline.instant import Action, Instant

log = logging.getLogger(__name__)

DEFAULT_COMPACT_AFTER = 10  # hoodie.metadata.compact.max.delta.commits
# Hudi writes a metadata table by default (0.11 on); a table with commits and none has a writer with it off, which deletes ours.
WRITER_KEEPS_NONE = ("the table's writer keeps no metadata table: Apache Hudi with hoodie.metadata.enable=false deletes this one on "
                     "its next commit (and empties hoodie.table.metadata.partitions); keep hoodie.metadata.enable=true on the writer, "
                     "or run `hudi-bridge index build` after its writes (docs/concurrency.md)")

# The writer option that keeps each partition we build (Hudi 1.2 deletes a partition its writer has not enabled).
WRITER_ENABLES = {MdtPartition.COLUMN_STATS: "hoodie.metadata.index.column.stats.enable=true",
                  MdtPartition.PARTITION_STATS: "hoodie.metadata.index.partition.stats.enable=true",
                  MdtPartition.BLOOM_FILTERS: "hoodie.metadata.index.bloom.filter.enable=true",
                  MdtPartition.RECORD_INDEX: "hoodie.metadata.global.record.level.index.enable=true"}

__all__ = ["DEFAULT_COMPACT_AFTER", "IndexReport", "MetadataTableWriter"]


class MetadataTableWriter:
    def __init__(self, path: str, engine: StatsEngine | None = None, fault: Fault | None = None,
                 compact_after: int = DEFAULT_COMPACT_AFTER, progress: Callable[[str], None] | None = None,
                 memory_budget: int = DEFAULT_BUDGET_BYTES, batch_files: int | None = None,
                 storage_options: Mapping[str, str] | None = None, index_expressions: IndexExpressions | None = None,
                 writer_options: Mapping[str, str] | None = None, wait_seconds: float | None = None) -> None:
        """`memory_budget`: bytes of encoded records a build holds before
        spilling sorted runs to temporary files; `batch_files`: files whose
        statistics are computed (and held) at once (None: the engine's choice); `index_expressions`
        evaluates expression indexes (without it they are not maintained); `writer_options`: Hudi
        writer options (lock provider, heartbeat) over the table's; `wait_seconds`: how long to wait
        for a Hudi writer at work when no lock is shared (docs/concurrency.md)."""
        data = TableParts.load(path, storage_options=storage_options)
        if not data.config.base_file_format.has_parquet_footers:
            raise IndexWriteError(f"{data.storage.uri}: its base files are {data.config.base_file_format.value}; hudi-bridge builds the "
                                  "metadata table from Parquet footers, which they lack (Hudi keeps no statistics for them either); "
                                  "Hudi's own writer keeps this table's metadata table")
        self.version = data.config.version
        self.tx = MetadataTransaction(data, record_schema_json(self.version), fault, writer_options, wait_seconds)
        self.storage = self.tx.storage
        self.ctx = WriteContext(self.tx, engine or LocalStatsEngine(), index_expressions, progress or (lambda message: None))
        self.files = FileGroupFiles(self.tx, memory_budget)
        self.scope = IndexScope(self.ctx)
        self.compaction = Compaction(self.ctx, self.files, compact_after)
        self.batch_files = batch_files

    @property
    def data(self) -> TableParts:
        """The data table as the transaction last loaded it."""
        return self.tx.data

    @property
    def schema_json(self) -> str:
        """The metadata record schema this writer's HFiles and log blocks carry."""
        return self.tx.schema_json

    # Public operations ---------------------------------------------------------------
    def build(self, partitions: Sequence[MetadataPartition] = BUILD_ORDER, columns: Sequence[str] | None = None,
              rebuild: bool = False, all_columns: bool = False) -> IndexReport:
        """Initialise the partitions not built yet; with `rebuild`, also rebuild
        the named partitions that exist. A rebuild writes new base files beside
        the old ones and swaps them in with one commit (an MDT compaction), so
        it touches only the partitions it names, leaves every other index (Hudi's
        secondary indexes included) alone, and a failure leaves the old ones.
        `all_columns`: statistics of every indexable top-level column (not only the first 32)."""
        started = time.monotonic()
        report = IndexReport("build")
        if all_columns:
            columns = [f.name for f in table_schema(self.data) if is_indexable(f.type)]
        check_columns(self.data, columns)  # before anything is touched
        own = [p for p in PARTITION_ORDER if p in partitions]
        defined = [p for p in partitions if isinstance(p, (SecondaryIndexPartition, ExpressionIndexPartition))]
        asked: list[MetadataPartition] = [*own, *defined]
        self.scope.check_secondary([p for p in defined if isinstance(p, SecondaryIndexPartition)], asked)
        self.scope.check_expression([p for p in defined if isinstance(p, ExpressionIndexPartition)])
        if MdtPartition.RECORD_INDEX in asked and is_partitioned_record_index(index_definitions(self.storage, self.data.config.raw)):
            raise IndexWriteError(f"{self.storage.uri}: the table defines a partitioned record index (Hudi 1.1), whose file groups "
                                  "are per data partition; hudi-bridge writes the global one. Build it with Apache Hudi")
        with self.tx.writing():
            self.tx.ensure_clear()  # a build writes (a Hudi writer at work without a shared lock: wait for it, or refuse)
            built = set(self.data.config.metadata_partitions)
            if MdtPartition.FILES.value not in built:
                if self.data.timeline.completed():
                    report.notes.append(WRITER_KEEPS_NONE)
                self.tx.create_metadata_table()
                built = set()
            else:
                self._sync_locked(report)
            todo = [p for p in [*PARTITION_ORDER, *defined] if (p in asked or p is MdtPartition.FILES) and p.value not in built]
            redo = [p for p in asked if p.value in built] if rebuild else []
            if MdtPartition.COLUMN_STATS in redo and MdtPartition.PARTITION_STATS.value in built and MdtPartition.PARTITION_STATS not in redo:
                redo.append(MdtPartition.PARTITION_STATS)  # both hold the same columns: rebuilt from one pass
                report.notes.append("partition_stats rebuilt with column_stats (they index the same columns)")
            skipped = [p.value for p in asked if p.value in built and p not in redo]
            if skipped:
                report.notes.append(f"already built, left alone: {', '.join(skipped)} (use --rebuild to rebuild)")
            if todo or redo:
                self._build_locked(todo, redo, columns, report)
            kept = [WRITER_ENABLES[p] for p in todo if p in WRITER_ENABLES]
            if report.kept_by_writer and kept:
                report.notes.append(f"Hudi's writer keeps this metadata table, and Hudi 1.2 deletes the partitions its writer has not "
                                    f"enabled (hoodie.metadata.auto.delete.partitions): to keep what was built, set {', '.join(kept)} "
                                    "on the writer (docs/concurrency.md)")
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
            self.compaction.compact(self.scope.maintained(), report, force=force)
        report.seconds = time.monotonic() - started
        return report

    def drop(self, partitions: Sequence[MdtPartition | str]) -> IndexReport:
        """Remove metadata partitions: any this writer builds, or any other the
        table lists (Hudi's secondary or expression indexes)."""
        started = time.monotonic()
        report = IndexReport("drop")
        with self.tx.writing():
            self.tx.ensure_clear()
            self._drop(list(partitions), report)
        report.seconds = time.monotonic() - started
        return report

    # Build -----------------------------------------------------------------------------
    def _build_locked(self, todo: list[MetadataPartition], redo: list[MetadataPartition], columns: Sequence[str] | None,
                      report: IndexReport) -> None:
        """New partitions listed inflight, built from one snapshot, then listed;
        rebuilt ones swapped in by one compaction."""
        new = {p.value for p in todo}
        if todo:
            self.scope.define([p for p in todo if isinstance(p, (SecondaryIndexPartition, ExpressionIndexPartition))])
            self.tx.set_config({METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(sorted({*self._inflight(), *new}))})
        snapshot = BuildSnapshot.take(self.data, self.ctx.engine, columns, self.batch_files, self.ctx.progress,
                                      rollups_wanted=MdtPartition.PARTITION_STATS in {*todo, *redo})
        if redo:
            self.compaction.rebuild(redo, snapshot, report)
        for partition in todo:
            self._initialise(partition, snapshot, report)
            report.partitions.append(partition.value)
        if todo:
            listed = sorted({*self.data.config.metadata_partitions, *new})
            self.tx.fault("before config update")
            self.tx.set_config({METADATA_PARTITIONS_KEY: ",".join(listed),
                                METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(sorted(set(self._inflight()) - new)) or None})
            self.tx.fault("after config update")

    def _initialise(self, partition: MetadataPartition, snapshot: BuildSnapshot, report: IndexReport) -> None:
        """One new partition: a delta commit of its base files."""
        mdt = self.tx.mdt()
        ts = self.tx.initialisation_time(mdt, partition)
        self.tx.initialising.append((ts, partition))
        self.ctx.progress(f"building {partition.value} at metadata instant {ts}")
        writer = partition_writer(partition, self.ctx)
        groups = len(self.files.existing_groups(partition)) or writer.initial_file_groups(snapshot)
        self.tx.write_pending(mdt, ts, Action.DELTA_COMMIT)
        self.tx.fault(f"{partition.value}: after requested")
        written: Written = []
        report.records_written += self.files.write_initial(partition, ts, groups, writer.build_cells(snapshot, ts, groups), written)
        extra = {BUILT_THROUGH: snapshot.built_through, PENDING_AT_BUILD: ",".join(snapshot.pending)}
        if writer.indexes_columns:
            extra[INDEXED_COLUMNS] = ",".join(snapshot.columns)
        self.tx.complete(mdt, ts, Action.DELTA_COMMIT, written, "BULK_INSERT", extra)
        report.files_indexed = max(report.files_indexed, snapshot.file_count)

    # Sync ------------------------------------------------------------------------------
    def _sync_locked(self, report: IndexReport) -> None:
        """Every completed data instant the metadata table lacks, in timeline order, one delta commit each.
        Nothing is written (and no Hudi writer waited for) when there is nothing to sync."""
        mdt = self.tx.mdt()
        if not self._unsynced(mdt) and not self.tx.ours_left():
            report.kept_by_writer = self._kept_by_writer(mdt)
            return
        self.tx.ensure_clear()  # a Hudi writer at work and no shared lock: wait for it (bounded) or refuse
        maintained = self.scope.maintained()
        mdt = self.tx.mdt()
        self.scope.refuse_to_leave_behind(mdt, maintained)
        mdt = self.tx.roll_back_failed(mdt, report.notes)
        todo = self._unsynced(mdt)
        taken = {i.requested_time: i for i in mdt.timeline.pending()}  # another writer's: its time is not ours to use
        schema = table_schema(self.data)
        columns = self.scope.indexed_columns(mdt, schema)
        unsynced = {i.requested_time for i in todo}
        held_through = max((i.requested_time for i in self.data.timeline.completed() if i.requested_time not in unsynced), default="")
        for n, instant in enumerate(todo, 1):
            if instant.requested_time in taken:
                report.notes.append(f"stopped before {instant.action} {instant.requested_time}: its metadata instant is pending, "
                                    f"written by another writer ({taken[instant.requested_time].action}); later instants wait for it")
                break
            self.ctx.progress(f"syncing {instant.action} {instant.requested_time} ({n}/{len(todo)})")
            change = TableChange.of(self.data, instant)
            if change is None:
                report.notes.append(f"{instant.action} {instant.requested_time}: nothing for the metadata table")
                continue
            held_through = max(held_through, instant.requested_time)
            self._apply(mdt, SyncInputs(self.ctx, instant.requested_time, change, columns, schema, held_through), maintained, report)
            report.instants.append(instant.requested_time)
            mdt = self.tx.mdt()
        if report.instants:
            self.compaction.compact(maintained, report, force=False)

    def _unsynced(self, mdt: TableParts) -> list[Instant]:
        """Completed data instants the metadata table does not hold, in the order they changed the table."""
        timeline = self.data.timeline
        order = (lambda i: (i.completion_time or i.requested_time)) if timeline.uses_completion_time else (lambda i: i.requested_time)
        is_synced = self.scope.synced(mdt)
        return sorted((i for i in timeline.completed() if not is_synced(i)), key=order)

    def _kept_by_writer(self, mdt: TableParts) -> str | None:
        """The latest completed data instant, when its metadata-table commit is
        not ours: Hudi's writer keeps the metadata table itself."""
        latest = self.data.timeline.latest_completed()
        recorded = mdt.timeline.get(latest.requested_time) if latest else None
        if latest is None or recorded is None or not recorded.is_completed:
            return None
        return None if WRITER_KEY in mdt.timeline.commit_metadata(recorded).extra_metadata else latest.requested_time

    def _apply(self, mdt: TableParts, inputs: SyncInputs, maintained: list[MetadataPartition], report: IndexReport) -> None:
        """One data instant: every maintained partition's records, read from
        inputs gathered once, written as one log file per file group touched."""
        writers = [partition_writer(p, self.ctx) for p in maintained]
        inputs.prepare({need for w in writers for need in w.needs})
        records = [(w.partition, w.sync_records(inputs)) for w in writers]
        report.files_indexed += inputs.files_indexed
        ts = inputs.ts
        self.tx.write_pending(mdt, ts, Action.DELTA_COMMIT)
        self.tx.fault(f"{ts}: after requested")
        written: Written = []
        for partition, by_key in records:
            if by_key:
                report.records_written += self.files.write_logs(partition, ts, by_key, written)
        self.tx.complete(mdt, ts, Action.DELTA_COMMIT, written, "UPSERT_PREPPED")
        if not written:
            log.debug("instant %s changed nothing the metadata table holds", ts)

    # Drop ------------------------------------------------------------------------------
    def _drop(self, partitions: list[MdtPartition | str], report: IndexReport) -> None:
        if not partitions:
            return
        names = {p.value if isinstance(p, MdtPartition) else p for p in partitions}
        if MdtPartition.FILES.value in names:
            names = set(self.data.config.metadata_partitions) | names  # nothing is read without `files`
        remaining = [p for p in self.data.config.metadata_partitions if p not in names]
        self.tx.set_config({METADATA_PARTITIONS_KEY: ",".join(remaining) or None,
                            METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(p for p in self._inflight() if p not in names) or None})
        self.tx.fault("drop: after config update")
        if MdtPartition.FILES.value in names:
            if self.storage.exists(METADATA_FOLDER):
                self.storage.delete_dir(METADATA_FOLDER)
        else:
            for name in names:
                if self.tx.mdt_storage.exists(name):
                    self.tx.mdt_storage.delete_dir(name)
        report.partitions.extend(sorted(names))

    def _inflight(self) -> list[str]:
        return [p for p in self.data.config.raw.get(METADATA_PARTITIONS_INFLIGHT_KEY, "").split(",") if p]
