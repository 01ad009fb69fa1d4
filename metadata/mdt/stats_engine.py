"""Where column ranges of many data files get computed: threads here, Spark
elsewhere (`engine_bridge.spark.index_engine`).

An engine maps a function over the files' ranges where they were read
(`map_ranges`), so that a build can also encode its records there: on Spark,
the driver then gets finished cells, not ranges to turn into records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange, blocks_counting, file_ranges
from metadata.storage import Storage

T = TypeVar("T")
Then = Callable[[str, list[ColumnRange]], T]  # (file path relative to the table, its ranges) -> what goes back


class StatsEngine(Protocol):
    """Computes column ranges of many data files (threads here, Spark elsewhere)."""

    batch_files: int  # files a writer hands it at once

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


@dataclass
class LocalStatsEngine:
    """Parquet footers and log blocks read on a thread pool (pyarrow releases the GIL)."""

    parallelism: int = 8
    batch_files: int = 2000

    def map_ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                   schema: pa.Schema | None, completed: frozenset[str], storage_options: Mapping[str, str] | None,
                   then: Then[T]) -> list[T]:
        storage = Storage.open(base_uri, storage_options=storage_options)
        with ThreadPoolExecutor(max_workers=max(1, self.parallelism)) as pool:
            return list(pool.map(lambda item: ranges_then(storage, item, columns, schema, completed, then), files))
