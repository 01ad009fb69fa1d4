"""The transaction around a metadata-table write: the writer lock, the MDT's
instants (requested, inflight, completed) and their times, `hoodie.properties`
changed through its backup, and the undo of everything a failed write left
pending (its files and instants, a metadata folder it created, the table's
properties and index definitions as they were), so that a failed write
leaves the table as it found it. What the partitions hold is written by the
partition writers (metadata.mdt.write.partitions); only this touches the timeline.

Hudi's writers may be writing the same table (docs/concurrency.md): a write
takes Hudi's lock when the table's writers configure one, and otherwise
waits, bounded, until no Hudi writer is at work (`ensure_clear`); it rolls
back only the pending metadata-table instants a run of ours left, never
another writer's; and it completes an instant only while that instant's
inflight file is still there (a writer that rolled it back wins)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from metadata.concurrency import HudiLock, LiveInstant, WriterActivity, WriterOptions, hudi_lock
from metadata.errors import IndexWriteError, WriterActive
from metadata.formats.log_format import read_log_blocks
from metadata.mdt.file_groups import PARTITION_ORDER, MdtPartition, MetadataPartition
from metadata.mdt.reader import METADATA_FOLDER
from metadata.mdt.secondary_index import INDEX_DEFS_PATH
from metadata.mdt.write.writer_lock import WriterLock
from metadata.storage.calls import default_timeout
from metadata.storage.paths import join
from metadata.table.config import (
    METADATA_PARTITIONS_KEY,
    PROPERTIES_BACKUP_PATH,
    PROPERTIES_PATH,
    BaseFileFormat,
    TableConfig,
    TableType,
    parse_java_properties,
    update_table_config,
)
from metadata.table.file_naming import BaseFileName, LogFileName, classify
from metadata.table.stored_table import TableParts
from metadata.timeline.commit_metadata import WriteStat
from metadata.timeline.instant import BEFORE_ALL_INSTANTS, Action
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import commit_metadata_schema

log = logging.getLogger(__name__)

Fault = Callable[[str], None]
WRITER_KEY = "hudi-bridge.writer"  # extra metadata of every metadata-table commit hudi-bridge writes
WAIT_POLL_SECONDS = 0.5


class MetadataTransaction:
    """One writer's view of the table and its metadata table, and the instants it writes."""

    def __init__(self, data: TableParts, schema_json: str, fault: Fault | None = None,
                 writer_options: Mapping[str, str] | None = None, wait_seconds: float | None = None) -> None:
        """`writer_options`: Hudi writer options the user gave (lock provider,
        heartbeat), over the table's own; `wait_seconds`: how long a write waits
        for a Hudi writer at work when no lock is shared (default: the storage timeout)."""
        self.data = data
        self.given_options = dict(writer_options or {})
        self.wait_seconds = wait_seconds
        self.options = WriterOptions.of(data.config.raw, self.given_options)
        self.shared_lock: HudiLock | None = None
        self.lock: WriterLock | None = None
        self._cleared = False
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
        with ExitStack() as held:
            self.lock = held.enter_context(WriterLock(self.storage))
            self.reload()
            self.options = WriterOptions.of(self.data.config.raw, self.given_options)
            self.shared_lock = hudi_lock(self.storage, self.options, self.data.config.name, frozenset(self.given_options))
            if self.shared_lock is not None:
                held.enter_context(self.shared_lock)
                self.reload()
            self._cleared = False
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
                self.storage.delete_dir(METADATA_FOLDER)
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
                        self.mdt_storage.delete_dir(name)
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

    def ours_left(self) -> set[str]:
        """Pending metadata-table instants a killed run of ours left (the only ones we roll back)."""
        return set(self.lock.left_pending) if self.lock else set()

    def live_writers(self) -> list[LiveInstant]:
        """Instants a Hudi writer may be writing now, in either timeline (ours left out)."""
        activity = WriterActivity(self.storage, self.options)
        live = activity.live(self.data)
        if self.mdt_storage.exists(".hoodie/hoodie.properties"):
            live += activity.live(self.mdt(), skip=self.ours_left() | set(self.requested), in_metadata_table=True)
        return live

    def ensure_clear(self) -> bool:
        """Before the first write of an operation. With Hudi's lock held,
        Hudi's writers record their commits in the metadata table only
        under it: nothing to wait for. Without a shared lock, wait (bounded)
        until no Hudi writer is at work, then look at the table afresh; a
        writer still at work at the deadline is refused in one line. True
        when it waited: what the caller read before may be stale."""
        if self._cleared:
            return False
        waited = False
        if self.shared_lock is None:
            wait = default_timeout() if self.wait_seconds is None else self.wait_seconds
            deadline = time.monotonic() + wait
            while live := self.live_writers():
                if time.monotonic() >= deadline:
                    raise WriterActive(
                        f"{self.storage.uri}: a Hudi writer is at work ({live[0].describe()}{' and more' if len(live) > 1 else ''}) "
                        f"and no lock provider is configured, so hudi-bridge does not write the metadata table beside it "
                        f"(waited {wait:g} s). Run it when the writer is idle, or give the table's writers and hudi-bridge one "
                        "lock: hoodie.write.lock.provider with its settings (--hoodie-option; docs/concurrency.md)")
                if not waited:
                    log.warning("%s: waiting up to %g s for a Hudi writer at work (%s)", self.storage.uri, wait, live[0].describe())
                    waited = True
                time.sleep(WAIT_POLL_SECONDS)
                self.reload()  # what the next look sees, and the caller after the last
        self._cleared = True
        return waited

    def set_config(self, changes: dict[str, str | None]) -> None:
        self.ensure_clear()
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
            self.storage.delete_dir(METADATA_FOLDER)
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
        """A new metadata-table instant, requested and inflight, named in our lock first (ours to roll back if we die)."""
        self.ensure_clear()
        if mdt.timeline.get(ts) is not None:
            raise IndexWriteError(f"{self.mdt_storage.uri}: metadata instant {ts} already exists ({mdt.timeline.get(ts)}); "
                                  "another writer wrote it: nothing was written")
        self.requested.append(ts)
        if self.lock is not None:
            self.lock.record_pending(ts)
        path = mdt.config.timeline_path
        self.mdt_storage.write_bytes(join(path, f"{ts}.{action}.requested"), requested)
        self.mdt_storage.write_bytes(join(path, inflight_name(ts, action)), b"")

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
            "extraMetadata": {"schema": self.schema_json, WRITER_KEY: "hudi-bridge", **(extra or {})},
            "operationType": operation,
        }
        self.fault(f"{ts}: before completion")
        started = Action.COMPACTION if compacted else action
        if not self.mdt_storage.exists(join(mdt.config.timeline_path, inflight_name(ts, started))):
            # Another writer rolled our instant back while we wrote it (Hudi's eager rollback of pending
            # instants): completing it now would make files count that it deleted.
            raise IndexWriteError(f"{self.mdt_storage.uri}: metadata instant {ts} was rolled back by another writer while "
                                  "hudi-bridge wrote it; nothing of it was completed (run again when the writer is idle)")
        if self.version >= 8:
            record["version"] = 1
            name = f"{ts}_{self.new_time()}.{action}"
            content = encode_avro_instant(commit_metadata_schema(False), record)
        else:
            name = f"{ts}.{action}"
            content = json.dumps(record, indent=2).encode()
        self.mdt_storage.write_bytes(join(mdt.config.timeline_path, name), content)
        if self.lock is not None:
            self.lock.record_done(ts)
        self.fault(f"{ts}: after completion")

    def roll_back_failed(self, mdt: TableParts, notes: list[str]) -> TableParts:
        """Delete what failed pending MDT instants wrote, then the instants:
        those a killed run of ours left, and those whose data instant
        completed while they stayed pending, once their writer shows no sign
        of life for the heartbeat window (it moved on and never comes back to
        them). Any other pending instant is its writer's own: left alone
        (Hudi's writer rolls back its failed ones)."""
        ours = self.ours_left()
        activity = WriterActivity(self.storage, self.options)
        removed = []
        for instant in mdt.timeline.pending():
            ts = instant.requested_time
            if ts in ours:
                why = "of an earlier hudi-bridge run had not completed"
            elif self.data.timeline.is_completed(ts) and not instant.is_compaction:
                sign = activity.last_sign_of_life(mdt, instant)
                if sign is not None and sign[0] <= activity.window:
                    notes.append(f"metadata instant {ts} is pending and its writer was active {sign[0]:.0f} s ago ({sign[1]}): left to it")
                    continue
                why = "stayed pending after its data instant completed, and its writer shows no sign of life"
            else:
                notes.append(f"metadata instant {ts} ({instant.action}) is pending, written by another writer: left to it")
                continue
            self.remove_instant(mdt, ts)
            removed.append(ts)
            notes.append(f"metadata instant {ts} {why}; what it wrote was removed and is redone")
        if self.lock is not None:
            self.lock.record_rolled_back()
        return self.mdt() if removed else mdt

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



def inflight_name(ts: str, action: Action) -> str:
    """The inflight file of an instant (v6 and v8 alike: a commit's is `<ts>.inflight`)."""
    return f"{ts}.inflight" if action is Action.COMMIT else f"{ts}.{action}.inflight"


def _written_before(mdt: TableParts, name: str) -> bool:
    """Whether a completed metadata-table commit wrote files of this partition."""
    timeline = mdt.timeline
    return any(stat.partition_path == name for instant in timeline.completed()
               if instant.action in (Action.DELTA_COMMIT, Action.COMMIT) for stat in timeline.commit_metadata(instant).write_stats())
