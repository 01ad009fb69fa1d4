"""column_stats read and evaluated a run of partitions at a time: a plan
over millions of files holds the listing (which the lister keeps for later
plans), the runs in flight and the candidates found so far, never the whole
table's statistics.

Partitions are taken in the order of their ids, which is the order of the
column_stats keys (column id, partition id, file id), so each run reads a
few runs of neighbouring blocks per column. A run's listing rows and records
meet in the executors' bucket evaluator (`pivoted`, `candidates_of`), so the
local stream and a Spark plan take their verdicts by one code path; here a
run's rows are positions in the listing, matched where they lie (a bucket's
are its own table). A run holds about a twentieth of the listing (25,000 to 50,000 files). With worker
processes, each evaluates whole runs (it opens the table once and reads its
runs' statistics itself); the listing is read here meanwhile, as the workers
start. In one process, a thread reads each run's records (the only thread
reading the metadata table meanwhile) while the run before is pivoted and
evaluated, and starts the next run's blocks inflating before it decodes its
own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from expressions import BoundPredicate
from listers.index_support.base import PlanContext
from listers.index_support.column_stats import Candidates, CandidatesRunner, candidates_of, pivoted, whole_stats_bytes
from listers.index_support.shard_pipeline import merged, stats_types
from metadata import HudiTable
from metadata.formats.stats_table import PARTITION, ListedFiles, listed_rows_of, stats_row_per_listed
from metadata.mdt import keys
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.stats_columns import FlatStats
from metadata.util import arrow_values
from metadata.util.arrow_memory import release_unused
from metadata.util.arrow_values import to_numpy
from metadata.util.process import worker_count, worker_pool
from metadata.util.read_ahead import Ahead

# Listed files a run evaluates, with their statistics: about 1/RUNS_PER_PLAN
# of the listing, within [FEWEST_RUN_FILES, MOST_RUN_FILES]. Smaller runs stay
# in the caches, leave the allocators less to hold and start the overlap of
# reading and evaluating sooner; larger ones cost fewer steps a run on the
# plan's thread. Cold plans, alternating: at 1M files, runs of 50,000 0.90x
# the time of runs of 25,000 (12 rounds, 11 faster), peak 475 against 425 MiB
# (75,000: 0.89x but 520 MiB; 100,000: 0.93x, 534 MiB); at 100,010 files,
# runs of 25,000 0.89x those of 50,000 (10 rounds, all faster; 10,000: 1.05x;
# 5,000: 1.26x); at 10M, 18.1 to 18.4 s and 1,388 to 1,398 MiB in runs of
# 50,000, against 19.1 s and 1,371 MiB.
FEWEST_RUN_FILES = 25_000
MOST_RUN_FILES = 50_000
RUNS_PER_PLAN = 20


def run_files_for(listed: int) -> int:
    """Listed files a run of a plan over `listed` files holds."""
    return max(FEWEST_RUN_FILES, min(MOST_RUN_FILES, listed // RUNS_PER_PLAN))


RUNS_IN_FLIGHT = 2  # runs per worker handed over ahead (their listing rows are held until they finish)


def runs_of_partitions(run_files: int | None = None, processes: int | None = 1) -> CandidatesRunner:
    """A runner evaluating column_stats a run of partitions at a time (of
    about `run_files` listed files; None: `run_files_for` the listing); with
    `processes` above 1 (None: one per core), in worker processes."""

    def run(ctx: PlanContext, partitions: list[str]) -> Candidates:
        mdt = ctx.mdt
        assert mdt is not None
        columns = list(ctx.data_columns)
        types = stats_types(mdt, columns)
        workers = worker_count(processes)
        if workers == 1:
            files = ctx.lister.file_table(partitions)
            # every live partition's statistics, small enough to keep: kept for the next plan, as a whole read keeps them
            kept = KeptRuns() if set(partitions).issuperset(mdt.partitions()) and \
                whole_stats_bytes(files, len(columns)) <= mdt.stats_cache.max_bytes else None

            def read(chosen: list[str], following: list[str] | None) -> FlatStats:
                for ahead in (chosen, following):  # this run's blocks (if not started), then the next one's behind them
                    if ahead is not None:
                        mdt.prefetch_stats_records(MdtPartition.COLUMN_STATS.value, columns, ahead)
                return mdt.stats_read(MdtPartition.COLUMN_STATS.value, columns, chosen, types)

            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stats-run") as reader:
                # A run's records are read on a thread (the only one reading the metadata table meanwhile) while the run
                # before is pivoted, matched and evaluated here; its blocks inflate while the run before it decodes. The
                # thread opens the files while the runs are cut, and the first reads start as soon as the runs'
                # partitions are known, before their rows are located in the listing.
                stats_opened = reader.submit(mdt.open_stats, MdtPartition.COLUMN_STATS.value)
                # What reading the listing left free goes back before the runs (at 10M files in runs of 50,000, the
                # peak as the first runs are read: 1,406 MiB against 1,436; at 1M it costs 21 to 23 ms)
                release_unused()
                cut = RunCut.of(files, partitions, run_files or run_files_for(files.num_rows))
                stats_opened.result()  # a file that does not open fails here
                reads = Ahead(reader, _with_next(cut.partitions), lambda pair: read(*pair), depth=2)
                here = []
                # Nothing is handed back between runs: the allocators reuse what a run freed. Every 4 runs cost 0.14 s
                # of CPU in a 1M plan and left the peak where it was (474 to 489 MiB, against 472 to 491 without; at
                # 10M 1,392 to 1,404 MiB against 1,381 to 1,406).
                try:
                    for (chosen, positions), flat in zip(cut.runs(), reads):
                        stats = stats_of_records(mdt, columns, types, chosen, files, flat.of_partitions(columns, chosen))
                        here.append(evaluate_run(mdt, columns, types, chosen, files, ctx.predicate, kept, positions, stats))
                finally:
                    reads.close()
            if kept is not None:
                whole = kept.whole()
                mdt.keep_column_stats(columns, whole)
                ctx.lister.remember_stats_rows(files, whole, kept.rows_of_listed(files.num_rows))
            release_unused()  # the runs' pages go back before the plan builds its slices
            return merged(here, columns, f"read and evaluated in {len(here)} run(s) of partitions")
        uri, options = ctx.table.base_uri, dict(ctx.table.storage.storage_options)
        with worker_pool(workers, [__name__]) as pool:
            opened = [pool.submit(_worker_open, uri, options) for _ in range(workers)]  # they start while the listing is read
            listing = ctx.lister.file_table(partitions)
            release_unused()  # what reading the listing left free goes back before the runs
            runs = RunCut.of(listing, partitions, run_files or run_files_for(listing.num_rows)).runs()
            for future in opened:
                future.result()  # a table the workers cannot open fails here, as it would in this process
            found: list[Candidates] = []
            pending: deque[Future[Candidates]] = deque()
            for chosen, positions in runs:
                rows = arrow_values.taken(listing, positions)  # what a worker is sent
                if len(pending) >= workers * RUNS_IN_FLIGHT:
                    found.append(pending.popleft().result())
                pending.append(pool.submit(_worker_run, uri, options, columns, types, chosen, rows, ctx.predicate))
            found += [future.result() for future in pending]
        return merged(found, columns, f"read and evaluated in {len(found)} run(s) of partitions in {workers} worker processes")

    return run


def _with_next(runs: list[list[str]]) -> Iterator[tuple[list[str], list[str] | None]]:
    """Each run's partitions with the next one's (None after the last)."""
    return zip(runs, [*runs[1:], None])


@dataclass
class KeptRuns:
    """What the runs of a plan read, kept: each run's statistics table and,
    per run, where its rows are in the listing and which of its table's rows
    they matched. Laid end to end: the whole table, and the listing's match."""

    tables: list[pa.Table] = field(default_factory=list)
    matches: list[tuple[npt.NDArray[np.signedinteger], npt.NDArray[np.signedinteger]]] = field(default_factory=list)

    def add(self, stats: pa.Table, positions: npt.NDArray[np.int64], found: npt.NDArray[np.int64]) -> None:
        self.tables.append(stats)
        # held to the end of the plan: 32-bit where they fit (8 MB less at 1M files)
        narrow = len(positions) == 0 or max(int(positions.max()), int(found.max(initial=0))) < 2**31
        self.matches.append((positions.astype(np.int32), found.astype(np.int32)) if narrow else (positions, found))

    def whole(self) -> pa.Table:
        return pa.concat_tables(self.tables, promote_options="default")  # a column without statistics in a run is null there

    def rows_of_listed(self, listed: int) -> npt.NDArray[np.int64]:
        """Per listed file, its row of the whole table (-1: none)."""
        rows = np.full(listed, -1, dtype=np.int64)
        offset = 0
        for table, (positions, found) in zip(self.tables, self.matches):
            rows[positions] = np.where(found >= 0, found.astype(np.int64) + offset, -1)
            offset += table.num_rows
        return rows


def run_stats(mdt: MetadataTable, columns: list[str], types: dict[str, pa.DataType], partitions: list[str], rows: pa.Table) -> pa.Table:
    """A run's statistics table: its partitions' records read by key prefix,
    pivoted over its listing rows."""
    records = mdt.stats_records(MdtPartition.COLUMN_STATS.value, columns, partitions, types)
    return stats_of_records(mdt, columns, types, partitions, rows, records)


def stats_of_records(mdt: MetadataTable, columns: list[str], types: dict[str, pa.DataType], partitions: list[str], rows: pa.Table,
                     records: dict[str, pa.Table]) -> pa.Table:
    """A run's statistics table: its records pivoted over its listing rows."""
    stats = pivoted(rows, {c: [table] for c, table in records.items()}, columns, types, partitions)
    if stats is None:  # a key in two metadata file groups: the reference merge decides
        stats = mdt.column_stats(columns, partitions, ordered=False)
    return stats


def evaluate_run(mdt: MetadataTable, columns: list[str], types: dict[str, pa.DataType], partitions: list[str], files: pa.Table,
                 predicate: BoundPredicate, kept: KeptRuns | None = None, positions: npt.NDArray[np.int64] | None = None,
                 stats: pa.Table | None = None) -> Candidates:
    """One run: its statistics (read here unless given) evaluated with its
    listed files (the rows of `files`, or those at `positions`: the run's rows
    of the whole listing, never copied out); what it read added to `kept`."""
    if stats is None:
        stats = run_stats(mdt, columns, types, partitions, files)
    here = ListedFiles(files, positions)
    listed = listed_rows_of(stats, here)
    if kept is not None and positions is not None:
        kept.add(stats, positions, stats_row_per_listed(len(positions), listed))
    return candidates_of(here, stats, predicate, columns, listed)


_WORKER_TABLES: dict[tuple[str, tuple[tuple[str, str], ...]], HudiTable] = {}


def _worker_table(uri: str, options: Mapping[str, str]) -> HudiTable:
    key = (uri, tuple(sorted(options.items())))
    if key not in _WORKER_TABLES:
        _WORKER_TABLES[key] = HudiTable.open(uri, storage_options=dict(options))
    return _WORKER_TABLES[key]


def _worker_open(uri: str, options: Mapping[str, str]) -> None:
    mdt = _worker_table(uri, options).metadata_table
    if mdt is not None:
        mdt.partitions()  # the files partition's index, read while the driver lists


def _worker_run(uri: str, options: Mapping[str, str], columns: list[str], types: dict[str, pa.DataType], partitions: list[str],
                rows: pa.Table, predicate: BoundPredicate) -> Candidates:
    mdt = _worker_table(uri, options).metadata_table
    assert mdt is not None
    return evaluate_run(mdt, columns, types, partitions, rows, predicate)


class RowsOfRuns(Protocol):
    """Where a listing's partitions' rows are: how many each holds, and each
    run's rows as positions in the listing (ascending), run after run."""

    def counts(self) -> Mapping[str | None, int]: ...

    def positions_of_runs(self, runs: list[list[str]]) -> Iterator[npt.NDArray[np.int64]]: ...


@dataclass
class RunCut:
    """The partitions in the order of their ids, cut into runs of about
    `run_files` listed files; `runs()` gives each run's rows as positions in
    the listing (a run's rows are matched where they lie, never copied out).

    A listing holds each partition's rows together (the files partition's
    records are one per partition), so its rows are located by each
    partition's span (`PartitionSpans`): nothing the size of the listing is
    made (at 10M files, sorting held 80 to 120 MB more as the first runs were
    read). A listing that mixes partitions is sorted (`SortedRows`)."""

    partitions: list[list[str]]  # each run's partitions
    rows: RowsOfRuns

    @classmethod
    def of(cls, files: pa.Table, partitions: list[str], run_files: int) -> RunCut:
        ordered = sorted(partitions, key=keys.partition_index_id)
        rows: RowsOfRuns = PartitionSpans.of(files.column(PARTITION)) or SortedRows.of(files)
        return cls(_cut(ordered, rows.counts(), run_files), rows)

    def runs(self) -> Iterator[tuple[list[str], npt.NDArray[np.int64]]]:
        """Each run's partitions with the positions of its rows in the listing (ascending), in run order."""
        return zip(self.partitions, self.rows.positions_of_runs(self.partitions))


def _cut(ordered: list[str], counts: Mapping[str | None, int], run_files: int) -> list[list[str]]:
    """The partitions, in order, cut into runs of about `run_files` listed files."""
    runs: list[list[str]] = [[]]
    held = 0
    for partition in ordered:
        if held >= run_files:
            runs.append([])
            held = 0
        runs[-1].append(partition)
        held += counts.get(partition, 0)
    return [run for run in runs if run]


@dataclass
class PartitionSpans:
    """Each partition's rows of a listing as one span [start, end)."""

    index: dict[str | None, int]  # partition -> its span
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]

    @classmethod
    def of(cls, column: pa.ChunkedArray) -> PartitionSpans | None:
        """The spans, or None when a partition's rows are not all together."""
        index: dict[str | None, int] = {}
        starts: list[int] = []
        ends: list[int] = []
        offset = 0
        for chunk in column.chunks:
            if len(chunk):
                encoded = pc.run_end_encode(chunk, run_end_type=pa.int64())  # a new array: its runs start at 0
                chunk_ends = (to_numpy(encoded.run_ends) + offset).tolist()
                for value, start, end in zip(encoded.values.to_pylist(), [offset, *chunk_ends[:-1]], chunk_ends):
                    if value in index:
                        if index[value] != len(ends) - 1 or ends[-1] != start:  # seen before, not just now across chunks
                            return None
                        ends[-1] = end
                    else:
                        index[value] = len(starts)
                        starts.append(start)
                        ends.append(end)
            offset += len(chunk)
        return cls(index, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))

    def counts(self) -> dict[str | None, int]:
        lengths = (self.ends - self.starts).tolist()
        return {partition: lengths[n] for partition, n in self.index.items()}

    def positions_of_runs(self, runs: list[list[str]]) -> Iterator[npt.NDArray[np.int64]]:
        return (self.positions(run) for run in runs)

    def positions(self, partitions: list[str]) -> npt.NDArray[np.int64]:
        """The rows of these partitions, ascending (a partition not listed has none)."""
        found = np.array(sorted(self.index[p] for p in partitions if p in self.index), dtype=np.int64)  # spans ascend as they were found
        starts, lengths = self.starts[found], self.ends[found] - self.starts[found]
        # each row: its span's start plus its place in the span (its place among all minus the rows of the spans before)
        before = np.cumsum(lengths) - lengths
        return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - before, lengths)


@dataclass
class SortedRows:
    """A listing whose partitions' rows are apart: its partitions dictionary
    encoded, each run's rows found by sorting the listing by run."""

    names: list[str]  # the listing's partitions, as dictionary-encoded
    codes: npt.NDArray[np.int32] | None  # per listed file its name (32-bit, as encoded: at 10M files 40 MB); None once the runs have them
    batch_lengths: list[int]  # the listing's batches

    @classmethod
    def of(cls, files: pa.Table) -> SortedRows:
        encoded = pc.dictionary_encode(files.column(PARTITION)).combine_chunks()
        return cls(encoded.dictionary.to_pylist(), to_numpy(encoded.indices).astype(np.int32, copy=False),
                   [batch.num_rows for batch in files.to_batches()])

    def counts(self) -> dict[str | None, int]:
        return dict(zip(self.names, np.bincount(self._codes(), minlength=len(self.names)).tolist()))

    def positions_of_runs(self, runs: list[list[str]]) -> Iterator[npt.NDArray[np.int64]]:
        """Each run's rows, once: the codes are let go before the runs (asked again, it refuses rather than give none)."""
        run_of_name = {p: n for n, run in enumerate(runs) for p in run}
        run_of_row = np.array([run_of_name.get(p, -1) for p in self.names], dtype=np.int32)[self._codes()]
        self.codes = None  # gone before the runs
        # sorted a batch of the listing at a time, held 32-bit: at 10M files a whole sort's indexes take 80 MB more
        orders, first = [], 0
        for length in self.batch_lengths:
            runs_here = run_of_row[first : first + length]
            order = np.argsort(runs_here, kind="stable").astype(np.int32)
            orders.append((first, order, np.searchsorted(runs_here[order], np.arange(len(runs) + 1))))
            first += length
        del run_of_row
        for n in range(len(runs)):
            yield np.concatenate([order[bounds[n] : bounds[n + 1]].astype(np.int64) + start for start, order, bounds in orders])

    def _codes(self) -> npt.NDArray[np.int32]:
        if self.codes is None:
            raise RuntimeError("a sorted listing's runs were located already: its codes are gone")
        return self.codes


__all__ = ["FEWEST_RUN_FILES", "MOST_RUN_FILES", "PartitionSpans", "RunCut", "SortedRows", "evaluate_run", "run_files_for", "runs_of_partitions"]
