"""File pruning on the metadata table's column_stats (RFC-27).

A file slice stays when any of its files (base or log) may hold a match; a
file without a stats row may hold anything. On the latest view the verdict
is taken by file name before slices are built, so that only file groups
with a candidate are built (1M-file tables)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from expressions import BoundPredicate, may_match
from listers.directory_lister import DirectoryLister
from listers.index_support.base import FileIndexSupport, FileListing, Groups, PlanContext, within
from metadata import FileSlice, MetadataTableUnavailable
from metadata.errors import HudiFormatError
from metadata.formats.stats_table import FILE_NAME, NUL, PARTITION, ListedFiles, listed_may_match, listed_rows_of, min_field, stats_rows_of
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.stats_columns import FlatStats
from metadata.mdt.stats_pivot import pivot
from metadata.table.file_naming import file_id_of, file_ids_of
from metadata.util import arrow_values
from metadata.util.arrow_values import to_numpy

log = logging.getLogger(__name__)


@dataclass
class _Verdict:
    """Per stats row (partition, file) whether its statistics allow a match."""

    stats: pa.Table
    keep: npt.NDArray[np.bool_]
    indexed: list[str]
    candidates: set[tuple[str, str]] | None = None  # (partition, name) of listed files that may match, once listed

    def files_may_match(self, files: pa.Table, lister: DirectoryLister) -> npt.NDArray[np.bool_]:
        """Per row of a listing table, whether the file may hold a matching row."""
        return self.rows_may_match(lister.stats_rows(files, self.stats))

    def rows_may_match(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Per file given by its stats row (-1: none), whether it may hold a
        matching row: a file without statistics may hold anything."""
        may = np.ones(len(rows), dtype=bool)
        has = rows >= 0
        may[has] = self.keep[rows[has]]
        return may

    def slices_may_match(self, slices: list[FileSlice]) -> list[bool]:
        """Per slice, whether any of its files may hold a matching row."""
        if self.candidates is not None:  # every file of a built slice is listed
            candidates = self.candidates
            return [any((s.partition, n) in candidates for n in s.file_names) for s in slices]
        names_of = [s.file_names for s in slices]
        wanted = pa.table({PARTITION: arrow_values.array([s.partition for s, names in zip(slices, names_of) for _ in names], pa.string()),
                           FILE_NAME: arrow_values.array([n for names in names_of for n in names], pa.string())})
        may = self.rows_may_match(stats_rows_of(wanted, self.stats))
        bounds = np.cumsum([0] + [len(names) for names in names_of])
        return [bool(may[a:b].any()) or a == b for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def verdict_of(stats: pa.Table, predicate: BoundPredicate, columns: list[str]) -> _Verdict:
    """The predicate evaluated on a stats table; `indexed`: the columns with any statistics."""
    keep = to_numpy(may_match(predicate, stats))
    indexed = [c for c in columns if stats.num_rows and stats.column(min_field(c)).null_count < stats.num_rows]
    return _Verdict(stats, keep, indexed)


def groups_of(candidates: set[tuple[str, str]] | frozenset[tuple[str, str]], partitions: list[str], groups: Groups | None) -> Groups:
    """The file groups of candidate files (partition, name), within `groups`."""
    found: Groups = {p: set() for p in partitions}
    for partition, name in candidates:
        found.setdefault(partition, set()).add(file_id_of(name))
    return within(found, groups)


@dataclass(frozen=True)
class Candidates:
    """What an evaluation of column_stats away from the driver returns: the
    files (partition, name) that may hold a match, out of how many it
    evaluated, the columns that had statistics, and where it ran; and,
    when it listed them, every file of the groups holding a candidate
    (partition, fileName, size), from which the driver builds slices
    without listing the partitions itself."""

    files: frozenset[tuple[str, str]]
    evaluated: int
    indexed: tuple[str, ...]
    note: str = ""
    group_files: pa.Table | None = None


def bucket_candidates(files: pa.Table, pieces: dict[str, list[pa.Table]], predicate: BoundPredicate, columns: list[str],
                      types: dict[str, pa.DataType]) -> Candidates:
    """One bucket's verdict, where a file group's listing rows and stats
    records meet (`metadata.mdt.stats_shards`): the files that may match
    (no statistics: may), and every listed file of their groups."""
    stats = pivoted(files, pieces, columns, types)
    if stats is None:
        raise HudiFormatError("column_stats", "a key is held by two metadata file groups")
    return candidates_of(ListedFiles(files), stats, predicate, columns)


def pivoted(files: pa.Table, pieces: dict[str, list[pa.Table]], columns: list[str], types: dict[str, pa.DataType],
            partitions: list[str] | None = None) -> pa.Table | None:
    """The stats table of records (per column) in `partitions` (None: the
    listed files' partitions); None when a key came from two metadata file
    groups (the reference merge decides)."""
    flat = FlatStats(types)
    flat.pieces = {c: tables for c, tables in pieces.items() if tables}
    known = sorted(partitions) if partitions is not None else sorted(pc.unique(files.column(PARTITION)).to_pylist())
    return pivot(flat, columns, known, True, types)


def candidates_of(files: ListedFiles, stats: pa.Table, predicate: BoundPredicate, columns: list[str],
                  listed: npt.NDArray[np.int64] | None = None) -> Candidates:
    """The listed files whose statistics may hold a match, and every listed
    file of their groups (`listed`: each stats row's listed file,
    `listed_rows_of`, when known)."""
    verdict = verdict_of(stats, predicate, columns)
    may = listed_may_match(len(files), listed_rows_of(stats, files) if listed is None else listed, verdict.keep)
    chosen = np.flatnonzero(may)
    if not len(chosen):
        return Candidates(frozenset(), len(files), tuple(verdict.indexed), group_files=files.table.slice(0, 0))
    kept = files.rows(chosen)
    candidates = frozenset(zip(kept.column(PARTITION).to_pylist(), kept.column(FILE_NAME).to_pylist()))
    # only the files of partitions holding a candidate can share its group: the others are not parsed; of those, the
    # files whose id is a candidate's are checked by (partition, id) (in a 10M plan's run, 50,000 files near 500
    # candidates: their keys took 24 ms a run)
    near = files.rows(np.flatnonzero(to_numpy(pc.is_in(files.partitions, value_set=pc.unique(kept.column(PARTITION))), null=False)))
    near_ids = file_ids_of(near.column(FILE_NAME))
    same_id = near.filter(pc.is_in(near_ids, value_set=pc.unique(file_ids_of(kept.column(FILE_NAME)))))
    in_group = pc.is_in(_group_keys(same_id), value_set=_group_keys(kept).combine_chunks())
    return Candidates(candidates, len(files), tuple(verdict.indexed), group_files=same_id.filter(in_group))


def _group_keys(files: pa.Table) -> pa.ChunkedArray:
    """Each listed file's group: its partition, a NUL, its file id."""
    return pc.binary_join_element_wise(files.column(PARTITION), file_ids_of(files.column(FILE_NAME)), NUL)


# Evaluates column_stats for some partitions elsewhere (Spark executors) or in runs: (ctx, partitions) -> Candidates.
CandidatesRunner = Callable[[PlanContext, list[str]], Candidates]

# A local plan streams column_stats (`stats_runs`) rather than reading them whole when their whole table would
# take more than this many bytes (None: the metadata table's stats cache budget). Such a table would not be kept
# for the next plan anyway, and a whole read peaks at several times its size; a stream holds one run's records.
STREAM_ABOVE_BYTES: int | None = None
# It streams them too over more listed files than this, keeping the runs' statistics for the next plan when they
# fit the cache: a whole read decodes every record before it pivots them, a run's records are pivoted and
# evaluated while few. At 1M files: 4.1 s and 480 MiB, against 3.8 s and 715 MiB read whole.
STREAM_ABOVE_FILES = 100_000


def whole_stats_bytes(files: pa.Table, columns: int) -> int:
    """About what the stats table of these listed files takes: their names,
    a value count, and bounds and a null count per column."""
    return files.column(PARTITION).nbytes + files.column(FILE_NAME).nbytes + files.num_rows * (8 + 24 * columns)


class ColumnStats(FileIndexSupport):
    name = "column_stats"

    def __init__(self, runner: CandidatesRunner | None = None, streamed: CandidatesRunner | None = None) -> None:
        self.verdict: _Verdict | None = None
        self.listed: int | None = None  # files the by-name verdict saw
        self.read = False
        self.built = 0  # slices given to prune_slices in this plan (its batches summed)
        self.runner = runner  # set: the statistics are read and evaluated away from the driver
        self.streamed = streamed  # reads and evaluates them in runs here, when too large to keep (STREAM_ABOVE_BYTES)
        self.where = ""

    def usable(self, ctx: PlanContext) -> bool:
        if ctx.mdt is None:
            return False
        if not ctx.data_columns:
            ctx.not_used.append("column_stats: the predicate names no data column")
            return False
        if MdtPartition.COLUMN_STATS not in ctx.table.config.metadata_partitions:
            ctx.not_used.append("column_stats: not built for this table")
            return False
        return True

    # What a stats support reads and evaluates (an expression index reads its own partition).
    def _stats(self, ctx: PlanContext, partitions: list[str]) -> pa.Table:
        assert ctx.mdt is not None
        return ctx.mdt.column_stats(ctx.data_columns, partitions, ordered=False)

    def _predicate(self, ctx: PlanContext) -> BoundPredicate:
        return ctx.predicate

    def _columns(self, ctx: PlanContext) -> list[str]:
        return ctx.data_columns

    def _read(self, ctx: PlanContext, partitions: list[str]) -> _Verdict | None:
        if ctx.mdt is None or not partitions:
            return None
        try:
            stats = self._stats(ctx, partitions)
        except MetadataTableUnavailable as exc:
            return ctx.unusable(self.name, exc, None)
        return self._indexed(ctx, verdict_of(stats, self._predicate(ctx), self._columns(ctx)))

    def _indexed(self, ctx: PlanContext, verdict: _Verdict) -> _Verdict | None:
        """The verdict, or None (and why) when none of the columns has statistics."""
        if not verdict.indexed:
            ctx.not_used.append(f"{self.name}: none of {', '.join(self._columns(ctx))} is indexed")
            return None
        return verdict

    def prune_groups(self, ctx: PlanContext, listing: FileListing, groups: Groups | None) -> Groups | None:
        partitions = listing.partitions
        if groups is not None:  # an earlier stage kept these: statistics of the others are not read
            partitions = [p for p in partitions if groups.get(p)]
        if self.runner is not None:  # the listing stays unread on the driver
            return self._run_elsewhere(ctx, partitions, groups, self.runner)
        files = listing.table
        if groups is not None:
            files = files.filter(pc.is_in(files.column(PARTITION), arrow_values.array(partitions, pa.string())))
        if self.streamed is not None and self._streams(ctx, files):
            return self._run_elsewhere(ctx, partitions, groups, self.streamed)
        self.read, self.verdict = True, self._read(ctx, partitions)
        if self.verdict is None:
            return None
        self.listed = files.num_rows
        candidates = files.filter(arrow_values.from_numpy(self.verdict.files_may_match(files, ctx.lister)))
        self.verdict.candidates = set(zip(candidates.column(PARTITION).to_pylist(), candidates.column(FILE_NAME).to_pylist()))
        return groups_of(self.verdict.candidates, partitions, groups)

    def _streams(self, ctx: PlanContext, files: pa.Table) -> bool:
        """Whether the statistics are read in runs: their whole table is not at hand, and many files or too large to keep."""
        mdt = ctx.mdt
        assert mdt is not None
        budget = mdt.stats_cache.max_bytes if STREAM_ABOVE_BYTES is None else STREAM_ABOVE_BYTES
        return not mdt.holds_stats(MdtPartition.COLUMN_STATS, ctx.data_columns) and (
            files.num_rows > STREAM_ABOVE_FILES or whole_stats_bytes(files, len(ctx.data_columns)) > budget)

    def _run_elsewhere(self, ctx: PlanContext, partitions: list[str], groups: Groups | None, runner: CandidatesRunner) -> Groups | None:
        """The by-name verdict from a runner: the plan gets candidate names, never statistics."""
        self.read = True
        try:
            found = runner(ctx, partitions)
        except MetadataTableUnavailable as exc:
            return ctx.unusable(self.name, exc, None)
        self.verdict = self._indexed(ctx, _Verdict(pa.table({}), np.zeros(0, dtype=bool), list(found.indexed), set(found.files)))
        if self.verdict is None:
            return None
        self.listed, self.where = found.evaluated, found.note
        ctx.group_files = found.group_files
        return groups_of(found.files, partitions, groups)

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        if not self.read:  # no verdict by name (a past view): take it on the slices
            self.read, self.verdict = True, self._read(ctx, sorted({s.partition for s in slices}))
        if self.verdict is None:
            return None
        kept = []
        for s, may in zip(slices, self.verdict.slices_may_match(slices)):
            if may:
                kept.append(s)
            else:
                log.debug("dropped %s/%s: statistics exclude the predicate for every file", s.partition, s.file_id)
        self.built += len(slices)
        note = f"columns with stats: {', '.join(self.verdict.indexed)}"
        if self.listed is not None:  # the slices of file groups without a candidate are never built (1M-file tables)
            note += f"; {self.built} file group(s) with a candidate built"
        if self.where:
            note += f"; {self.where}"
        return kept, note
