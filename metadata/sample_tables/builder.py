"""A small writer of Hudi-format tables, for tests, samples and benchmarks.

It writes what Apache Hudi writes for the same operations: Parquet base
files with the five meta columns, MOR log files with AVRO_DATA and DELETE
blocks, the timeline (layout 1 for table v6, layout 2 for v8) with commit,
replace, clean, rollback and compaction metadata, `hoodie.properties` and
partition metadata files. It also makes the awkward states on purpose: a
commit left inflight, a pending compaction, a rollback.

It is not a general writer: it keeps the table's rows in memory and puts
each commit's inserts of a partition into one new file group (or several,
with `max_rows_per_file`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from metadata.sample_tables.table_files import Group, Staged
from metadata.sample_tables.table_writes import TableWrites
from metadata.storage.paths import join
from metadata.table.file_naming import BaseFileName, LogFileName
from metadata.timeline.commit_metadata import WriteStat
from metadata.timeline.instant import Action
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import CLEAN_METADATA, COMPACTION_PLAN, ROLLBACK_METADATA
from metadata.util.arrow_memory import empty_table


class TableBuilder(TableWrites):
    """Builds one Hudi table below `base_path`; each write is one instant (the writes are `TableWrites`'); here the
    replace commits, the table services (clean, compaction, rollback) and what tests ask of the result."""

    # Replace commits ------------------------------------------------------------------------
    def insert_overwrite(self, rows: pa.Table | list[dict[str, Any]], table_wide: bool = False) -> str:
        """INSERT_OVERWRITE (the partitions written) or INSERT_OVERWRITE_TABLE."""
        table = self._as_table(rows)
        ts = self.next_instant_time()
        staged = Staged(Action.REPLACE_COMMIT, "INSERT_OVERWRITE_TABLE" if table_wide else "INSERT_OVERWRITE")
        self._write_pending(ts, Action.REPLACE_COMMIT)
        keys = self.record_keys(table)
        partitions = self.partition_of_rows(table)
        targets = {g.partition for g in self._live_groups()} if table_wide else set(partitions)
        for partition in sorted(targets):
            ids = [g.file_id for g in self._live_groups(partition)]
            if ids:
                staged.replaced[partition] = ids
        for partition in sorted(set(partitions)):
            self._ensure_partition(partition, ts)
            mask = pa.array([p == partition for p in partitions])
            self._new_groups(ts, staged, partition, table.filter(mask), [k for k, p in zip(keys, partitions) if p == partition])
        return self._finish(ts, staged, True)

    def delete_partitions(self, partitions: list[str]) -> str:
        """DELETE_PARTITION: a replacecommit that replaces every group of them."""
        ts = self.next_instant_time()
        staged = Staged(Action.REPLACE_COMMIT, "DELETE_PARTITION")
        self._write_pending(ts, Action.REPLACE_COMMIT)
        for partition in partitions:
            ids = [g.file_id for g in self._live_groups(partition)]
            if not ids:
                raise ValueError(f"partition {partition!r} has no file groups to delete")
            staged.replaced[partition] = ids
            staged.dropped_partitions.add(partition)
        return self._finish(ts, staged, True)

    # Table services ----------------------------------------------------------------------------
    def clean(self) -> str:
        """Delete files of older slices and of replaced file groups."""
        ts = self.next_instant_time()
        self._write_pending(ts, Action.CLEAN)
        deleted: dict[str, list[str]] = {}
        partition_gone: dict[str, bool] = {}
        for key, group in list(self._groups.items()):
            names = list(group.older_files)
            if group.replaced:
                names += ([group.base_name] if group.base_name else []) + group.logs
                del self._groups[key]
            else:
                group.older_files = []
            for name in names:
                self.storage.delete_file(join(group.partition, name))
                deleted.setdefault(group.partition, []).append(name)
        for partition in deleted:
            gone = not self._live_groups(partition)
            partition_gone[partition] = gone
            if gone and self.storage.exists(join(partition, ".hoodie_partition_metadata")):
                self.storage.delete_file(join(partition, ".hoodie_partition_metadata"))
                self._partitions_written.discard(partition)
        latest = max((g.base_instant for g in self._live_groups()), default=ts)
        record = {
            "startCleanTime": ts,
            "timeTakenInMillis": 1,
            "totalFilesDeleted": sum(len(v) for v in deleted.values()),
            "earliestCommitToRetain": latest,
            "lastCompletedCommitTimestamp": latest,
            "partitionMetadata": {
                p: {
                    "partitionPath": p,
                    "policy": "KEEP_LATEST_FILE_VERSIONS",
                    "deletePathPatterns": names,
                    "successDeleteFiles": names,
                    "failedDeleteFiles": [],
                    "isPartitionDeleted": partition_gone[p],
                }
                for p, names in deleted.items()
            },
            "version": 2,
        }
        if self._mdt is not None:
            self._mdt.record(ts, {}, deleted, dropped_partitions={p for p, g in partition_gone.items() if g})
        self._write_completed(ts, Action.CLEAN, encode_avro_instant(CLEAN_METADATA, record))
        return ts

    def schedule_compaction(self) -> str:
        """Write a compaction plan (MOR) for every group with log files."""
        if not self.is_mor:
            raise ValueError("compaction applies to MERGE_ON_READ tables")
        ts = self.next_instant_time()
        operations = []
        plan: dict[tuple[str, str], pa.Table] = {}
        for group in self._live_groups():
            if not group.logs:
                continue
            plan[(group.partition, group.file_id)] = group.rows
            operations.append({
                "baseInstantTime": group.base_instant,
                "deltaFilePaths": list(group.logs),
                "dataFilePath": group.base_name,
                "fileId": group.file_id,
                "partitionPath": group.partition,
                "metrics": {"TOTAL_LOG_FILES": float(len(group.logs))},
            })
        if not operations:
            raise ValueError("nothing to compact: no file group has log files")
        content = encode_avro_instant(COMPACTION_PLAN, {"operations": operations, "extraMetadata": None, "version": 2})
        self.storage.write_bytes(join(self.timeline_path, f"{ts}.compaction.requested"), content)
        self._plans[ts] = plan
        return ts

    def run_compaction(self, ts: str, complete: bool = True) -> str:
        """Execute a scheduled compaction; it completes as a commit.

        With `complete=False` the new base files are written but the instant
        stays inflight, as when a compaction job dies midway."""
        plan = self._plans[ts]  # stays pending until the compaction completes
        self.storage.write_bytes(join(self.timeline_path, f"{ts}.compaction.inflight"), b"")
        staged = Staged(Action.COMMIT, "COMPACT")
        for (partition, file_id), rows in plan.items():
            group = self._groups[(partition, file_id)]
            name = BaseFileName(file_id, self._token(), ts, ".parquet").name
            data = rows.set_column(4, "_hoodie_file_name", pa.array([name] * rows.num_rows, pa.string()))
            nbytes = self._write_parquet(partition, name, data)
            older = group.older_files + ([group.base_name] if group.base_name else [])
            staged.groups[(partition, file_id)] = Group(partition, file_id, name, ts, group.rows, [], older)
            staged.written_files.append(join(partition, name))
            staged.stats.append(WriteStat(partition, file_id, join(partition, name), group.base_instant,
                                          num_writes=rows.num_rows, total_write_bytes=nbytes, file_size_in_bytes=nbytes))
        return self._finish(ts, staged, complete)

    def rollback(self, ts: str) -> str:
        """Roll back a pending instant: delete its files and its timeline entries."""
        staged = self._staged.pop(ts, None)
        if staged is None:
            raise ValueError(f"instant {ts} is not pending in this builder")
        rb = self.next_instant_time()
        self._write_pending(rb, Action.ROLLBACK)
        deleted: dict[str, list[str]] = {}
        for path in staged.written_files:
            self.storage.delete_file(path)
            partition, _, name = path.rpartition("/")
            deleted.setdefault(partition, []).append(name)
        for suffix in (f"{staged.action}.requested", "inflight" if staged.action is Action.COMMIT else f"{staged.action}.inflight"):
            path = join(self.timeline_path, f"{ts}.{suffix}")
            if self.storage.exists(path):
                self.storage.delete_file(path)
        record = {
            "startRollbackTime": rb,
            "timeTakenInMillis": 1,
            "totalFilesDeleted": sum(len(v) for v in deleted.values()),
            "commitsRollback": [ts],
            "partitionMetadata": {
                p: {"partitionPath": p, "successDeleteFiles": names, "failedDeleteFiles": [], "rollbackLogFiles": None}
                for p, names in deleted.items()
            },
            "version": 1,
        }
        self._write_completed(rb, Action.ROLLBACK, encode_avro_instant(ROLLBACK_METADATA, record))
        return rb

    # Introspection for tests ---------------------------------------------------------------------
    def expected_latest_files(self) -> dict[tuple[str, str], tuple[str | None, tuple[str, ...]]]:
        """(partition, file id) -> (base file name, log names) the builder
        believes are the latest visible slice, for cross-checking readers."""
        result = {}
        for (partition, file_id), group in self._groups.items():
            if group.replaced:
                continue
            logs = tuple(sorted(group.logs, key=lambda n: LogFileName.parse(n).sort_key()))
            result[(partition, file_id)] = (group.base_name, logs)
        return result

    def current_rows(self) -> pa.Table:
        """All live rows, with meta columns, as a reader should see them."""
        tables = [g.rows for g in self._live_groups()]
        return pa.concat_tables(tables) if tables else empty_table(self.full_schema)
