"""What the partition writers read to sync one data instant, read once for
all of them: each writer declares its needs, and a need is met by one pass
however many writers share it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa

from metadata.errors import CleanedFilesError
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.write.change import TableChange
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.table_inputs import storage_table
from metadata.storage.paths import join
from metadata.table.file_group import FileSlice
from metadata.table.hudi_table import HudiTable
from metadata.table.slice_rows import changed_slices


class Need(Enum):
    STORED_FILES = "the instant's new files still in storage"
    NEW_RANGES = "column ranges of the instant's new files"
    CHANGED_SLICES = "the file slices the instant replaced and made"


@dataclass
class SliceChanges:
    """The latest slices the instant replaced (`gone`) and made (`came`) in
    the partitions it wrote; `current`: today's latest slices of partitions
    whose earlier state cannot be read back (a later clean removed its files)
    or that a rollback touched, written whole."""

    table: HudiTable
    gone: list[FileSlice]
    came: list[FileSlice]
    current: list[FileSlice]


@dataclass
class SyncInputs:
    ctx: WriteContext
    ts: str  # the data instant, and the metadata instant that syncs it
    change: TableChange
    columns: list[str]  # columns column_stats and partition_stats index
    schema: pa.Schema
    # The latest data instant the metadata table holds once this one is in (roll-ups are made as of it): later than `ts`
    # when later instants were synced first (a compaction that completed after writes that came after it).
    as_of: str | None = None
    files_indexed: int = 0  # data files whose statistics were read
    _stored: dict[str, list[str]] | None = field(default=None, repr=False)
    _ranges: dict[str, list[ColumnRange]] | None = field(default=None, repr=False)
    _slices: SliceChanges | None = field(default=None, repr=False)

    def prepare(self, needs: set[Need]) -> None:
        """Read what the writers declared they need, once."""
        if Need.STORED_FILES in needs:
            self.stored_files()
        if Need.NEW_RANGES in needs:
            self.new_ranges()
        if Need.CHANGED_SLICES in needs:
            self.slice_changes()

    def stored_files(self) -> dict[str, list[str]]:
        """Partition -> the files the instant added that are still there. A file
        a later clean (synced in this same run) already removed gets no
        statistics and gives no keys: that clean's sync writes its tombstone."""
        if self._stored is None:
            storage = self.ctx.storage
            self._stored = {p: [n for n in names if storage.exists(join(p, n))] for p, names in self.change.added.items()}
        return self._stored

    def new_ranges(self) -> dict[str, list[ColumnRange]]:
        """File name -> its column ranges, for every stored file the instant added
        (v6 logs: only the instant's own blocks count)."""
        if self._ranges is None:
            targets = [(join(p, name), self.ts if name.startswith(".") and self.ctx.version < 8 else None)
                       for p, names in self.stored_files().items() for name in names]
            ranges: dict[str, list[ColumnRange]] = {}
            for r in self.ctx.file_ranges(targets, self.columns, self.schema):
                ranges.setdefault(r.file_name, []).append(r)
            self.files_indexed += len(targets)
            self._ranges = ranges
        return self._ranges

    def slice_changes(self) -> SliceChanges:
        if self._slices is None:
            data, change, ts = self.ctx.data, self.change, self.ts
            table = storage_table(data)
            rewrite = sorted(change.rekeyed_partitions)
            touched = sorted(change.added) if change.keyed else []
            gone: list[FileSlice] = []
            came: list[FileSlice] = []
            if touched:
                earlier = [i.requested_time for i in data.timeline.completed() if i.requested_time < ts]
                try:
                    before = table.view(as_of=max(earlier)).latest_file_slices(touched) if earlier else []
                    after = table.view(as_of=ts).latest_file_slices(touched)
                except CleanedFilesError:
                    rewrite = sorted({*rewrite, *touched})
                else:
                    gone, came = changed_slices(before, after)
            current = table.view().latest_file_slices(rewrite) if rewrite else []
            self._slices = SliceChanges(table, gone, came, current)
        return self._slices
