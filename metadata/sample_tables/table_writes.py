"""`TableBuilder`'s writes: inserts, upserts and deletes as commits and
delta commits (base files rewritten, logs appended, CDC logs), completed
or left pending, and recorded in the metadata table when it keeps one."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metadata.formats.cdc import CdcRecord, encode_cdc_block
from metadata.formats.log_format import (
    BlockType,
    HeaderKey,
    LogBlock,
    encode_avro_records,
    encode_block,
    encode_delete_records,
)
from metadata.sample_tables.table_files import Group, Staged, TableFiles
from metadata.storage.paths import join
from metadata.table.file_naming import BaseFileName, LogFileName
from metadata.timeline.commit_metadata import CommitMetadata, WriteStat
from metadata.timeline.instant import Action


class TableWrites(TableFiles):
    """Commits of rows."""

    # Writes -------------------------------------------------------------------------------
    def write(self, rows: pa.Table | list[dict[str, Any]], operation: str = "upsert", complete: bool = True) -> str:
        """Insert or update rows (upsert, insert, bulk_insert) as one commit."""
        table = self._as_table(rows)
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = Staged(action, operation.upper())
        self._write_pending(ts, action)
        keys = self.record_keys(table)
        partitions = self.partition_of_rows(table)
        for partition in sorted(set(partitions)):
            mask = pa.array([p == partition for p in partitions])
            part_rows = table.filter(mask)
            part_keys = [k for k, p in zip(keys, partitions) if p == partition]
            self._ensure_partition(partition, ts)
            self._upsert_partition(ts, staged, partition, part_rows, part_keys)
        return self._finish(ts, staged, complete)

    def write_copies(self, files_per_partition: dict[str, int], rows: pa.Table | list[dict[str, Any]]) -> tuple[str, list[str]]:
        """A bulk insert of many base files that are all copies of one small
        Parquet file of `rows` (for benches at scale: listing and planning
        never read them). The builder does not track these file groups.
        Returns the instant and the written paths, in order."""
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = Staged(action, "BULK_INSERT")
        self._write_pending(ts, action)
        table = self._as_table(rows)
        buf = io.BytesIO()
        pq.write_table(self._stored(self._with_footer(self._with_meta(table, ts, self.record_keys(table), "", "copy.parquet"))), buf,
                       compression="snappy")
        data = buf.getvalue()
        for partition, count in files_per_partition.items():
            self._ensure_partition(partition, ts)
            for _ in range(count):
                file_id = f"{uuid.uuid4()}-0"
                name = BaseFileName(file_id, self._token(), ts, ".parquet").name
                with open(self.storage.full_path(join(partition, name)), "wb") as out:  # local only: speed over atomicity
                    out.write(data)
                staged.written_files.append(join(partition, name))
                staged.stats.append(WriteStat(partition, file_id, join(partition, name), None, num_writes=table.num_rows,
                                              num_inserts=table.num_rows, total_write_bytes=len(data), file_size_in_bytes=len(data)))
        self._finish(ts, staged, complete=True)
        return ts, staged.written_files

    def delete(self, keys: list[str], complete: bool = True) -> str:
        """Delete records by record key (as `_hoodie_record_key` holds them)."""
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = Staged(action, "DELETE")
        self._write_pending(ts, action)
        wanted = set(keys)
        for group in self._live_groups():
            present = set(group.rows.column("_hoodie_record_key").to_pylist()) & wanted
            if not present:
                continue
            keep = pc.invert(pc.is_in(group.rows.column("_hoodie_record_key"), pa.array(sorted(present))))
            remaining = group.rows.filter(keep)
            if self.is_mor:
                content = encode_delete_records([(k, group.partition) for k in sorted(present)])
                self._append_log(ts, staged, group, LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: ts}, content), remaining, deletes=len(present))
            else:
                self._rewrite_base(ts, staged, group, remaining, updates=0, deletes=len(present))
        return self._finish(ts, staged, complete)

    def _upsert_partition(self, ts: str, staged: Staged, partition: str, rows: pa.Table, keys: list[str]) -> None:
        key_to_row = {k: i for i, k in enumerate(keys)}  # last write of a key wins
        for group in self._live_groups(partition):
            group_keys = group.rows.column("_hoodie_record_key").to_pylist()
            hits = [key_to_row.pop(k) for k in group_keys if k in key_to_row]
            if not hits:
                continue
            hit_keys = [keys[i] for i in hits]
            updated = self._with_meta(rows.take(hits), ts, hit_keys, partition, "")
            keep = pc.invert(pc.is_in(group.rows.column("_hoodie_record_key"), pa.array(hit_keys)))
            merged = pa.concat_tables([group.rows.filter(keep), updated])
            if self.is_mor:
                records = self._stored(updated).to_pylist()
                block = LogBlock(
                    BlockType.AVRO_DATA,
                    {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: json.dumps(self.avro_schema)},
                    encode_avro_records(self.avro_schema, records),
                )
                self._append_log(ts, staged, group, block, merged, updates=len(hits))
            else:
                self._rewrite_base(ts, staged, group, merged, updates=len(hits), deletes=0)
        if key_to_row:
            order = sorted(key_to_row.values())
            self._new_groups(ts, staged, partition, rows.take(order), [keys[i] for i in order])

    def _new_groups(self, ts: str, staged: Staged, partition: str, rows: pa.Table, keys: list[str]) -> None:
        size = self.max_rows_per_file or max(rows.num_rows, 1)
        for start in range(0, rows.num_rows, size):
            chunk, chunk_keys = rows.slice(start, size), keys[start : start + size]
            file_id = f"{uuid.uuid4()}-0"
            name = BaseFileName(file_id, self._token(), ts, ".parquet").name
            data = self._with_meta(chunk, ts, chunk_keys, partition, name)
            nbytes = self._write_parquet(partition, name, data)
            staged.groups[(partition, file_id)] = Group(partition, file_id, name, ts, data)
            staged.written_files.append(join(partition, name))
            staged.stats.append(
                WriteStat(partition, file_id, join(partition, name), None, num_writes=chunk.num_rows,
                          num_inserts=chunk.num_rows, total_write_bytes=nbytes, file_size_in_bytes=nbytes)
            )

    def _rewrite_base(self, ts: str, staged: Staged, group: Group, rows: pa.Table, updates: int, deletes: int) -> None:
        name = BaseFileName(group.file_id, self._token(), ts, ".parquet").name
        rows = rows.set_column(4, "_hoodie_file_name", pa.array([name] * rows.num_rows, pa.string()))
        nbytes = self._write_parquet(group.partition, name, rows)
        cdc = self._write_cdc(ts, staged, group, rows) if self.cdc_mode is not None else ()
        older = group.older_files + ([group.base_name] if group.base_name else []) + group.logs
        staged.groups[(group.partition, group.file_id)] = Group(group.partition, group.file_id, name, ts, rows, [], older)
        staged.written_files.append(join(group.partition, name))
        staged.stats.append(
            WriteStat(group.partition, group.file_id, join(group.partition, name), group.base_instant,
                      num_writes=rows.num_rows, num_update_writes=updates, num_deletes=deletes,
                      total_write_bytes=nbytes, file_size_in_bytes=nbytes, cdc_stats=cdc)
        )

    def _write_cdc(self, ts: str, staged: Staged, group: Group, rows: pa.Table) -> tuple[tuple[str, int], ...]:
        """The change-data log of a rewritten file group: per record key, what
        this write did to the group's old rows (HoodieCDCLogger's ops and images)."""
        assert self.cdc_mode is not None
        old = {r["_hoodie_record_key"]: r for r in group.rows.to_pylist()}
        new = {r["_hoodie_record_key"]: r for r in rows.to_pylist()}
        changes = [CdcRecord("d", k, old[k]) for k in sorted(old) if k not in new]
        changes += [CdcRecord("u", k, old[k], new[k]) for k in sorted(old) if k in new and new[k]["_hoodie_commit_time"] == ts]
        changes += [CdcRecord("i", k, None, new[k]) for k in sorted(new) if k not in old]
        if not changes:
            return ()
        log_name = LogFileName(group.file_id, ts, "log", 1, self._token(), is_cdc=True).name
        if self.version < 8:
            log_name = log_name[: -len(".cdc")] + "-cdc"  # Hudi 0.x's suffix
        data = encode_block(encode_cdc_block(self.cdc_mode, self.avro_schema, ts, changes))
        self.storage.write_bytes(join(group.partition, log_name), data)
        staged.written_files.append(join(group.partition, log_name))
        return ((join(group.partition, log_name), len(data)),)

    def _log_slice_instant(self, group: Group) -> str:
        pending = [ts for ts, plan in self._plans.items() if (group.partition, group.file_id) in plan]
        return max(pending) if pending else group.base_instant

    def _append_log(self, ts: str, staged: Staged, group: Group, block: LogBlock, rows: pa.Table,
                    updates: int = 0, deletes: int = 0) -> None:
        if self.version >= 8:
            name = LogFileName(group.file_id, ts, "log", 1, self._token()).name
        else:
            version = 1 + sum(1 for n in group.logs if LogFileName.parse(n).instant_time == self._log_slice_instant(group))
            name = LogFileName(group.file_id, self._log_slice_instant(group), "log", version, self._token()).name
        data = encode_block(block)
        self.storage.write_bytes(join(group.partition, name), data)
        staged.groups[(group.partition, group.file_id)] = Group(
            group.partition, group.file_id, group.base_name, group.base_instant, rows, group.logs + [name], list(group.older_files)
        )
        staged.written_files.append(join(group.partition, name))
        staged.stats.append(
            WriteStat(group.partition, group.file_id, join(group.partition, name), group.base_instant,
                      num_writes=updates, num_update_writes=updates, num_deletes=deletes,
                      total_write_bytes=len(data), file_size_in_bytes=len(data),
                      base_file=group.base_name or "", log_files=(name,))
        )

    def _finish(self, ts: str, staged: Staged, complete: bool) -> str:
        self._staged[ts] = staged
        if complete:
            self.complete(ts)
        return ts

    def complete(self, ts: str) -> str:
        """Complete an instant left pending by `complete=False`."""
        staged = self._staged.pop(ts)
        stats: dict[str, list[WriteStat]] = {}
        for stat in staged.stats:
            stats.setdefault(stat.partition_path, []).append(stat)
        meta = CommitMetadata(
            partition_to_write_stats={p: tuple(s) for p, s in stats.items()},
            operation_type=staged.operation,
            extra_metadata={"schema": json.dumps(self.avro_schema)},
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in staged.replaced.items()},
        )
        if self._mdt is not None:
            self._record_in_metadata_table(ts, staged)
        self._write_completed(ts, staged.action, self._encode_commit(meta, staged.action is Action.REPLACE_COMMIT))
        self._plans.pop(ts, None)
        for key, group in staged.groups.items():
            current = self._groups.get(key)
            if current is not None and staged.operation == "COMPACT":
                # Logs written while the compaction was pending start the new slice.
                group.older_files += [n for n in current.logs if self._log_in_plan(n, ts)]
                group.logs = [n for n in current.logs if not self._log_in_plan(n, ts)]
                group.rows = current.rows
            elif current is not None:
                # Logs of instants that completed in between stay.
                group.logs = sorted(set(group.logs) | set(current.logs), key=lambda n: LogFileName.parse(n).sort_key())
            self._groups[key] = group
        for partition, ids in staged.replaced.items():
            for file_id in ids:
                self._groups[(partition, file_id)].replaced = True
        return ts

    def _record_in_metadata_table(self, ts: str, staged: Staged) -> None:
        assert self._mdt is not None
        added: dict[str, dict[str, int]] = {}
        for stat in staged.stats:
            added.setdefault(stat.partition_path, {})[stat.file_name] = stat.file_size_in_bytes
        new = {p for p in added if p not in self._mdt_partitions}
        self._mdt_partitions |= new
        self._mdt_partitions -= staged.dropped_partitions
        self._mdt.record(ts, added, new_partitions=new, dropped_partitions=staged.dropped_partitions)

    def _log_in_plan(self, name: str, compaction_ts: str) -> bool:
        parsed = LogFileName.parse(name)
        if self.version >= 8:
            return parsed.instant_time < compaction_ts
        return parsed.instant_time != compaction_ts
