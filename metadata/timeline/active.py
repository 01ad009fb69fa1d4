"""The active timeline of a table (layouts 1 and 2) and its instant metadata."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import pyarrow as pa

from metadata.errors import HudiError, HudiFormatError, InstantNotFound, NoSchemaError
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig
from metadata.timeline.archived import archive_folder, read_archived_commits
from metadata.timeline.commit_metadata import CleanMetadata, CommitMetadata, CompactionPlan, RollbackMetadata, written_files
from metadata.timeline.instant import (
    Action,
    DuplicateInstantError,
    Instant,
    fold_instant_files,
    parse_instant_file_name,
)
from metadata.timeline.instant_content import MAX_DOCUMENT_DEPTH, MAX_INSTANT_BYTES, decode_instant_content, nesting_depth
from metadata.util import arrow_values

T = TypeVar("T")
# A completed instant file that is empty or does not decode, and was written
# less than this long ago, may be one a Hudi writer is writing right now: on
# file systems without atomic create (local disk), Hudi creates the file, then
# writes it. It is read again while it changes before it counts as empty or damaged.
WRITER_GRACE_SECONDS = 30.0
WRITER_PAUSES = (0.3, 0.6, 1.2)  # seconds; a writer that stops changing the file for one of them is done



class Timeline:
    """Instants of the active timeline, read with one listing.

    Instant metadata is read lazily and cached, so planning that needs only
    a few commits reads only those files.
    """

    def __init__(self, storage: Storage, config: TableConfig, instants: list[Instant], sizes: dict[str, int] | None = None) -> None:
        self.storage = storage
        self.config = config
        self.instants = instants
        self._sizes = sizes or {}  # timeline file name -> bytes, from the one listing
        self._by_time = {i.requested_time: i for i in instants}
        self._cache: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, storage: Storage, config: TableConfig) -> Timeline:
        seen: set[str] | None = None
        for pause in (*WRITER_PAUSES, None):
            files, _ = storage.list_dir(config.timeline_path)
            parsed = [p for p in (parse_instant_file_name(f.name) for f in files) if p is not None]
            try:
                timeline = cls(storage, config, fold_instant_files(parsed), {f.name: f.size for f in files})
            except DuplicateInstantError as exc:
                raise HudiFormatError(storage.full_path(config.timeline_path), f"inconsistent timeline: {exc}") from None
            being_written = {i.file_name for i in timeline.commits() if timeline.is_empty(i) and timeline._written_just_now(timeline.instant_path(i))}
            if pause is None or not being_written or being_written == seen:
                return timeline  # none, or the same still empty a moment later: no writer is at them
            seen = being_written
            time.sleep(pause)  # a writer is writing a commit's file: list again once it has
        raise AssertionError("unreachable")

    def _written_just_now(self, path: str) -> bool:
        """Written within WRITER_GRACE_SECONDS: a writer may still be at it."""
        modified = self.storage.modified_time(path)
        return modified is not None and time.time() - modified < WRITER_GRACE_SECONDS

    # Queries -------------------------------------------------------------
    @property
    def uses_completion_time(self) -> bool:
        """Layout 2 orders changes by completion time (table v8+)."""
        return self.config.timeline_layout_version >= 2

    def completed(self) -> list[Instant]:
        return [i for i in self.instants if i.is_completed]

    def pending(self) -> list[Instant]:
        return [i for i in self.instants if not i.is_completed]

    def commits(self) -> list[Instant]:
        """Completed commit, deltacommit and replacecommit instants."""
        return [i for i in self.instants if i.is_commit]

    def latest_completed(self) -> Instant | None:
        done = self.completed()
        return done[-1] if done else None

    def latest_commit(self) -> Instant | None:
        done = self.commits()
        return done[-1] if done else None

    def get(self, requested_time: str) -> Instant | None:
        return self._by_time.get(requested_time)

    def require(self, requested_time: str) -> Instant:
        instant = self._by_time.get(requested_time)
        if instant is None:
            raise InstantNotFound(
                f"instant {requested_time} is not on the active timeline of {self.config.name} "
                f"({len(self.instants)} instants, {self._span()})"
            )
        return instant

    def is_completed(self, requested_time: str) -> bool:
        instant = self._by_time.get(requested_time)
        return instant is not None and instant.is_completed

    def completed_or_archived(self, requested_time: str) -> bool:
        """Completed, on the active timeline or before it: Hudi archives completed instants only, so a file
        written at a time older than the active timeline, where instants were archived, was committed."""
        if self.is_completed(requested_time):
            return True
        first = self.first_active_time()
        return first is not None and requested_time < first and self.has_archived_instants

    def first_active_time(self) -> str | None:
        return self.instants[0].requested_time if self.instants else None

    @cached_property
    def has_archived_instants(self) -> bool:
        """Whether instants older than the active timeline were archived."""
        files, folders = self.storage.list_dir(archive_folder(self.config))
        # version 6's archive logs are dot files (.commits_.archive.1_1-0-1), their checksums too
        return any(not f.name.startswith(".") or (".archive." in f.name and not f.name.endswith(".crc")) for f in files) or bool(folders)

    def archived_commits(self) -> list[Instant]:
        """The completed commits Hudi archived, oldest first, read once (`metadata.timeline.archived`);
        `commit_metadata` then answers for them too."""
        with self._lock:
            held = self._cache.get(("archived", ""))
        if held is None:
            found = read_archived_commits(self.storage, self.config)
            with self._lock:
                for commit in found:
                    self._cache.setdefault(("commit", commit.instant.requested_time), commit.metadata)
                held = self._cache.setdefault(("archived", ""), [c.instant for c in found])
        return list(held)

    def _span(self) -> str:
        if not self.instants:
            return "empty"
        return f"from {self.instants[0].requested_time} to {self.instants[-1].requested_time}"

    # Instant content -----------------------------------------------------
    def instant_path(self, instant: Instant, file_name: str | None = None) -> str:
        return join(self.config.timeline_path, file_name or instant.file_name)

    def read_content(self, instant: Instant, file_name: str | None = None) -> dict[str, Any]:
        path = self.instant_path(instant, file_name)
        seen: bytes | None = None
        for pause in (*WRITER_PAUSES, None):
            try:
                data = self.storage.read_bytes(path, max_bytes=MAX_INSTANT_BYTES)
            except FileNotFoundError:
                raise HudiFormatError(self.storage.full_path(path), "instant file disappeared while reading the timeline") from None
            try:
                return decode_instant_content(self.storage.full_path(path), data)
            except HudiFormatError:
                if pause is None or data == seen or not self._written_just_now(path):
                    raise  # old, or unchanged a moment later: damaged, not being written
                seen = data
                time.sleep(pause)  # cut short and just written: a writer may still be writing it
        raise AssertionError("unreachable")

    def _cached(self, kind: str, instant: Instant, build: Callable[[], T]) -> T:
        key = (kind, instant.requested_time)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = build()
        with self._lock:
            self._cache[key] = value
        return value

    def is_empty(self, instant: Instant) -> bool:
        """A completed instant whose file has no bytes: Hudi reads it as empty
        metadata, but which files it wrote or replaced is unknown."""
        return instant.is_completed and self._sizes.get(instant.file_name) == 0

    def instant_file(self, instant: Instant) -> str:
        return self.storage.full_path(self.instant_path(instant))

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        if not instant.is_commit:
            raise ValueError(f"{instant} is not a completed commit")
        source = self.instant_file(instant)
        return self._cached("commit", instant, lambda: CommitMetadata.from_dict(source, self.read_content(instant)))

    def written_files(self, instant: Instant) -> list[tuple[str, str, str]]:
        """(partition, file id, path) of the files a completed commit wrote."""
        if not instant.is_commit:
            raise ValueError(f"{instant} is not a completed commit")
        held = self._written_held(instant)
        return held if held is not None else self._cached("written", instant, lambda: self._written_decoded(instant))

    def _written_once(self, instant: Instant) -> list[tuple[str, str, str]]:
        """`written_files` without keeping the list (the index keeps it compact)."""
        held = self._written_held(instant)
        return held if held is not None else self._written_decoded(instant)

    def _written_held(self, instant: Instant) -> list[tuple[str, str, str]] | None:
        """`written_files` from what the cache already holds: the decoded commit, or the list itself."""
        with self._lock:
            commit = self._cache.get(("commit", instant.requested_time))
            written = self._cache.get(("written", instant.requested_time))
        if commit is not None:
            return [(s.partition_path, s.file_id, s.path or "") for s in commit.write_stats()]
        return written

    def _written_decoded(self, instant: Instant) -> list[tuple[str, str, str]]:
        return written_files(self.instant_file(instant), self.read_content(instant))

    def written_base_ids_in(self, instant: Instant, partition: str, extension: str) -> list[str]:
        """File ids of the base files (names ending in `extension`) a completed
        commit wrote in one partition, in the commit's order. From a compact
        index of the commit built once: views of many partitions each ask (a
        sync's roll-up runs), and a million-file timeline's ids take 40 MB in
        Arrow buffers where its (partition, id, path) tuples took 400."""
        if not instant.is_commit:
            raise ValueError(f"{instant} is not a completed commit")
        index = self._cached(f"written-bases{extension}", instant, lambda: WrittenBases.of(self._written_once(instant), extension))
        return index.file_ids_in(partition)

    def written_file_names(self) -> frozenset[str]:
        """Names of every file a completed commit wrote (a v6 log's name says
        only its slice's base instant, not which instant wrote it)."""
        key = ("written-names", "")
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            cached = frozenset(path.rsplit("/", 1)[-1] for i in self.commits() for _, _, path in self.written_files(i))
            with self._lock:
                self._cache[key] = cached
        return cached

    def clean_metadata(self, instant: Instant) -> CleanMetadata:
        if instant.action is not Action.CLEAN or not instant.is_completed:
            raise ValueError(f"{instant} is not a completed clean")
        source = self.instant_file(instant)
        return self._cached("clean", instant, lambda: CleanMetadata.from_dict(source, self.read_content(instant)))

    def rollback_metadata(self, instant: Instant) -> RollbackMetadata:
        if instant.action is not Action.ROLLBACK or not instant.is_completed:
            raise ValueError(f"{instant} is not a completed rollback")
        source = self.instant_file(instant)
        return self._cached("rollback", instant, lambda: RollbackMetadata.from_dict(source, self.read_content(instant)))

    def compaction_plan(self, instant: Instant) -> CompactionPlan:
        """The plan in a compaction's `.requested` file."""
        name = instant.requested_file_name
        if not instant.is_compaction or name is None:
            return CompactionPlan(())
        source = self.storage.full_path(self.instant_path(instant, name))
        return self._cached("plan", instant, lambda: CompactionPlan.from_dict(source, self.read_content(instant, name)))

    def avro_schema(self) -> dict[str, Any]:
        """The table's Avro schema (latest commit's, else the create schema)."""
        text = self.latest_schema()
        if not text:
            if self.latest_completed() is None:  # a writer may be at its first commit now
                raise NoSchemaError(f"{self.storage.uri}: the table has no completed commit yet, so no schema")
            raise NoSchemaError(f"{self.storage.uri}: no commit records a schema and hoodie.properties has no create schema")
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HudiError(f"{self.storage.uri}: the table's Avro schema is not valid JSON ({exc.msg} at {exc.pos})") from None
        except RecursionError:
            schema = None
        if not isinstance(schema, dict) or nesting_depth(schema) > MAX_DOCUMENT_DEPTH:
            raise HudiError(f"{self.storage.uri}: the table's Avro schema is not a record schema of at most {MAX_DOCUMENT_DEPTH} levels")
        return schema

    def latest_schema(self) -> str | None:
        """The Avro schema of the latest commit that recorded one."""
        for instant in reversed(self.commits()):
            schema = self.commit_metadata(instant).schema
            if schema:
                return schema
        return self.config.raw.get("hoodie.table.create.schema") or None


class WrittenBases:
    """One commit's base files by partition: their file ids in one Arrow string
    array, grouped by partition, each partition's stretch found by offsets."""

    def __init__(self, runs: dict[str, tuple[int, int]], file_ids: pa.StringArray) -> None:
        self._runs = runs
        self._file_ids = file_ids

    @classmethod
    def of(cls, written: list[tuple[str, str, str]], extension: str) -> WrittenBases:
        bases = [(partition, file_id) for partition, file_id, path in written
                 if file_id and path.endswith(extension) and not path.rpartition("/")[2].startswith(".")]
        bases.sort(key=lambda base: base[0])  # stable: a partition keeps the commit's order
        runs: dict[str, tuple[int, int]] = {}
        for at, (partition, _) in enumerate(bases):
            start = runs[partition][0] if partition in runs else at
            runs[sys.intern(partition)] = (start, at + 1)  # interned: every commit's index shares the names
        return cls(runs, arrow_values.array([file_id for _, file_id in bases], pa.string()))

    def file_ids_in(self, partition: str) -> list[str]:
        start, stop = self._runs.get(partition, (0, 0))
        return self._file_ids.slice(start, stop - start).to_pylist()
