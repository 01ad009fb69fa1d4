"""column_stats read and evaluated a run of partitions at a time: a plan
over millions of files holds the listing (which the lister keeps for later
plans), the runs in flight and the candidates found so far, never the whole
table's statistics.

Partitions are taken in the order of their ids, which is the order of the
column_stats keys (column id, partition id, file id), so each run reads a
few runs of neighbouring blocks per column. A run's listing rows and records
meet in the executors' bucket evaluator (`pivoted`, `candidates_of`), so the
local stream and a Spark plan take their verdicts by one code path. A run
holds about `run_files` listed files. With worker processes, each evaluates
whole runs (it opens the table once and reads its runs' statistics itself);
the listing is read here meanwhile, as the workers start. In one process, a
thread reads each run's records (the only thread reading the metadata
table meanwhile) while the run before is pivoted and evaluated, and starts
the next run's blocks inflating before it decodes its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from expressions import BoundPredicate
from listers.index_support.base import PlanContext
from listers.index_support.column_stats import Candidates, candidates_of, pivoted, whole_stats_bytes
from listers.index_support.shard_pipeline import merged, stats_types
from metadata import HudiTable, arrow_values
from metadata.arrow_memory import release_unused
from metadata.arrow_values import to_numpy
from metadata.mdt import keys
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.stats_columns import FlatStats
from metadata.process import worker_count, worker_pool
from metadata.stats_table import PARTITION, stats_rows_of

# Listed files a run evaluates, with their statistics. Smaller runs stay in
# the caches and leave the allocators less to hold: a streamed 1M plan took
# 4.4 s and 475 MiB in runs of 100,000, 3.4 s and 317 MiB in runs of 25,000
# (50,000: 3.4 s, 367 MiB; 10,000: 3.8 to 4.0 s); 10M, 42.0 s and 1,375 MiB.
RUN_FILES = 25_000
# Freed pages handed back every few runs: the allocators keep what a run freed, and a kept plan's statistics grow
# beside it. At 1M files, every 4 runs: peak 494 to 485 MiB, about 0.1 s slower (every run: 478 MiB, 0.3 s slower).
RELEASE_EVERY_RUNS = 4
RUNS_IN_FLIGHT = 2  # runs per worker handed over ahead (their listing rows are held until they finish)
Run = tuple[list[str], pa.Table, npt.NDArray[np.int64]]  # a run's partitions, its listing rows, and where they are in the listing


def runs_of_partitions(run_files: int = RUN_FILES, processes: int | None = 1) -> StreamedRuns:
    """A runner evaluating column_stats a run of partitions at a time; with
    `processes` above 1 (None: one per core), in worker processes."""
    return StreamedRuns(run_files, processes)


class StreamedRuns:
    """Evaluates column_stats a run of partitions at a time (see the module);
    in this process, the runs' reading may start before the listing is read (`start`)."""

    def __init__(self, run_files: int = RUN_FILES, processes: int | None = 1) -> None:
        self.run_files, self.processes = run_files, processes

    def start(self, ctx: PlanContext, partitions: list[str], files_above: int) -> RunReads | None:
        """Starts cutting and reading the runs while the caller lists the
        partitions, unless they will be evaluated in worker processes or
        column_stats holds more than EARLY_READS_UP_TO_RECORDS records; the
        first runs are read only when their block indexes count more than
        `files_above` files (the caller decides by the listing whether to
        stream, and closes what it does not use)."""
        if worker_count(self.processes) != 1 or ctx.mdt is None or not ctx.data_columns or not reads_early(ctx.mdt):
            return None
        return RunReads(ctx.mdt, list(ctx.data_columns), stats_types(ctx.mdt, list(ctx.data_columns)), partitions, self.run_files,
                        files_above)

    def __call__(self, ctx: PlanContext, partitions: list[str], started: RunReads | None = None) -> Candidates:
        mdt = ctx.mdt
        assert mdt is not None
        columns = list(ctx.data_columns)
        types = stats_types(mdt, columns)
        run_files = self.run_files
        workers = worker_count(self.processes)
        if workers == 1:
            # A run's records are read on a thread (the only one reading the metadata table meanwhile) while the run
            # before is pivoted, matched and evaluated here; its blocks inflate while the run before it decodes. The
            # runs are cut there from the statistics' block indexes, so the first ones are read while this thread lists.
            reads = started if started is not None else RunReads(mdt, columns, types, partitions, run_files, early=reads_early(mdt))
            try:
                files = ctx.lister.file_table(partitions)
                # every live partition's statistics, small enough to keep: kept for the next plan, as a whole read keeps them
                kept = KeptRuns() if set(partitions).issuperset(mdt.partitions()) and \
                    whole_stats_bytes(files, len(columns)) <= mdt.stats_cache.max_bytes else None
                cut, runs = _runs(files, partitions, run_files, reads.planned())
                here = []
                for (chosen, rows, positions), flat in zip(runs, reads.in_order(cut)):
                    stats = stats_of_records(mdt, columns, types, chosen, rows, flat.of_partitions(columns, chosen))
                    here.append(evaluate_run(mdt, columns, types, chosen, rows, ctx.predicate, kept, positions, stats))
                    if len(here) % RELEASE_EVERY_RUNS == 0:
                        release_unused()
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
            _, runs = _runs(ctx.lister.file_table(partitions), partitions, run_files)
            for future in opened:
                future.result()  # a table the workers cannot open fails here, as it would in this process
            found: list[Candidates] = []
            pending: deque[Future[Candidates]] = deque()
            for chosen, rows, _ in runs:
                if len(pending) >= workers * RUNS_IN_FLIGHT:
                    found.append(pending.popleft().result())
                pending.append(pool.submit(_worker_run, uri, options, columns, types, chosen, rows, ctx.predicate))
            found += [future.result() for future in pending]
        return merged(found, columns, f"read and evaluated in {len(found)} run(s) of partitions in {workers} worker processes")


def _runs(files: pa.Table, partitions: list[str], run_files: int, cut: list[list[str]] | None = None) -> tuple[list[list[str]], Iterator[Run]]:
    release_unused()  # what reading the listing left free goes back before the runs
    return partition_runs(files, partitions, run_files, cut)


# Runs read ahead of the one evaluated (and while the listing is read): each holds its records until it is evaluated.
READ_AHEAD_RUNS = 2
# Runs are read while the listing is only when column_stats holds at most this many records (its base files' trailers
# count them): the listing's memory peaks meanwhile, and the reading thread's adds to it. 10M files (30M records)
# peaked at 1,400 MiB without, 1,490 to 1,570 with; 3M and 1M files, within 20 MiB of the same (960 and 455 MiB).
EARLY_READS_UP_TO_RECORDS = 12_000_000
# The block indexes count a few percent fewer files than are listed (3% at 1M): a plan a little over the streaming
# threshold reads its first runs early too (one that does not stream after all drops what was read).
GATE_MARGIN = 0.8


class RunReads:
    """The runs' statistics read in order on a thread of their own, a few runs
    ahead of the thread evaluating them. The runs are cut there first, from
    the statistics' block indexes (`cut_by_blocks`), so the first ones are read
    while the listing is, when the indexes count more than `gate` files (None:
    any); otherwise (not `early`, or nothing to cut by) the listing cuts them
    and they are read once it is there (`in_order`)."""

    def __init__(self, mdt: MetadataTable, columns: list[str], types: dict[str, pa.DataType], partitions: list[str], run_files: int,
                 gate: int | None = None, early: bool = True) -> None:
        self.mdt, self.columns, self.types = mdt, columns, types
        self.reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stats-run")
        self.open = False  # whether runs are read before the listing is taken (then cut by the block indexes)
        self.runs: list[list[str]] | None = None  # as cut by the listing

        def cut() -> list[list[str]] | None:
            if not early:
                return None
            runs, counted = cut_by_blocks(mdt, columns[0], partitions, run_files)
            self.open = runs is not None and (gate is None or counted > gate * GATE_MARGIN)
            return runs if self.open else None

        self.cut = self.reader.submit(cut)
        self.pending: deque[Future[FlatStats | None]] = deque(self.reader.submit(self._nth, n) for n in range(READ_AHEAD_RUNS))

    def planned(self) -> list[list[str]] | None:
        """The runs as cut by the block indexes, when read before the listing (None: to be cut by the listing)."""
        return self.cut.result()

    def _nth(self, n: int) -> FlatStats | None:
        runs = self.runs if self.runs is not None else self.cut.result()
        if not self.open or runs is None or n >= len(runs):
            return None
        for ahead in runs[n : n + 2]:  # this run's blocks (if not started), then the next one's behind them
            self.mdt.prefetch_stats_records(MdtPartition.COLUMN_STATS.value, self.columns, ahead)
        return self.mdt.stats_read(MdtPartition.COLUMN_STATS.value, self.columns, runs[n], self.types)

    def in_order(self, runs: list[list[str]]) -> Iterator[FlatStats]:
        """Each run's statistics, in order (`runs`: as cut; the planned lists when the block indexes cut them)."""
        if not self.open:  # nothing was read before the listing: each early read gave None
            for early in self.pending:
                early.result()
            self.runs, self.open = runs, True
            self.pending = deque(self.reader.submit(self._nth, n) for n in range(READ_AHEAD_RUNS))
        submitted = len(self.pending)
        for _ in range(len(runs)):
            got = self.pending.popleft().result()
            assert got is not None
            if submitted < len(runs):
                self.pending.append(self.reader.submit(self._nth, submitted))
                submitted += 1
            yield got

    def close(self) -> None:
        """What is still queued is not read, and the thread ends (after the read under way, if one is)."""
        for future in self.pending:
            future.cancel()
        self.reader.shutdown(wait=True, cancel_futures=True)


def reads_early(mdt: MetadataTable) -> bool:
    """Whether a streamed plan's runs are read while the listing is (EARLY_READS_UP_TO_RECORDS)."""
    return mdt.reader.base_entry_count(MdtPartition.COLUMN_STATS.value) <= EARLY_READS_UP_TO_RECORDS


def cut_by_blocks(mdt: MetadataTable, column: str, partitions: list[str], run_files: int) -> tuple[list[list[str]] | None, float]:
    """The partitions in the order of their ids, cut into runs of about
    `run_files` files as the block indexes of `column`'s statistics count
    them (each file has a record per column), and the files they count;
    None when they have none."""
    ordered = sorted(partitions, key=keys.partition_index_id)
    sizes = mdt.stats_records_per_partition(MdtPartition.COLUMN_STATS.value, column, ordered)
    return (None, 0.0) if sizes is None else (cut_runs(ordered, sizes, run_files), sum(sizes))


def cut_runs(ordered: list[str], sizes: Iterable[float], run_files: int) -> list[list[str]]:
    """Partitions (in order) cut into runs each holding at least `run_files`
    of their sizes, but the last."""
    runs: list[list[str]] = [[]]
    held = 0.0
    for partition, size in zip(ordered, sizes):
        if held >= run_files:
            runs.append([])
            held = 0.0
        runs[-1].append(partition)
        held += size
    return [run for run in runs if run]


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


def evaluate_run(mdt: MetadataTable, columns: list[str], types: dict[str, pa.DataType], partitions: list[str], rows: pa.Table,
                 predicate: BoundPredicate, kept: KeptRuns | None = None, positions: npt.NDArray[np.int64] | None = None,
                 stats: pa.Table | None = None) -> Candidates:
    """One run: its statistics (read here unless given) evaluated with its
    listing rows (at `positions` of the listing); what it read added to `kept`."""
    if stats is None:
        stats = run_stats(mdt, columns, types, partitions, rows)
    found = stats_rows_of(rows, stats)
    if kept is not None and positions is not None:
        kept.add(stats, positions, found)
    return candidates_of(rows, stats, predicate, columns, found)


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


def partition_runs(files: pa.Table, partitions: list[str], run_files: int,
                   cut: list[list[str]] | None = None) -> tuple[list[list[str]], Iterator[Run]]:
    """The partitions in the order of their ids, cut into runs of about
    `run_files` listed files (or as `cut` gives them), and each run with its
    listing rows (taken from each batch of the listing as the run comes: the
    listing is never copied whole) and their positions in the listing."""
    encoded = pc.dictionary_encode(files.column(PARTITION)).combine_chunks()
    names = encoded.dictionary.to_pylist()
    codes = to_numpy(encoded.indices).astype(np.int64)
    if cut is None:
        counts = dict(zip(names, np.bincount(codes, minlength=len(names)).tolist()))
        ordered = sorted(partitions, key=keys.partition_index_id)
        cut = cut_runs(ordered, [counts.get(p, 0) for p in ordered], run_files)
    return cut, _rows_of_runs(files, cut, names, codes)


def _rows_of_runs(files: pa.Table, runs: list[list[str]], names: list[str], codes: npt.NDArray[np.int64]) -> Iterator[Run]:
    run_of_name = {p: n for n, run in enumerate(runs) for p in run}
    run_of_row = np.array([run_of_name.get(p, -1) for p in names], dtype=np.int32)[codes]
    del codes  # 32-bit, and gone before the runs: at 10M files each index array is 40 to 80 MB
    batches, first = [], 0
    for batch in files.to_batches():
        runs_here = run_of_row[first : first + batch.num_rows]
        order = np.argsort(runs_here, kind="stable").astype(np.int32)
        batches.append((batch, order, np.searchsorted(runs_here[order], np.arange(len(runs) + 1))))
        first += batch.num_rows
    del run_of_row
    starts = np.cumsum([0] + [batch.num_rows for batch, _, _ in batches])
    for n, run in enumerate(runs):
        taken = [batch.take(arrow_values.from_numpy(order[bounds[n] : bounds[n + 1]])) for batch, order, bounds in batches]
        positions = np.concatenate([order[bounds[n] : bounds[n + 1]].astype(np.int64) + start
                                    for (_, order, bounds), start in zip(batches, starts.tolist())] or [np.zeros(0, np.int64)])
        yield run, pa.Table.from_batches(taken, schema=files.schema), positions


__all__ = ["RUN_FILES", "RunReads", "StreamedRuns", "evaluate_run", "partition_runs", "runs_of_partitions"]
