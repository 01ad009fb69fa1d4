"""The served tables, each kept warm: one lister (its timeline, file-system
view and metadata-table reads) per table, replaced when the table changes.

A table is looked at again at most once per `refresh_seconds`, and only
when a request needs it: three listings (`.hoodie`, the timeline folder and
the metadata table's timeline), compared by file names and sizes. A new
commit, a metadata-table sync or a changed `hoodie.properties` gives a new
lister; plans still running on the old one finish on it."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

from engine_bridge.service.config import Limits, ServiceConfig, TableEntry
from engine_bridge.service.errors import ServiceError
from engine_bridge.service.plans import Answer
from listers import DirectoryLister
from metadata import HudiTable
from metadata.errors import HudiError
from metadata.storage.storage import Storage
from metadata.util.arrow_memory import release_unused

Signature = tuple[tuple[str, int], ...]


def _listing(storage: Storage, relative: str) -> Signature:
    try:
        files, _ = storage.list_dir(relative)
    except (FileNotFoundError, HudiError):
        return ()
    return tuple(sorted((f.name, f.size) for f in files))


class ServedTable:
    """One registered table and its warm lister."""

    def __init__(self, entry: TableEntry, limits: Limits) -> None:
        self.entry = entry
        self.limits = limits
        self._lock = threading.Lock()
        self._lister: DirectoryLister | None = None
        self._signature: Signature | None = None
        self._checked = 0.0
        self.opened = 0  # how many times a lister was opened (the first, then one per change seen)
        # Answers to plans (and change feeds) asked before, while the table has not changed, most recent last.
        self._answers: OrderedDict[Hashable, Answer] = OrderedDict()
        self.answers_reused = 0

    @property
    def name(self) -> str:
        return self.entry.name

    def _signature_of(self, table: HudiTable) -> Signature:
        storage, timeline_path = table.storage, table.config.timeline_path
        mdt_timeline = f".hoodie/metadata/{timeline_path}"
        return _listing(storage, ".hoodie") + (("|", 0),) + _listing(storage, timeline_path) + (("|", 0),) + _listing(storage, mdt_timeline)

    def lister(self) -> DirectoryLister:
        """The warm lister of the table as it is now (seen within `refresh_seconds`)."""
        with self._lock:
            now = time.monotonic()
            current = self._lister
            if current is not None and now - self._checked < self.limits.refresh_seconds:
                return current
            try:
                if current is not None and self._signature_of(current.table) == self._signature:
                    self._checked = now
                    return current
                fresh = DirectoryLister.open(self.entry.uri, storage_options=self.entry.storage_options)
                self._signature = self._signature_of(fresh.table)
            except HudiError as exc:
                raise ServiceError.refused(exc) from None
            self._lister, self._checked = fresh, now
            self._answers.clear()  # they answered for the table as it was
            self.opened += 1
            current = None  # the old state: nothing here holds it now
        # What the old state's reads held is free now (unless a plan still runs on it): handed back to the system,
        # else glibc keeps up to its trim threshold per arena and a service's memory climbs with every commit.
        release_unused()
        return fresh

    def answer(self, key: Hashable, compute: Callable[[DirectoryLister], Answer]) -> Answer:
        """A plan's answer for the table as it is now: one asked before while the table has not changed, or
        `compute(lister)`'s on the one lister this answer is for: its instant, its view and its plan come from the same
        state of the table. Kept answers name at most `limits.answer_cache_slices` file slices in all (the oldest go first)."""
        lister = self.lister()  # sees a change first, which clears what was kept
        with self._lock:
            held = self._answers.get(key) if self._lister is lister else None
            if held is not None:
                self._answers.move_to_end(key)
                self.answers_reused += 1
                return held
        computed = compute(lister)
        if len(computed[1]) <= self.limits.answer_cache_slices:
            with self._lock:
                if self._lister is lister:
                    self._answers[key] = computed
                    held_slices = sum(len(slices) for _, slices in self._answers.values())
                    while len(self._answers) > self.limits.answer_cache_entries or held_slices > self.limits.answer_cache_slices:
                        _, (_, dropped) = self._answers.popitem(last=False)
                        held_slices -= len(dropped)
        return computed

    def table(self) -> HudiTable:
        return self.lister().table

    @contextmanager
    def lister_as_of(self, as_of: str | None, current: DirectoryLister | None = None) -> Iterator[DirectoryLister]:
        """The warm lister (`current`, when the caller holds it already), or for a past instant a lister of its own,
        closed after (views of the past are not kept)."""
        if as_of is None:
            yield current or self.lister()
            return
        try:
            table = HudiTable.open(self.entry.uri, storage_options=self.entry.storage_options)
            lister = DirectoryLister(table, as_of)
        except HudiError as exc:
            raise ServiceError.refused(exc) from None
        with lister:
            yield lister


class TableRegistry:
    """Tables by name; a name not registered is a 404, and no request ever names a path."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self._tables = {entry.name: ServedTable(entry, config.limits) for entry in config.tables}

    def names(self) -> list[str]:
        return sorted(self._tables)

    def get(self, name: str) -> ServedTable:
        served = self._tables.get(name)
        if served is None:
            raise ServiceError("table_not_found", 404, f"no table named {name!r} is served (GET /v1/tables lists them)")
        return served
