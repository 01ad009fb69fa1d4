"""The transaction around a metadata-table write: the writer lock, the MDT's
instants (requested, inflight, completed) and their times, `hoodie.properties`
changed through its backup, and the undo of everything a failed write left
pending (its files and instants, a metadata folder it created, the table's
properties and index definitions as they were), so that a failed write
leaves the table as it found it. What the partitions hold is written by the
partition writers (metadata.mdt.write.partitions); only this touches the timeline."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from metadata.commit_metadata import WriteStat
from metadata.file_naming import BaseFileName, LogFileName, classify
from metadata.instant import BEFORE_ALL_INSTANTS, Action
from metadata.instant_content import encode_avro_instant
from metadata.log_format import read_log_blocks
from metadata.mdt.file_groups import PARTITION_ORDER, MdtPartition, MetadataPartition
from metadata.mdt.reader import METADATA_FOLDER
from metadata.mdt.secondary_index import INDEX_DEFS_PATH
from metadata.mdt.write.writer_lock import WriterLock
from metadata.storage import join
from metadata.stored_table import TableParts
from metadata.table_config import (
    METADATA_PARTITIONS_KEY,
    PROPERTIES_BACKUP_PATH,
    PROPERTIES_PATH,
    BaseFileFormat,
    TableConfig,
    TableType,
    parse_java_properties,
    update_table_config,
)
from metadata.timeline_models import commit_metadata_schema

log = logging.getLogger(__name__)

Fault = Callable[[str], None]


class MetadataTransaction:
    """One writer's view of the table and its metadata table, and the instants it writes."""

    def __init__(self, data: TableParts, schema_json: str, fault: Fault | None = None) -> None:
        self.data = data
        self.storage = data.storage
        self.mdt_storage = self.storage.child(METADATA_FOLDER)
        self.version = data.config.version
        self.schema_json = schema_json
        self.fault: Fault = fault or (lambda step: None)
        self._token = 0
        self._last_time = ""
        self.requested: list[str] = []  # MDT instants this operation started (undone if it fails)
        self.initialising: list[tuple[str, MetadataPartition]] = []  # (instant, partition) of new partitions

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The writer lock and a fresh look at the table; when the operation
        fails, what it left pending is undone (its files and instants, a
        metadata folder it created, hoodie.properties as it was), so a failed
        write leaves the table as it found it. What it completed stays: each
        completed instant is a consistent state. A killed process cannot undo:
        the next run rolls its pending instants back."""
        with WriterLock(self.storage):
            self.reload()
            properties = self.storage.read_bytes(PROPERTIES_PATH)
            had_metadata = self.storage.exists(METADATA_FOLDER)
            definitions = self.storage.read_bytes(INDEX_DEFS_PATH) if self.storage.exists(INDEX_DEFS_PATH) else None
            self.requested = []
            self.initialising = []
            try:
                yield
            except BaseException:
                try:
                    self.undo(properties, had_metadata, definitions)
                except Exception as undo_error:  # the failure itself is what the caller hears about
                    log.warning("%s: could not undo the failed write (%s); the next index build or sync rolls it back",
                                self.storage.uri, undo_error)
                raise

    def undo(self, properties: bytes, had_metadata: bool, definitions: bytes | None) -> None:
        if not had_metadata:
            if self.storage.exists(METADATA_FOLDER):
                self.storage.filesystem.delete_dir(self.storage.full_path(METADATA_FOLDER))
        elif self.requested:
            listed = parse_java_properties(properties.decode("utf-8")).get(METADATA_PARTITIONS_KEY, "").split(",")
            mdt = self.mdt()
            initialised = {ts for ts, partition in self.initialising if partition.value not in listed}
            for ts in self.requested:
                # a new partition's instants count only once hoodie.properties lists it: completed or not, they go
                if ts in initialised or not mdt.timeline.is_completed(ts):
                    self.remove_instant(mdt, ts)
            for name in {*(p.value for p in MdtPartition), *(p.value for _, p in self.initialising)}:  # a folder this run created and left empty
                if self.mdt_storage.exists(name):
                    files, folders = self.mdt_storage.list_dir(name)
                    if not folders and [f.name for f in files] == [".hoodie_partition_metadata"] and name not in listed:
                        self.storage.filesystem.delete_dir(self.mdt_storage.full_path(name))
        if self.storage.read_bytes(PROPERTIES_PATH) != properties:
            self.storage.write_bytes(PROPERTIES_PATH, properties)
        if definitions is not None and self.storage.read_bytes(INDEX_DEFS_PATH) != definitions:
            self.storage.write_bytes(INDEX_DEFS_PATH, definitions)
        elif definitions is None and self.storage.exists(INDEX_DEFS_PATH):
            self.storage.delete_file(INDEX_DEFS_PATH)
        if self.storage.exists(PROPERTIES_BACKUP_PATH):
            self.storage.delete_file(PROPERTIES_BACKUP_PATH)

    def reload(self) -> None:
        self.data = TableParts.load_storage(self.storage)

    def set_config(self, changes: dict[str, str | None]) -> None:
        update_table_config(self.storage, changes)
        self.reload()

    def mdt(self) -> TableParts:
        return TableParts.load_storage(self.mdt_storage)

    def new_time(self) -> str:
        """One millisecond after the latest time either timeline knows.

        Not the wall clock: a metadata compaction must sort before the next
        data instant, whose time comes from the data writer's clock."""
        mdt = self.mdt().timeline.instants if self.mdt_storage.exists(".hoodie/hoodie.properties") else []
        known = [self._last_time, *(t[:17] for i in [*self.data.timeline.instants, *mdt]
                                    for t in (i.requested_time, i.completion_time or "") if t[:17].isdigit())]
        latest = max(known)
        self._last_time = str(int(latest or "0") + 1).zfill(17)
        return self._last_time

    def initialisation_time(self, mdt: TableParts, partition: MetadataPartition) -> str:
        """The instant that initialises a partition: v8+ the lowest free
        `000..0n` (as Hudi), v6 the latest data instant with a suffix."""
        used = {i.requested_time for i in mdt.timeline.instants}
        if _written_before(mdt, partition.value):
            # A partition made again after a drop: its old commits name files it no
            # longer has, so its first instant must be newer than theirs (as
            # Hudi's async indexer's is), or a view would look for those files.
            return self.new_time()
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

    def create_metadata_table(self) -> None:
        """A new metadata folder with its `hoodie.properties`. No partition is
        listed: whatever was in the folder is a leftover no reader uses."""
        if self.storage.exists(METADATA_FOLDER):
            self.storage.filesystem.delete_dir(self.storage.full_path(METADATA_FOLDER))
        v8 = self.version >= 8
        extra = {
            "hoodie.table.keygenerator.type" if v8 else "hoodie.table.keygenerator.class":
                "HOODIE_TABLE_METADATA" if v8 else "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
            "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
            "hoodie.archivelog.folder": "history" if v8 else "archived",
        }
        if v8:
            extra.update({"hoodie.record.merge.mode": "CUSTOM", "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                          "hoodie.table.initial.version": str(self.version)})
        database = self.data.config.raw.get("hoodie.database.name")
        if database:
            extra["hoodie.database.name"] = database
        TableConfig.new(f"{self.data.config.name}_metadata", TableType.MERGE_ON_READ, self.version,
                        record_key_fields=("key",), base_file_format=BaseFileFormat.HFILE, populate_meta_fields=False,
                        extra=extra).write(self.mdt_storage)
        self.fault("after metadata table properties")

    def write_token(self) -> str:
        self._token += 1
        return f"0-{self._token}-{self._token}"

    def write_pending(self, mdt: TableParts, ts: str, action: Action, requested: bytes = b"") -> None:
        self.requested.append(ts)
        path = mdt.config.timeline_path
        self.mdt_storage.write_bytes(join(path, f"{ts}.{action}.requested"), requested)
        inflight = f"{ts}.inflight" if action is Action.COMMIT else f"{ts}.{action}.inflight"
        self.mdt_storage.write_bytes(join(path, inflight), b"")

    def complete(self, mdt: TableParts, ts: str, action: Action, written: list[tuple[str, str, int]],
                  operation: str, extra: dict[str, str] | None = None, compacted: bool = False) -> None:
        stats: dict[str, list[dict[str, Any]]] = {}
        for fg, path, size in written:
            folder = path.split("/", 1)[0]  # the MDT partition the file is in
            stats.setdefault(folder, []).append(WriteStat(
                file_id=fg, path=path, prev_commit="null", num_writes=1, partition_path=folder,
                file_size_in_bytes=size, total_write_bytes=size).to_dict())
        record: dict[str, Any] = {
            "partitionToWriteStats": stats,
            "compacted": compacted,
            "extraMetadata": {"schema": self.schema_json, **(extra or {})},
            "operationType": operation,
        }
        self.fault(f"{ts}: before completion")
        if self.version >= 8:
            record["version"] = 1
            name = f"{ts}_{self.new_time()}.{action}"
            content = encode_avro_instant(commit_metadata_schema(False), record)
        else:
            name = f"{ts}.{action}"
            content = json.dumps(record, indent=2).encode()
        self.mdt_storage.write_bytes(join(mdt.config.timeline_path, name), content)
        self.fault(f"{ts}: after completion")

    def roll_back_failed(self, mdt: TableParts, notes: list[str]) -> TableParts:
        """Delete what MDT instants that never completed wrote, then the instants."""
        pending = [i for i in mdt.timeline.instants if not i.is_completed]
        if not pending:
            return mdt
        for instant in pending:
            self.remove_instant(mdt, instant.requested_time)
            notes.append(f"metadata instant {instant.requested_time} had not completed; what it wrote was removed and is redone")
        return self.mdt()

    def remove_instant(self, mdt: TableParts, ts: str) -> None:
        """The files a pending MDT instant wrote (in any partition folder:
        secondary indexes too), then its timeline files."""
        _, folders = self.mdt_storage.list_dir("")
        for folder in sorted(name for name in folders if not name.startswith(".")):
            files, _ = self.mdt_storage.list_dir(folder)
            for f in files:
                parsed = classify(f.name, ".hfile", f.relative_path)
                if isinstance(parsed, (BaseFileName, LogFileName)) and (
                    parsed.instant_time == ts or isinstance(parsed, LogFileName) and self.written_only_by(f.relative_path, ts)
                ):
                    self.mdt_storage.delete_file(f.relative_path)
        for name in [n for n in self.timeline_names(mdt) if n.startswith((ts + ".", ts + "_"))]:  # v8+: <ts>_<completion>.<action>
            self.mdt_storage.delete_file(join(mdt.config.timeline_path, name))

    def written_only_by(self, relative: str, ts: str) -> bool:
        """v6 log names carry their slice's base instant, not the writer: a log
        whose blocks all belong to `ts` is one this writer started for it."""
        if self.version >= 8:
            return False
        blocks = read_log_blocks(self.mdt_storage.read_bytes(relative), self.mdt_storage.display_path(relative)).blocks
        return bool(blocks) and all(b.instant_time == ts for b in blocks)

    def timeline_names(self, mdt: TableParts) -> list[str]:
        files, _ = self.mdt_storage.list_dir(mdt.config.timeline_path)
        return [f.name for f in files]



def _written_before(mdt: TableParts, name: str) -> bool:
    """Whether a completed metadata-table commit wrote files of this partition."""
    timeline = mdt.timeline
    return any(stat.partition_path == name for instant in timeline.completed()
               if instant.action in (Action.DELTA_COMMIT, Action.COMMIT) for stat in timeline.commit_metadata(instant).write_stats())
