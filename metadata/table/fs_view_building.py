"""Building the file-system view (`metadata.table.fs_view`): which instants
are visible as of its instant, and each partition's file groups from its
listing (with the files a clean removed, for views of the past).
"""

from __future__ import annotations

import gc
import logging
import threading
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from metadata.errors import CleanedFilesError, HudiError, HudiFormatError, MissingFileError
from metadata.storage.listing import FileListing, ListingSource, StorageListing, partition_created_time
from metadata.storage.paths import StoredFile
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig
from metadata.table.file_group import FileGroup, FileSlice
from metadata.table.file_naming import BaseFileName, LogFileName, classify, file_id_of
from metadata.timeline.active import Timeline
from metadata.timeline.instant import Action, Instant, check_instant_time

log = logging.getLogger(__name__)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Building views allocates many small objects and no reference cycles;
    the cyclic collector would rescan them all again and again (measured:
    a quarter of the time at 30,000 files), so pause it meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class _Ghost:
    """A file a clean deleted; used to detect views that need it."""

    clean_instant: str


class ViewBuilding:
    """How the view is built: which instants are visible, and the file groups of a partition from its listing."""

    def __init__(self, config: TableConfig, timeline: Timeline, listing: FileListing, as_of: str | None = None,
                 include_pending: bool = False, check_committed_bases: bool = True) -> None:
        """`include_pending` also shows the files of pending commits and delta
        commits (Hive's `hoodie.<table>.consume.pending.commits`, used by
        pre-commit validation); pending replacecommits and compactions stay
        invisible, since what they replace is not final.
        `check_committed_bases=False` skips reading every commit's metadata
        to check a storage listing holds the base files it wrote; the caller
        checks the slices it doubts with `check_slices` (the metadata table's
        reader, where each commit read is two requests on an object store)."""
        self.config = config
        self.check_committed_bases = check_committed_bases
        self.timeline = timeline
        self.listing = listing
        latest = timeline.latest_completed()
        if as_of is not None:
            check_instant_time(as_of, "as-of instant")
            first = timeline.first_active_time()
            if first is not None and as_of < first and timeline.has_archived_instants:
                raise HudiError(
                    f"as-of instant {as_of} is older than the active timeline of {config.name} "
                    f"(starts at {first}); the instants before it are archived and not read"
                )
        self.as_of: str | None = as_of if as_of is not None else (latest.requested_time if latest else None)
        self.is_latest = as_of is None or latest is None or as_of >= latest.requested_time
        self._first_active = timeline.first_active_time()
        visible = [i for i in timeline.completed() if self.as_of is not None and i.requested_time <= self.as_of]
        if include_pending:
            visible += [i for i in timeline.instants if not i.is_completed and i.action in (Action.COMMIT, Action.DELTA_COMMIT)
                        and i.planned_action is not Action.COMPACTION]
            if visible:
                self.as_of = max(self.as_of or "", max(i.requested_time for i in visible))
        self._visible: dict[str, Instant] = {i.requested_time: i for i in visible}
        self._pending_compactions: dict[str, Instant] = {
            i.requested_time: i
            for i in timeline.instants
            if i.planned_action is Action.COMPACTION and self.as_of is not None
            and i.requested_time <= self.as_of and i.requested_time not in self._visible
        }
        self._replaced: set[tuple[str, str]] = set()
        self._deleted_partitions: set[str] = set()
        # What a reader of this view should know (also logged as warnings).
        self.warnings: list[str] = []
        for instant in visible:
            if instant.action is Action.REPLACE_COMMIT:
                if timeline.is_empty(instant):
                    raise HudiFormatError(
                        timeline.instant_file(instant),
                        "completed replacecommit is empty: the file groups it replaced are unknown, so the view cannot be built",
                    )
                meta = timeline.commit_metadata(instant)
                self._replaced |= meta.replaced_file_groups()
            elif instant.action is Action.CLEAN:
                self._deleted_partitions |= timeline.clean_metadata(instant).deleted_partitions()
            if self._deleted_partitions and instant.action.writes_data and not timeline.is_empty(instant):
                # A partition a clean removed whole is back once a later commit writes into it again.
                self._deleted_partitions -= {s.partition_path for s in timeline.commit_metadata(instant).write_stats()}
        self._groups_cache: dict[str, list[FileGroup]] = {}
        self._latest_slices: dict[str, list[FileSlice]] = {}
        self._group_slices: dict[str, dict[str, FileSlice | None]] = {}  # some groups' latest slices (None: none), by partition
        self._group_slices_kept = 0
        self._newest_bases: dict[str, dict[str, Instant]] = {}  # by partition, as checked
        self._commits_with_files: list[Instant] | None = None
        self._lock = threading.RLock()  # one lister serves many planner threads

    # Visibility -----------------------------------------------------------
    def _is_visible_instant(self, ts: str) -> bool:
        if ts in self._visible:
            return True
        # Written before the active timeline starts: archived, hence completed.
        return self._first_active is not None and ts < self._first_active and self.as_of is not None and ts <= self.as_of

    def _completion_time(self, ts: str) -> str:
        instant = self._visible.get(ts)
        return (instant.completion_time if instant and instant.completion_time else ts)

    def _pending_compaction_groups(self) -> dict[str, set[tuple[str, str]]]:
        return {ts: self.timeline.compaction_plan(i).file_groups() for ts, i in self._pending_compactions.items()}

    def pending_compaction_partitions(self) -> set[str]:
        """Partitions with a file group a pending compaction plans to compact (its slice spans two base instants)."""
        return {partition for groups in self._pending_compaction_groups().values() for partition, _ in groups}

    # Building file groups ---------------------------------------------------
    def partitions(self) -> list[str]:
        """Partitions with at least one visible file group.

        Through the metadata table at the latest instant this is its
        `__all_partitions__` record: it lists only committed files, so every
        listed partition has a visible group, unless a replacecommit replaced
        groups there or a rollback removed files there (Hudi keeps such a
        partition in the record); only those partitions get their groups built.
        """
        candidates = self._candidate_partitions()
        restored = any(i.action is Action.RESTORE for i in self._visible.values())
        if self.is_latest and self.listing.source is ListingSource.METADATA_TABLE and not restored:
            doubtful = {p for p, _ in self._replaced} | self._rolled_back_partitions()
            built = self._file_groups_for([p for p in candidates if p in doubtful])
            return [p for p in candidates if p not in doubtful or built[p]]
        all_groups = self._file_groups_for(candidates)
        return sorted(p for p, groups in all_groups.items() if groups)

    def _rolled_back_partitions(self) -> set[str]:
        touched: set[str] = set()
        for instant in self._visible.values():
            if instant.action is Action.ROLLBACK:
                rollback = self.timeline.rollback_metadata(instant)
                touched |= set(rollback.deleted_files) | set(rollback.log_files_written)
        return touched

    def _candidate_partitions(self) -> list[str]:
        names = set(self.listing.partitions())
        if not self.is_latest:
            # A clean may have removed a whole partition the past view needs.
            for instant in self.timeline.completed():
                if instant.action is Action.CLEAN:
                    names |= set(self.timeline.clean_metadata(instant).partitions)
        return sorted(p for p in names if p not in self._deleted_partitions)

    def file_groups(self, partition: str) -> list[FileGroup]:
        return self._file_groups_for([partition])[partition]

    def _file_groups_for(self, partitions: list[str]) -> dict[str, list[FileGroup]]:
        with self._lock, paused_gc():
            return self._file_groups_locked(partitions)

    def _file_groups_locked(self, partitions: list[str]) -> dict[str, list[FileGroup]]:
        missing = [p for p in partitions if p not in self._groups_cache]
        if missing:
            listed = self.listing.files_for(missing)
            ghosts, attributed, pending_groups = self._build_inputs(missing)
            for partition in missing:
                self._groups_cache[partition] = self._build_groups(
                    partition, listed.get(partition, []), ghosts.get(partition, {}), attributed, pending_groups
                )
        return {p: self._groups_cache[p] for p in partitions}

    def _build_inputs(self, partitions: list[str]) -> tuple[dict[str, dict[str, _Ghost]], dict[str, str] | None,
                                                            dict[str, set[tuple[str, str]]]]:
        """What building these partitions' groups needs beyond their files:
        files cleans removed (past views), v6 MOR log writers, pending
        compactions' file groups."""
        ghosts = self._cleaned_files(partitions) if not self.is_latest else {}
        attributed = self._log_writers() if self.config.timeline_layout_version < 2 and self.config.is_mor else {}
        pending_groups = self._pending_compaction_groups() if self._pending_compactions else {}
        return ghosts, attributed, pending_groups

    def _latest_of(self, groups: list[FileGroup]) -> list[FileSlice]:
        """The latest slice of each group, by file id."""
        pending = set(self._pending_compactions)
        return sorted((s for s in (g.latest_slice(pending) for g in groups) if s is not None), key=lambda s: s.file_id)

    def _build_groups(
        self,
        partition: str,
        files: list[StoredFile],
        ghosts: dict[str, _Ghost],
        log_writers: dict[str, str] | None,
        pending_groups: dict[str, set[tuple[str, str]]],
        only: set[str] | None = None,
    ) -> list[FileGroup]:
        """The partition's visible file groups; with `only`, just those file ids."""
        extension = self.config.base_file_format.extension
        bases: dict[str, list[tuple[BaseFileName, int]]] = {}
        logs: dict[str, list[tuple[LogFileName, int]]] = {}
        entries = [(f.relative_path.rpartition("/")[2], f.size, f.relative_path) for f in files]
        if ghosts:
            present = {name for name, _, _ in entries}
            entries += [(name, 0, name) for name in ghosts if name not in present]
        if only is not None:
            entries = [e for e in entries if file_id_of(e[0]) in only]
        for name, size, where in entries:
            parsed = classify(name, extension, where)
            if isinstance(parsed, BaseFileName):
                if self._is_visible_instant(parsed.instant_time):
                    bases.setdefault(parsed.file_id, []).append((parsed, size))
                else:
                    log.debug("not listed: %s (instant %s not completed as of %s)", where, parsed.instant_time, self.as_of)
            elif isinstance(parsed, LogFileName):
                logs.setdefault(parsed.file_id, []).append((parsed, size))

        groups: list[FileGroup] = []
        for file_id in sorted(set(bases) | set(logs)):
            if (partition, file_id) in self._replaced:
                continue
            group = FileGroup(partition, file_id)
            for base, size in bases.get(file_id, []):
                group.add_base(base, size)
            pending_keys = {ts for ts, fgs in pending_groups.items() if (partition, file_id) in fgs} if pending_groups else set()
            for ts in pending_keys:
                group.add_slice_key(ts)
            group_logs = logs.get(file_id)
            if group_logs:
                self._attach_logs(group, group_logs, pending_keys, log_writers)
            if not group.has_slices():
                continue
            if not ghosts:
                groups.append(group)
                continue
            latest = group.latest_slice(set(self._pending_compactions))
            if latest is None:
                continue
            for path in latest.files:
                name = path.rsplit("/", 1)[-1]
                if name in ghosts:
                    raise CleanedFilesError(
                        f"{self.config.name}: the view as of {self.as_of} needs {path}, "
                        f"which the clean at {ghosts[name].clean_instant} deleted; pick a later instant"
                    )
            groups.append(group)
        if isinstance(self.listing, StorageListing) and self.check_committed_bases:
            newest = {file_id: max(b.instant_time for b, _ in found) for file_id, found in bases.items()}
            self._check_newest_bases(partition, newest, self.listing.storage, only)
        return groups

    def _check_newest_bases(self, partition: str, stored: dict[str, str], storage: Storage, only: set[str] | None = None,
                            since_made: bool = False) -> None:
        """Storage must hold the newest base file each visible commit wrote: a
        missing one would make the view serve the version before it. (The
        metadata table lists what was committed, so it needs no such check.)
        With `since_made`, only commits from the folder's making on count."""
        missing = [(file_id, instant) for file_id, instant in self._written_bases(partition).items()
                   if (partition, file_id) not in self._replaced and (only is None or file_id in only)
                   and stored.get(file_id, "") < instant.requested_time]
        if missing and since_made:
            made = partition_created_time(storage, partition)
            missing = [(file_id, instant) for file_id, instant in missing if made is None or instant.requested_time >= made]
        if missing:
            file_id, instant = missing[0]
            path = next(path for p, fid, path in self.timeline.written_files(instant)
                        if p == partition and fid == file_id and path.endswith(self.config.base_file_format.extension))
            raise MissingFileError(storage.full_path(path), instant.requested_time, instant.action.value)

    def _written_bases(self, partition: str) -> dict[str, Instant]:
        """File id -> the newest visible commit that wrote a base file for it in
        the partition. Per partition, from the timeline's index of each
        commit's base files: a view of a few partitions of a million-file
        table (each run of a sync's roll-up makes one) does not gather every
        file every commit wrote."""
        if partition not in self._newest_bases:
            newest: dict[str, Instant] = {}
            extension = self.config.base_file_format.extension
            for instant in self._visible_commits():
                for file_id in self.timeline.written_base_ids_in(instant, partition, extension):
                    newest[file_id] = instant
            self._newest_bases[partition] = newest
        return self._newest_bases[partition]

    def _visible_commits(self) -> list[Instant]:
        """The visible completed commits with metadata, oldest first (once per view)."""
        if self._commits_with_files is None:
            self._commits_with_files = [i for i in sorted(self._visible.values(), key=lambda i: i.requested_time)
                                        if i.is_commit and not self.timeline.is_empty(i)]
        return self._commits_with_files

    def _attach_logs(
        self,
        group: FileGroup,
        logs: list[tuple[LogFileName, int]],
        pending_keys: set[str],
        log_writers: dict[str, str] | None,
    ) -> None:
        if self.config.timeline_layout_version < 2:
            for name, size in logs:
                base = name.instant_time
                if not (self._is_visible_instant(base) or base in pending_keys or base in self._pending_compactions):
                    continue
                if log_writers is None:
                    group.add_log(base, name, size)
                    continue
                writer = log_writers.get(name.name)
                if writer is None and self._first_active is not None and base >= self._first_active:
                    # Archival removes the oldest instants first, so the writer of a
                    # log whose base is active is active too: no completed instant
                    # names this file, hence a failed or pending write wrote it.
                    log.debug("not listed: %s (no completed instant wrote it)", name.name)
                    continue
                if writer is not None and not self._is_visible_instant(writer):
                    continue  # written after the view's instant
                group.add_log(base, name, size)
            return
        # Layout 2: the log's instant is its writer; it joins the newest slice
        # whose base instant is not after the writer's completion time.
        visible_logs = [(n, s) for n, s in logs if self._is_visible_instant(n.instant_time)]
        visible_logs.sort(key=lambda item: (self._completion_time(item[0].instant_time), item[0].sort_key()))
        for name, size in visible_logs:
            keys = group.slice_keys()
            completion = self._completion_time(name.instant_time)
            position = bisect_right(keys, completion)
            base = keys[position - 1] if position else name.instant_time
            group.add_log(base, name, size)

    # Extra reads for views of the past ---------------------------------------
    def _cleaned_files(self, partitions: list[str]) -> dict[str, dict[str, _Ghost]]:
        wanted = set(partitions)
        ghosts: dict[str, dict[str, _Ghost]] = {}
        for instant in self.timeline.completed():
            if instant.action is not Action.CLEAN:
                continue
            for partition, names in self.timeline.clean_metadata(instant).deleted_file_names().items():
                if partition in wanted:
                    for name in names:
                        ghosts.setdefault(partition, {})[name] = _Ghost(instant.requested_time)
        return ghosts

    def _log_writers(self) -> dict[str, str] | None:
        """Log file name -> first completed instant that wrote or named it;
        None when a completed commit's metadata is empty, so which logs it
        wrote is unknown (logs are then listed as Hudi lists them).

        Table v6 log names carry the base instant only; commit metadata says
        which delta commit wrote a log (`path`) and which logs a slice held
        then (`logFiles`); rollbacks name the logs their command blocks went to.
        """
        empty = [i for i in self.timeline.completed() if i.is_commit and self.timeline.is_empty(i)]
        if empty:
            self._warn(
                f"{self.timeline.instant_file(empty[0])} is empty: log files are listed by base instant, as Hudi lists them, "
                "including any a failed write left (readers skip their blocks)"
            )
            return None
        writers: dict[str, str] = {}
        for instant in self.timeline.completed():
            ts = instant.requested_time
            if instant.is_commit:
                for stat in self.timeline.commit_metadata(instant).write_stats():
                    if stat.file_name.startswith("."):
                        writers.setdefault(stat.file_name, ts)
                    for name in stat.log_files:
                        writers.setdefault(name.rsplit("/", 1)[-1], ts)
            elif instant.action is Action.ROLLBACK:
                for names in self.timeline.rollback_metadata(instant).log_files_written.values():
                    for name in names:
                        writers.setdefault(name, ts)
        return writers

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning("%s", message)

