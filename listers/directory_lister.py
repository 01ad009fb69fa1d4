"""DirectoryLister: one object per table and snapshot, Presto's lister shape.

It opens the metadata table once (or falls back to storage listing and says
why), and serves partitions and files for any number of partitions with
O(1) metadata-table reads. Safe to share between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from metadata import FileSlice, HudiTable
from metadata.formats.stats_table import stats_rows_of
from metadata.mdt.stats_cache import PersistentStatsCache, state_of
from metadata.storage.listing import ListingSource
from metadata.util.arrow_values import to_numpy


class DirectoryLister:
    def __init__(self, table: HudiTable, as_of: str | None = None) -> None:
        self.table = table
        self.as_of = as_of
        self._lock = threading.Lock()
        self._stats_rows: tuple[pa.Table, pa.Table, npt.NDArray[np.int64]] | None = None
        self.view = table.view(as_of)  # opens the MDT (or decides on storage) once

    @classmethod
    def open(
        cls,
        path_or_uri: str,
        use_metadata: bool | None = True,
        as_of: str | None = None,
        filesystem: pafs.FileSystem | None = None,
        strict: bool = False,
        storage_options: Mapping[str, str] | None = None,
    ) -> DirectoryLister:
        """`use_metadata=True` uses the MDT when the table has one and falls
        back to storage listing otherwise (`listing_note` says why); False
        always lists storage. `strict`: a damaged MDT is an error, not a fallback."""
        table = HudiTable.open(path_or_uri, filesystem=filesystem, use_metadata=None if use_metadata else False, strict=strict,
                               storage_options=storage_options)
        return cls(table, as_of)

    def __enter__(self) -> DirectoryLister:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close every file the lister opened (the metadata table's HFiles)."""
        self.table.close()

    @property
    def listing_source(self) -> ListingSource:
        return self.table.listing.source

    @property
    def listing_note(self) -> str:
        return self.table.listing_note

    def list_partitions(self) -> list[str]:
        if not self.table.config.is_partitioned:
            return [""] if self.view.latest_file_slices([""]) else []
        return self.view.partitions()

    def list_files(self, partition: str) -> list[FileSlice]:
        """Latest file slices (a base file, plus log files on MOR) of one partition."""
        return self.view.latest_file_slices([partition])

    def file_names(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        """File name -> size of the files the listing holds per partition (every
        version, committed or not): what a plan can rule out before building slices."""
        return self.view.listing.file_names_for(partitions)

    def file_table(self, partitions: list[str]) -> pa.Table:
        """`file_names` as one table (partition, fileName, size), without a Python object per file."""
        return self.view.listing.file_table(partitions)

    def stats_rows(self, files: pa.Table, stats: pa.Table) -> npt.NDArray[np.int64]:
        """For each row of a file table, the row of a stats table about the
        same (partition, file), or -1. Kept while both tables are the ones
        asked for last (a second plan on this lister matches nothing again)."""
        with self._lock:
            memo = self._stats_rows
        if memo is not None and memo[0] is files and memo[1] is stats:
            return memo[2]
        mdt = self.table.metadata_table
        cache = mdt.persistent_cache if mdt is not None else None
        states = (state_of(files), state_of(stats))
        if cache is not None and None not in states:  # both whole tables of known states: the match is kept too
            digest = PersistentStatsCache.digest(["stats rows", *(s or "" for s in states)])
            kept = cache.get_or_build(digest, lambda: pa.table({"row": stats_rows_of(files, stats)}), "match")
            rows = to_numpy(kept.column("row"))
        else:
            rows = stats_rows_of(files, stats)
        with self._lock:
            self._stats_rows = (files, stats, rows)
        return rows

    def remember_stats_rows(self, files: pa.Table, stats: pa.Table, rows: npt.NDArray[np.int64]) -> None:
        """`stats_rows(files, stats)` found elsewhere (a streamed plan's runs), for the next plan."""
        with self._lock:
            self._stats_rows = (files, stats, rows)

    def list_file_groups(self, groups: dict[str, set[str]], files: pa.Table | None = None) -> list[FileSlice]:
        """Latest slices of only these file groups (partition -> file ids);
        `files` (partition, fileName, size), when given, holds every file of
        them, so the partitions are not listed here."""
        return self.view.latest_file_slices_of_groups(groups, files)

    def list_files_batch(self, partitions: list[str]) -> dict[str, list[FileSlice]]:
        """Latest slices of many partitions, read in one pass."""
        slices = self.view.latest_file_slices(list(partitions))
        result: dict[str, list[FileSlice]] = {p: [] for p in partitions}
        for s in slices:
            result[s.partition].append(s)
        return result
