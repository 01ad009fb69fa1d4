"""What a build reads from the data table, once for every partition it
initialises: the committed files at the latest instant (listed once, spilled
to local disk and read back a run of partitions at a time), their record
keys, and their statistics computed a batch of files at a time (only a few
batches are held), rolled up per partition on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange, RangeFold, blocks_counting, columns_to_index
from metadata.mdt.record_keys import FileKeys, keys_of_files
from metadata.mdt.stats_engine import StatsEngine
from metadata.mdt.validate import committed_files
from metadata.mdt.write.routed_cells import ColumnStatsCells, RoutedCell, ranges_only
from metadata.mdt.write.table_inputs import check_columns_in, completed_instants, key_targets, latest_slices_from_storage, table_schema
from metadata.storage.listing import StorageListing
from metadata.storage.paths import join
from metadata.storage.spilled_listing import SpilledListing
from metadata.table.file_group import FileSlice
from metadata.table.record_key import RecordKeyRule
from metadata.table.stored_table import TableParts
from metadata.util.read_ahead import read_ahead

RUN_PARTITIONS = 200  # partitions whose files (and latest slices) a pass resolves at once


class CommittedFiles(Protocol):
    """Each partition's committed files at the built instant, in partition order."""

    @property
    def counts(self) -> dict[str, int]:
        """Partition -> committed files, of the partitions holding any."""

    def items(self) -> Iterator[tuple[str, dict[str, int]]]:
        """(partition, file name -> size), made a run of partitions at a time."""


class ListedFiles:
    """Committed files read back from a spilled storage listing a run of
    partitions at a time, so that a pass holds a run, not the table; only
    the counts are kept (what progress and the report need)."""

    def __init__(self, data: TableParts, listing: SpilledListing) -> None:
        self.data = data
        self.listing = listing
        self.extension = data.config.base_file_format.extension
        self.counts = {p: len(names) for p, names in self._runs(listing.partitions()) if names}

    def items(self) -> Iterator[tuple[str, dict[str, int]]]:
        return self._runs(list(self.counts))

    def _runs(self, partitions: list[str]) -> Iterator[tuple[str, dict[str, int]]]:
        for start in range(0, len(partitions), RUN_PARTITIONS):
            for partition, stored in self.listing.files_for(partitions[start : start + RUN_PARTITIONS]).items():
                yield partition, {f.name: f.size for f in committed_files(self.data, stored, self.extension)}


class HeldFiles:
    """Committed files given whole (partition -> file name -> size)."""

    def __init__(self, names: dict[str, dict[str, int]]) -> None:
        self.names = {p: n for p, n in names.items() if n}
        self.counts = {p: len(n) for p, n in self.names.items()}

    def items(self) -> Iterator[tuple[str, dict[str, int]]]:
        return iter(self.names.items())


@dataclass
class BuildSnapshot:
    """The table's committed files at one instant."""

    data: TableParts
    engine: StatsEngine
    columns: list[str]
    files: CommittedFiles
    built_through: str
    pending: list[str]
    schema: pa.Schema
    batch_files: int | None = None  # None: the engine's
    progress: Callable[[str], None] = lambda message: None
    rollups_wanted: bool = True  # partition_stats is built from the same pass
    _rollups: dict[str, dict[str, ColumnRange]] | None = None  # partition -> column -> range over latest slices
    _keys: list[FileKeys] | None = None  # record keys of the latest slices' files
    listing: StorageListing | None = None  # the listing the files came from (latest slices reuse it)
    _latest: list[FileSlice] | None = None

    @classmethod
    def take(cls, data: TableParts, engine: StatsEngine, columns: Sequence[str] | None,
             batch_files: int | None = None, progress: Callable[[str], None] | None = None,
             rollups_wanted: bool = True) -> BuildSnapshot:
        latest = data.timeline.latest_completed()
        built_through = latest.requested_time if latest else ""
        schema = table_schema(data)
        listing = SpilledListing(data.storage)
        files = ListedFiles(data, listing)
        chosen = list(columns) if columns else columns_to_index(schema)
        check_columns_in(data, schema, chosen)
        pending = sorted(i.requested_time for i in data.timeline.pending())
        return cls(data, engine, chosen, files, built_through, pending, schema, batch_files and max(1, batch_files),
                   progress or (lambda message: None), rollups_wanted, listing=listing)

    @property
    def file_count(self) -> int:
        return sum(self.files.counts.values())

    def _batches(self, size: int) -> Iterator[list[tuple[str, str]]]:
        """`file_names` in batches of `size`, made as they are asked for."""
        batch: list[tuple[str, str]] = []
        for partition, names in self.files.items():
            for name in names:
                batch.append((partition, name))
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def file_names(self) -> Iterator[tuple[str, str]]:
        """(partition, file name) of every committed file."""
        return ((p, n) for p, names in self.files.items() for n in names)

    def latest_slices(self) -> list[FileSlice]:
        """The latest file slices at the built instant, listed from storage (once)."""
        if self._latest is None:
            self._latest = self.latest_slices_of(None)
        return self._latest

    def latest_slices_of(self, partitions: list[str] | None) -> list[FileSlice]:
        """The latest file slices of these partitions (None: all) at the built instant, listed from storage."""
        if not self.built_through:
            return []
        return latest_slices_from_storage(self.data, self.built_through, partitions, listing=self.listing)

    def file_keys(self) -> list[FileKeys]:
        """Record keys of every file of the latest slices, base file first, then logs in order."""
        if self._keys is None:
            targets = key_targets(self.latest_slices())
            self.progress(f"reading the record keys of {len(targets)} files")
            self._keys = keys_of_files(self.data.storage, targets, blocks_counting(None, completed_instants(self.data)),
                                       RecordKeyRule.of(self.data.config))
        return self._keys

    def key_count(self) -> int:
        return sum(len(f.keys) for f in self.file_keys())

    def latest_slice_files(self) -> dict[str, str]:
        """File name -> partition of every file in a latest slice (what partition-level records cover)."""
        return {path.rsplit("/", 1)[-1]: s.partition for s in self.latest_slices() for path in s.files}

    def column_stats_cells(self, then: ColumnStatsCells) -> Iterator[RoutedCell]:
        """Every committed file's column_stats cells, routed (`then` makes them where the files were read)."""
        for cells in self._range_batches(then):
            yield from cells

    def rollups(self) -> dict[str, dict[str, ColumnRange]]:
        """Partition -> column -> range over its latest slices (a pass of its own unless column_stats made one)."""
        if self._rollups is None:
            for _ in self._range_batches():
                pass
        return self._rollups or {}

    def _range_batches(self, then: ColumnStatsCells | None = None) -> Iterator[list[RoutedCell]]:
        """Each file's column_stats cells made by `then` (none without it), a
        batch of files at a time; folds the latest slices' ranges into
        per-partition roll-ups on the way."""
        total = self.file_count
        latest = _LatestFiles(self) if self.rollups_wanted else None
        rollups: dict[str, RangeFold] = {}
        completed = completed_instants(self.data)
        batch_files = self.batch_files or self.engine.batch_files

        def read(batch: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[list[ColumnRange], list[RoutedCell]]]]:
            return batch, self.engine.map_ranges(self.data.storage.uri, [(join(p, n), None) for p, n in batch], self.columns,
                                                 self.schema, completed, self.data.storage.storage_options, then or ranges_only)

        done = 0
        # the next batches are read while this one is filed away (held: the depth and this one)
        with ThreadPoolExecutor(max_workers=max(1, self.engine.batches_at_once)) as ahead:
            for batch, found in read_ahead(ahead, self._batches(batch_files), read, depth=2):
                if latest is not None:
                    latest.cover(batch[0][0], batch[-1][0])
                for ranges, cells in found:
                    for r in ranges:
                        p = latest.partition_of(r.file_name) if latest is not None else None
                        if p is not None:
                            (rollups.get(p) or rollups.setdefault(p, RangeFold(p))).add(r)
                    yield cells
                done += len(batch)
                self.progress(f"statistics of {done} of {total} files")
        self._rollups = {p: fold.ranges for p, fold in rollups.items()}


class _LatestFiles:
    """Which files of a statistics pass are in a latest slice, resolved a run
    of partitions at a time as the pass reaches them (in the snapshot's
    partition order) and let go once it has passed them: the pass's memory
    follows a run, not the table (a million files' slices took 640 MiB).
    Where the snapshot already holds every latest slice, they are used."""

    def __init__(self, snapshot: BuildSnapshot) -> None:
        self.snapshot = snapshot
        self.order = list(snapshot.files.counts)
        self.position = {p: i for i, p in enumerate(self.order)}
        self.resolved = 0  # partitions order[:resolved] are resolved
        self.passed = 0  # partitions order[:passed] are let go
        self.names: dict[str, str] = {}  # file name -> partition, of the resolved partitions not let go
        self.by_partition: dict[str, list[str]] = {}
        if snapshot._latest is not None:
            self.names = snapshot.latest_slice_files()
            self.resolved = len(self.order)

    def cover(self, first: str, last: str) -> None:
        """Resolve through partition `last` and let go of those before `first`."""
        while self.resolved <= self.position[last]:
            run = self.order[self.resolved : self.resolved + RUN_PARTITIONS]
            for s in self.snapshot.latest_slices_of(run):
                for path in s.files:
                    name = path.rsplit("/", 1)[-1]
                    self.names[name] = s.partition
                    self.by_partition.setdefault(s.partition, []).append(name)
            self.resolved += len(run)
        while self.passed < self.position[first]:
            partition = self.order[self.passed]
            for name in self.by_partition.pop(partition, []):
                self.names.pop(name, None)
            self.passed += 1

    def partition_of(self, file_name: str) -> str | None:
        return self.names.get(file_name)
