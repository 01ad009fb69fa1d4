"""Where column ranges of many data files get computed: threads here, Spark
elsewhere (`engine_bridge.spark.index_engine`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange, blocks_counting, file_ranges
from metadata.storage import Storage


class StatsEngine(Protocol):
    """Computes column ranges of many data files (threads here, Spark elsewhere)."""

    def ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
               schema: pa.Schema | None, completed: frozenset[str],
               storage_options: Mapping[str, str] | None = None) -> list[ColumnRange]:
        """`files`: (path relative to the table, instant whose blocks count or
        None for all blocks of the `completed` instants); `storage_options`:
        how to reach an object store (as the table was opened with)."""
        ...


@dataclass
class LocalStatsEngine:
    """Parquet footers and log blocks read on a thread pool (pyarrow releases the GIL)."""

    parallelism: int = 8

    def ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
               schema: pa.Schema | None, completed: frozenset[str],
               storage_options: Mapping[str, str] | None = None) -> list[ColumnRange]:
        storage = Storage.open(base_uri, storage_options=storage_options)

        def one(item: tuple[str, str | None]) -> list[ColumnRange]:
            relative, only = item
            return file_ranges(storage, relative, columns, blocks_counting(only, completed), schema)

        with ThreadPoolExecutor(max_workers=max(1, self.parallelism)) as pool:
            return [r for found in pool.map(one, files) for r in found]
