"""What every index support shares: the plan's context and the two shapes of support.

A `PartitionIndexSupport` narrows partition paths. A `FileIndexSupport`
narrows file groups, first by file name before any file slice is built
(`prune_groups`, optional: what keeps a 1M-file plan from building 1M
slices), then the built slices (`prune_slices`). Each returns what it keeps
and a note; the planner times it, counts its storage requests and writes
the explanation. A support that cannot be used says why in `ctx.not_used`
and keeps everything.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from expressions import BoundPredicate
from listers.directory_lister import DirectoryLister
from listers.index_support.keys import pinned_record_keys
from metadata import FileSlice, HudiTable, MetadataTable, MetadataTableUnavailable
from metadata.formats.stats_table import PARTITION
from metadata.table.record_key import RecordKeyRule
from metadata.util import arrow_values

log = logging.getLogger(__name__)
T = TypeVar("T")

Groups = dict[str, set[str]]  # partition -> file ids


class FileListing:
    """The file names (partition, fileName, size) of the partitions a plan
    kept, listed only when a support asks (a plan evaluated on Spark
    executors may never need them on the driver)."""

    def __init__(self, lister: DirectoryLister, partitions: list[str]) -> None:
        self.lister = lister
        self.partitions = partitions
        self._table: pa.Table | None = None

    @property
    def loaded(self) -> bool:
        return self._table is not None

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            self._table = self.lister.file_table(self.partitions)
        return self._table

    def rows_in(self, groups: Groups | None) -> int:
        """Files listed in the partitions of these groups (all, for None)."""
        if groups is None:
            return self.table.num_rows
        partitions = arrow_values.array(sorted(p for p, ids in groups.items() if ids), pa.string())
        return pc.sum(pc.is_in(self.table.column(PARTITION), partitions)).as_py() or 0


@dataclass(frozen=True)
class KeyLookup:
    """Record keys looked up away from the driver (on Spark executors: a join
    over the record index's file groups) once a plan pins more than
    `threshold` of them; fewer are looked up here, where no job is started."""

    threshold: int
    locate: Callable[[list[str]], set[tuple[str, str]]]  # keys -> every (partition, file id) the index names for them
    where: str  # said in the explanation

    def wanted(self, keys: set[str]) -> bool:
        return len(keys) > self.threshold


@dataclass
class PlanContext:
    """One plan: the table, its predicate bound once, and what the stages found."""

    lister: DirectoryLister
    predicate: BoundPredicate
    data_columns: list[str]  # columns whose data values (not partition paths) a stage may prune on
    assume_unique_keys: bool = False
    footers: bool = False
    not_used: list[str] = field(default_factory=list)
    group_files: pa.Table | None = None  # every file of the groups left, when a support listed them away from the driver
    key_groups: frozenset[tuple[str, str]] | None = None  # (partition, file id) holding a key set looked up elsewhere
    key_lookup: KeyLookup | None = None  # large key sets looked up away from the driver

    @property
    def table(self) -> HudiTable:
        return self.lister.table

    @cached_property
    def mdt(self) -> MetadataTable | None:
        return self.table.metadata_table

    @cached_property
    def record_keys(self) -> set[str] | None:
        """The record keys the predicate pins, or None (`keys.pinned_record_keys`)."""
        keys, note = pinned_record_keys(self.predicate, RecordKeyRule.of(self.table.config))
        if note:
            self.not_used.append(note)
        return keys

    def unusable(self, stage: str, exc: MetadataTableUnavailable, kept: T) -> T:
        """A stage whose index cannot be read keeps every candidate (strict: the error)."""
        if self.table.strict:
            raise exc
        log.warning("%s not used: %s", stage, exc)
        self.not_used.append(f"{stage}: {exc.reason}; every candidate kept")
        return kept


class PartitionIndexSupport(ABC):
    name: str

    @abstractmethod
    def prune(self, ctx: PlanContext, partitions: list[str]) -> tuple[list[str], str] | None:
        """(kept partitions, note), or None when not used (reason in ctx.not_used)."""


class FileIndexSupport(ABC):
    """One plan's support (made anew for each): its note says what it did over every call of the plan, which may
    give it the built slices a batch at a time (`plan(on_slices=)`)."""

    name: str
    listed: int | None = None  # files it evaluated by name, when it counts them itself (else the listing's count)

    def usable(self, ctx: PlanContext) -> bool:
        """Whether this support prunes this plan (if not, the reason is in ctx.not_used)."""
        return True

    def prune_groups(self, ctx: PlanContext, files: FileListing, groups: Groups | None) -> Groups | None:
        """Before slices are built: the file groups of `files` (the kept
        partitions' listing) that may hold a match, within `groups` (None:
        all of them). None: this support prunes built slices only."""
        return None

    @abstractmethod
    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        """(kept slices, note), or None when it turned out not to be usable (reason in ctx.not_used)."""


def within(found: Groups, groups: Groups | None) -> Groups:
    """`found` narrowed to `groups` (None: no narrowing)."""
    if groups is None:
        return found
    return {p: ids & groups[p] for p, ids in found.items() if p in groups and ids & groups[p]}
