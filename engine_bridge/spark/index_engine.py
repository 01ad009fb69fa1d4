"""Column statistics of many data files computed as a Spark job: the file
list is split into tasks, each task reads its footers and log blocks, and the
ranges come back to the driver (`hudi-bridge index build --engine spark`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange, blocks_counting, file_ranges
from metadata.storage import Storage


def _task(base_uri: str, storage_options: Mapping[str, str] | None, columns: Sequence[str] | None, schema: pa.Schema | None,
          completed: frozenset[str], items: Iterator[tuple[str, str | None]]) -> Iterator[ColumnRange]:
    storage = Storage.open(base_uri, storage_options=storage_options)  # the driver's options reach the executors
    for relative, only in items:
        yield from file_ranges(storage, relative, columns, blocks_counting(only, completed), schema)


class SparkStatsEngine:
    def __init__(self, spark: Any, parallelism: int | None = None) -> None:
        self.spark = spark
        self.parallelism = parallelism or spark.sparkContext.defaultParallelism

    def ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
               schema: pa.Schema | None, completed: frozenset[str],
               storage_options: Mapping[str, str] | None = None) -> list[ColumnRange]:
        if not files:
            return []
        slices = max(1, min(len(files), self.parallelism * 4))
        options = dict(storage_options or {})
        rdd = self.spark.sparkContext.parallelize(list(files), slices)
        return list(rdd.mapPartitions(lambda items: _task(base_uri, options, columns, schema, completed, items)).collect())
