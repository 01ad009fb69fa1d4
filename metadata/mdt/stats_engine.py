"""Where column ranges of many data files get computed: threads here, Spark
elsewhere (`engine_bridge.spark.index_engine`).

An engine maps a function over the files' ranges where they were read
(`map_ranges`), so that a build can also encode its records there: on Spark,
the driver then gets finished cells, not ranges to turn into records."""

from __future__ import annotations

import pickle
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from metadata.mdt.file_stats import ColumnRange, blocks_counting, file_ranges
from metadata.storage.storage import Storage
from metadata.util.process import worker_count, worker_pool
from metadata.util.read_ahead import threaded_map

T = TypeVar("T")
Then = Callable[[str, list[ColumnRange]], T]  # (file path relative to the table, its ranges) -> what goes back


class StatsEngine(Protocol):
    """Computes column ranges of many data files (threads here, Spark elsewhere)."""

    batch_files: int  # files a writer hands it at once
    batches_at_once: int  # batches a writer has in `map_ranges` at once (more hide a job's start-up)

    def map_ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                   schema: pa.Schema | None, completed: frozenset[str], storage_options: Mapping[str, str] | None,
                   then: Then[T]) -> list[T]:
        """`then(path, ranges)` of every file, run where its ranges were read
        (a picklable function for Spark). `files`: (path relative to the
        table, instant whose blocks count or None for all blocks of the
        `completed` instants); `storage_options`: how to reach an object
        store (as the table was opened with)."""
        ...


def keep_ranges(relative: str, ranges: list[ColumnRange]) -> list[ColumnRange]:
    return ranges


def engine_ranges(engine: StatsEngine, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                  schema: pa.Schema | None, completed: frozenset[str],
                  storage_options: Mapping[str, str] | None = None) -> list[ColumnRange]:
    """The ranges of every file, in one list."""
    found = engine.map_ranges(base_uri, files, columns, schema, completed, storage_options, keep_ranges)
    return [r for ranges in found for r in ranges]


def ranges_then(storage: Storage, item: tuple[str, str | None], columns: Sequence[str] | None, schema: pa.Schema | None,
                completed: frozenset[str], then: Then[T]) -> T:
    """One file's ranges, read and handed to `then` (both engines' task body)."""
    relative, only = item
    return then(relative, file_ranges(storage, relative, columns, blocks_counting(only, completed), schema))


PROCESS_MIN_FILES = 1000  # a batch this large on local disk is read by processes (the footer work holds the GIL)
PROCESS_CHUNK = 250  # files a process reads per task


@dataclass
class LocalStatsEngine:
    """Parquet footers and log blocks read on a thread pool (pyarrow releases
    the GIL while reading; object stores need many requests in flight). On
    local disk a large batch is CPU-bound Python (footers decoded, records
    encoded): with `processes` (None: one per core) it is split over
    processes, each with its threads. Processes start as Python's
    `forkserver` starts them, importing the caller's main module: a script
    that asks for them runs its work under `if __name__ == "__main__":`."""

    parallelism: int = 8
    batch_files: int = 2000
    batches_at_once: int = 1  # a batch already keeps every core busy
    processes: int | None = 1  # 1: threads only; None: one process per core for large local batches
    process_min_files: int = PROCESS_MIN_FILES
    _pool: ProcessPoolExecutor | None = field(default=None, init=False, repr=False, compare=False)

    def map_ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                   schema: pa.Schema | None, completed: frozenset[str], storage_options: Mapping[str, str] | None,
                   then: Then[T]) -> list[T]:
        storage = Storage.open(base_uri, storage_options=storage_options)
        processes = self._processes(storage, len(files), then)
        if processes > 1:
            pool = self._process_pool(processes)
            threads = max(1, min(2, self.parallelism // processes))  # local reads: more threads only contend for the GIL
            chunks = [list(files[i:i + PROCESS_CHUNK]) for i in range(0, len(files), PROCESS_CHUNK)]
            task = partial(_chunk_ranges, base_uri, columns=columns, schema=schema, completed=completed,
                           storage_options=storage_options, then=then, threads=threads)
            return [found for chunk in pool.map(task, chunks) for found in chunk]
        return _threaded(storage, files, columns, schema, completed, then, self.parallelism)

    def _processes(self, storage: Storage, files: int, then: Then[T]) -> int:
        wanted = worker_count(self.processes)
        if wanted <= 1 or files < self.process_min_files or not isinstance(storage.filesystem, pafs.LocalFileSystem):
            return 1
        try:
            pickle.dumps(then)  # what goes to a process must pickle (a closure stays on threads)
        except (pickle.PicklingError, AttributeError, TypeError):
            return 1
        return wanted

    def _process_pool(self, processes: int) -> ProcessPoolExecutor:
        """One pool for the engine's life (workers forked from a clean server, not from this threaded process)."""
        if self._pool is None:
            self._pool = worker_pool(processes, [__name__])
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        return self._pool


def _threaded(storage: Storage, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None, schema: pa.Schema | None,
              completed: frozenset[str], then: Then[T], threads: int) -> list[T]:
    return threaded_map(files, lambda item: ranges_then(storage, item, columns, schema, completed, then), threads)


def _chunk_ranges(base_uri: str, chunk: list[tuple[str, str | None]], *, columns: Sequence[str] | None, schema: pa.Schema | None,
                  completed: frozenset[str], storage_options: Mapping[str, str] | None, then: Then[T], threads: int) -> list[T]:
    """A process's task: a chunk of files read on its own threads."""
    return _threaded(Storage.open(base_uri, storage_options=storage_options), chunk, columns, schema, completed, then, threads)
