"""The metadata table's files partition as a FileListing (RFC-15: no storage
listing), and the choice between it and storage."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiError, MetadataTableAbsent, MetadataTableBehind, MetadataTableDamaged, MetadataTableUnavailable
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.stats_cache import with_state
from metadata.storage.listing import FILE_TABLE_SCHEMA, FileListing, ListingSource, StorageListing, names_of
from metadata.storage.paths import StoredFile, join
from metadata.table.stored_table import StoredTable
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL, empty_table

log = logging.getLogger(__name__)
T = TypeVar("T")


class MetadataListing:
    source = ListingSource.METADATA_TABLE
    note = "metadata table files partition (storage is not listed; `hudi-bridge table validate` compares the two)"

    def __init__(self, mdt: MetadataTable, strict: bool = False) -> None:
        self.mdt = mdt
        self.strict = strict
        self.warning: str | None = None
        # Storage's listing of partitions whose files record turned out damaged (unless strict): the
        # other partitions' records are whole and still used.
        self._storage: StorageListing | None = None
        self._names: dict[str, dict[str, int]] = {}
        self._files: dict[str, list[StoredFile]] = {}
        self._table = empty_table(FILE_TABLE_SCHEMA)  # files of the partitions in _tabled, read columnar
        self._tabled: set[str] = set()
        self._lock = threading.Lock()

    def partitions(self) -> list[str]:
        return self.mdt.partitions()  # read once per metadata table

    def file_names_for(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        with self._lock:
            missing = [p for p in partitions if p not in self._names]
            tabled = [p for p in missing if p in self._tabled]
            table = self._table
        if missing:
            # partitions a plan already read as a table are not read again
            found = names_of(_rows_of(table, tabled), tabled) if tabled else {}
            unread = [p for p in missing if p not in found]
            if unread:
                found.update(self._or_storage(unread, self.mdt.files_for, lambda listing: listing.file_names_for(unread)))
            with self._lock:
                for partition in missing:
                    self._names[partition] = found.get(partition, {})
        with self._lock:
            return {p: self._names[p] for p in partitions}

    def file_table(self, partitions: list[str]) -> pa.Table:
        """Read once per partition and kept as one table (a later plan filters it)."""
        with self._lock:
            missing = sorted(set(partitions) - self._tabled)
        if missing:
            found = self._or_storage(missing, self.mdt.file_table, lambda listing: listing.file_table(missing))
            with self._lock:
                new = sorted(set(missing) - self._tabled)  # another thread may have read some meanwhile
                if len(new) < len(missing):
                    found = _rows_of(found, new)
                if self._tabled:
                    self._table = with_state(pa.concat_tables([self._table, found]).combine_chunks(memory_pool=READ_POOL), None)
                else:
                    self._table = found  # as read (a whole table keeps saying its state)
                self._tabled.update(new)
        with self._lock:
            table, tabled = self._table, set(self._tabled)
        if tabled == set(partitions):
            return table
        return _rows_of(table, partitions)

    def _or_storage(self, partitions: list[str], read: Callable[[list[str]], T], listed: Callable[[StorageListing], T]) -> T:
        """The metadata table's answer for these partitions; where a record of theirs is damaged (a name
        Hudi's own rollback wrote as a path, a log block of a completed instant unreadable), storage's,
        with a warning, unless strict."""
        try:
            return read(partitions)
        except MetadataTableDamaged as exc:
            if self.strict:
                raise
            warning = f"{exc.reason}; listing storage for {', '.join(repr(p) for p in partitions[:3])}" + \
                (f" and {len(partitions) - 3} more partition(s)" if len(partitions) > 3 else "") + " instead"
            log.warning("%s: %s", self.mdt.reader.data_table.storage.uri, warning)
            with self._lock:
                self.warning = self.warning or f"{self.mdt.reader.data_table.storage.uri}: {warning}"
                if self._storage is None:
                    self._storage = StorageListing(self.mdt.reader.data_table.storage, exc.reason)
            return listed(self._storage)

    def files_for(self, partitions: list[str]) -> dict[str, list[StoredFile]]:
        with self._lock:
            missing = [p for p in partitions if p not in self._files]
        if missing:
            names = self.file_names_for(missing)
            with self._lock:
                for partition in missing:
                    self._files[partition] = [StoredFile(join(partition, name), size) for name, size in sorted(names[partition].items())]
        with self._lock:
            return {p: self._files[p] for p in partitions}


def _rows_of(table: pa.Table, partitions: list[str]) -> pa.Table:
    """A file table's rows of some partitions (a part: it no longer says its state)."""
    return with_state(table.filter(pc.is_in(table.column(0), value_set=arrow_values.array(sorted(set(partitions)), pa.string()))), None)


def choose_listing(table: StoredTable, use_metadata: bool | None, strict: bool = False) -> FileListing:
    """The metadata table's listing when it can be used, else storage's.

    `use_metadata`: None prefers the metadata table and falls back to storage
    (the listing's note says why; unless no metadata table is built, the
    fallback is logged as a warning and kept in the listing's `warning`);
    True requires it; False lists storage. `strict` turns any fallback into
    an error.
    """
    if use_metadata is False:
        return StorageListing(table.storage, "metadata table not requested")
    try:
        try:
            return _metadata_listing(table, strict)
        except MetadataTableBehind:
            # A reader that raced a writer may have read the data timeline after the metadata
            # table's (the writer commits the metadata table first): look once more before advising.
            return _metadata_listing(table, strict)
    except HudiError as exc:
        if use_metadata:
            raise
        if isinstance(exc, MetadataTableAbsent):  # nothing built: storage is the listing, not a fallback
            return StorageListing(table.storage, exc.reason)
        if strict:  # any other failure is a fallback: refused with strict, else said on stderr and in plans' warnings
            raise
        reason = exc.reason if isinstance(exc, MetadataTableUnavailable) else str(exc)
        warning = f"{reason}; listing storage instead" if isinstance(exc, MetadataTableUnavailable) else \
            f"metadata table not used ({reason}); listing storage instead"
        log.warning("%s: %s", table.storage.uri, warning)
        return StorageListing(table.storage, reason, warning=f"{table.storage.uri}: {warning}")


def _metadata_listing(table: StoredTable, strict: bool) -> MetadataListing:
    mdt = MetadataTable.open(table)
    try:
        behind = mdt.reader.unsynced_data_instants()
        if behind:
            raise MetadataTableBehind(table.storage.uri, (
                f"metadata table is behind the timeline: {len(behind)} completed instant(s) not in it "
                f"({behind[0].requested_time} {behind[0].action} first); run `hudi-bridge index sync`"))
        listing = MetadataListing(mdt, strict)
        # Read the files partition's partition list now (its bytes; entries are
        # decoded when asked for): damage shows here, before a view relies on it.
        mdt.check_partitions_record()
        return listing
    except BaseException:
        mdt.close()  # the files it opened are not needed for a storage listing
        raise
