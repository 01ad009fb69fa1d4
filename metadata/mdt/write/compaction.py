"""New base files swapped in by one metadata compaction commit: a
compaction (each due partition's merged records) and a rebuild (named
partitions made again from a snapshot). Until the commit completes readers
see the old slices; a crash leaves a pending instant the next run rolls back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metadata.mdt.file_groups import MdtPartition, MetadataPartition
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.reader import MetadataTableReader
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.records import MetadataRecord
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.file_group_io import FileGroupFiles, Written
from metadata.mdt.write.partitions import partition_writer
from metadata.mdt.write.report import IndexReport
from metadata.mdt.write.routed_cells import routed
from metadata.mdt.write.scope import INDEXED_COLUMNS
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.table.file_group import FileSlice
from metadata.table.stored_table import TableParts
from metadata.timeline.instant import Action
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import COMPACTION_PLAN


class Compaction:
    def __init__(self, ctx: WriteContext, files: FileGroupFiles, compact_after: int) -> None:
        self.ctx = ctx
        self.tx = ctx.tx
        self.files = files
        self.compact_after = compact_after  # log files a slice may have before it is compacted

    def compact(self, maintained: list[MetadataPartition], report: IndexReport, force: bool) -> None:
        """The maintained partitions with a slice past `compact_after` logs
        (with `force`, any log), unless a data instant is pending."""
        mdt = self.tx.roll_back_failed(self.tx.mdt(), report.notes)
        pending = [i for i in self.ctx.data.timeline.pending() if not i.is_compaction]
        due = []
        reader = MetadataTableReader(self.ctx.data)
        try:
            for partition in maintained:
                slices = reader.file_slices(partition.value)
                if any(len(s.log_files) > self.compact_after for s in slices) or force and any(s.log_files for s in slices):
                    due.append(partition)
            if not due:
                return
            if self.tx.ensure_clear():  # a Hudi writer was at work: what was read may be stale
                reader.close()
                return self.compact(maintained, report, force)
            if pending:
                report.notes.append(f"compaction of {', '.join(p.value for p in due)} deferred: data instants "
                                    f"{', '.join(i.requested_time for i in pending)} are pending")
                return
            ts = self._new_time(reader)
            if mdt.timeline.get(ts) is not None:  # v6: Hudi's own compaction took this time
                report.notes.append(f"compaction of {', '.join(p.value for p in due)} deferred: metadata instant {ts} exists "
                                    "(another writer compacted)")
                return
            merged = {p: reader.read(p.value, KeyQuery()) for p in due}
            slices_of = self._request(mdt, reader, due, ts)
        finally:
            reader.close()
        written: Written = []
        schema_json = self.ctx.schema_json
        for partition in due:
            groups = len({s.file_id for s in slices_of[partition]})
            cells = ((key, encode_record(_as_written(record), schema_json)) for key, record in merged[partition].items() if not _is_dropped(record))
            self.files.write_bases(partition, ts, groups, routed(partition, groups, cells), written, "compaction")
            report.compacted.append(partition.value)
        self.tx.complete(mdt, ts, Action.COMMIT, written, "COMPACT", compacted=True)

    def rebuild(self, partitions: list[MetadataPartition], snapshot: BuildSnapshot, report: IndexReport) -> None:
        """Every file group of each partition gets a new base file from the
        snapshot; the completed compaction commit swaps them all in at once
        (Hudi's readers take compaction instants as valid)."""
        mdt = self.tx.mdt()
        reader = MetadataTableReader(self.ctx.data)
        try:
            ts = self._new_time(reader)
            slices_of = self._request(mdt, reader, partitions, ts)
        finally:
            reader.close()
        self.ctx.progress(f"rebuilding {', '.join(p.value for p in partitions)} at metadata instant {ts}")
        written: Written = []
        for partition in partitions:
            groups = len({s.file_id for s in slices_of[partition]}) or self.files.file_group_count(partition)
            cells = partition_writer(partition, self.ctx).build_cells(snapshot, ts, groups)
            report.records_written += self.files.write_bases(partition, ts, groups, cells, written, "rebuild")
            report.partitions.append(partition.value)
        extra = {INDEXED_COLUMNS: ",".join(snapshot.columns)} if {MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS} & set(partitions) else {}
        self.tx.complete(mdt, ts, Action.COMMIT, written, "COMPACT", extra, compacted=True)
        report.files_indexed = max(report.files_indexed, snapshot.file_count)
        report.notes.append(f"rebuilt beside the old file slices and swapped in by metadata instant {ts}: {', '.join(p.value for p in partitions)}")

    def _new_time(self, reader: MetadataTableReader) -> str:
        return self.tx.new_time() if self.ctx.version >= 8 else (reader.latest_instant + "001")

    def _request(self, mdt: TableParts, reader: MetadataTableReader, partitions: Sequence[MetadataPartition],
                 ts: str) -> dict[MetadataPartition, list[FileSlice]]:
        """A new compaction instant `ts` (requested and inflight) over the partitions' current slices."""
        slices_of = {p: reader.file_slices(p.value) for p in partitions}
        operations: list[dict[str, Any]] = [{"baseInstantTime": s.base_instant, "deltaFilePaths": [f.rsplit("/", 1)[-1] for f in s.log_files],
                                             "dataFilePath": s.base_file_name, "fileId": s.file_id, "partitionPath": p.value, "metrics": {}}
                                            for p in partitions for s in slices_of[p]]
        plan = encode_avro_instant(COMPACTION_PLAN, {"operations": operations, "extraMetadata": None, "version": 2})
        self.tx.write_pending(mdt, ts, Action.COMPACTION, plan)
        self.tx.fault("compaction: after requested")
        return slices_of


def _is_dropped(record: MetadataRecord) -> bool:
    """A deleted entry, which a compaction leaves out as Hudi's does."""
    if record.column_stats and record.column_stats.is_deleted:
        return True
    return any(isinstance(meta := record.raw.get(name), dict) and bool(meta.get("isDeleted"))
               for name in ("BloomFilterMetadata", "SecondaryIndexMetadata"))


def _as_written(record: MetadataRecord) -> dict[str, Any]:
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
