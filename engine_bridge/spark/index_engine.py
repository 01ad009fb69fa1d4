"""Column statistics of many data files computed as a Spark job: the file
list is split into tasks, each task reads its footers and log blocks and
hands each file's ranges to the writer's function there (a build encodes its
records on the executors), and the results come back to the driver
(`hudi-bridge index build --engine spark`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from metadata.mdt.stats_engine import Then, ranges_then
from metadata.storage.storage import Storage

T = TypeVar("T")
# Files per Spark job: the driver holds up to three jobs' cells (one filed, two in flight). A
# 100,000-file build on local[2], two jobs at once: 5,000 a job took 32.0 to 36.3 s with the driver
# at 320 MiB, 10,000 took 27.9 to 28.4 s at 366 MiB (20,000, one job at a time: 36.4 s at 455 MiB).
BATCH_FILES = 10_000
# Jobs in flight at once: a job's start (about 270 ms on local[2], its tasks' too) leaves the
# executors idle unless another job's tasks are queued behind it.
BATCHES_AT_ONCE = 2


def _task(base_uri: str, storage_options: Mapping[str, str] | None, columns: Sequence[str] | None, schema: pa.Schema | None,
          completed: frozenset[str], then: Then[T], items: Iterator[tuple[str, str | None]]) -> Iterator[T]:
    storage = Storage.open(base_uri, storage_options=storage_options)  # the driver's options reach the executors
    for item in items:
        yield ranges_then(storage, item, columns, schema, completed, then)


class SparkStatsEngine:
    def __init__(self, spark: Any, parallelism: int | None = None, batch_files: int = BATCH_FILES,
                 batches_at_once: int = BATCHES_AT_ONCE) -> None:
        self.spark = spark
        self.parallelism = parallelism or spark.sparkContext.defaultParallelism
        self.batch_files = batch_files
        self.batches_at_once = batches_at_once

    def map_ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                   schema: pa.Schema | None, completed: frozenset[str], storage_options: Mapping[str, str] | None,
                   then: Then[T]) -> list[T]:
        if not files:
            return []
        slices = max(1, min(len(files), self.parallelism * 4))
        options = dict(storage_options or {})
        rdd = self.spark.sparkContext.parallelize(list(files), slices)
        return list(rdd.mapPartitions(lambda items: _task(base_uri, options, columns, schema, completed, then, items)).collect())
