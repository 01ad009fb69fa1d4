"""`spark.readStream.format("hudi")`: micro-batches planned from the timeline.

An offset is `{"instant": T}`: every commit up to T has been delivered. T
is a completion time on table v8+ and a requested time on v6, so on v8+ a
commit that completes after a later-requested one still comes, in the
batch after the one its completion falls in. Each batch is the incremental
read of (start, end], as `hoodie.datasource.query.type=incremental` reads it,
or with `hoodie.datasource.query.incremental.format=cdc` the change feed of
those commits (a task per commit), with the same offsets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles, SupportsTriggerAvailableNow

from engine_bridge.spark.options import (
    HADOOP_S3A_PREFIX,
    INCREMENTAL_FALLBACK,
    METADATA,
    PATH,
    STORAGE_PREFIX,
    QueryType,
    ReadOptions,
    SparkOptionError,
    query_instant,
    wants_change_feed,
)
from engine_bridge.spark.partition import ChangePartition, HudiInputPartition
from engine_bridge.spark.scan import plan_scan, read_split
from engine_bridge.spark.schema import spark_arrow_schema
from listers.changes import commit_changes, plan_changes
from listers.incremental import range_key
from metadata import HudiTable
from metadata.instant import BEFORE_ALL_INSTANTS

START_OFFSET = "hoodie.datasource.streaming.startoffset"
MAX_COMMITS = "hoodie.bridge.streaming.max.commits.per.batch"


@dataclass(frozen=True)
class StreamOptions:
    read: ReadOptions
    start: str  # earliest | latest | an instant (commits after it)
    max_commits: int | None
    change_feed: bool = False  # hoodie.datasource.query.incremental.format=cdc: Hudi's CDC rows

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> StreamOptions:
        options = {k.lower(): v for k, v in raw.items()}
        start = options.get(START_OFFSET, "earliest").strip().lower()
        if start not in ("earliest", "latest"):
            start = query_instant(start, START_OFFSET)
        text = options.get(MAX_COMMITS)
        try:
            max_commits = int(text) if text else None
        except ValueError:
            raise SparkOptionError(f"option {MAX_COMMITS}={text!r}: expected a number of commits") from None
        if max_commits is not None and max_commits < 1:
            raise SparkOptionError(f"option {MAX_COMMITS} must be at least 1")
        kept = {k: v for k, v in options.items()
                if k in (PATH, "paths", METADATA, INCREMENTAL_FALLBACK) or k.startswith((STORAGE_PREFIX, HADOOP_S3A_PREFIX))}
        return cls(ReadOptions.parse(kept), start, max_commits, wants_change_feed(options))


def _offset(instant: str) -> dict[str, str]:
    return {"instant": instant}


class HudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, raw_options: Mapping[str, str], schema: Any) -> None:
        self.options = StreamOptions.parse(raw_options)
        self.schema = schema
        self._target: str | None = None  # availableNow: nothing after this key

    def _table(self) -> HudiTable:
        return self.options.read.open_table()

    def _keys(self) -> list[str]:
        """Range keys of the completed commits, ascending."""
        table = self._table()
        return sorted(range_key(table, i) for i in table.timeline.commits())

    def initialOffset(self) -> dict[str, str]:
        start = self.options.start
        if start == "earliest":
            return _offset(BEFORE_ALL_INSTANTS)
        if start == "latest":
            keys = self._keys()
            return _offset(keys[-1] if keys else BEFORE_ALL_INSTANTS)
        return _offset(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.options.max_commits) if self.options.max_commits else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        keys = self._keys()
        self._target = keys[-1] if keys else BEFORE_ALL_INSTANTS

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        begin = start["instant"]
        pending = [k for k in self._keys() if k > begin and (self._target is None or k <= self._target)]
        if not pending:
            return _offset(begin)
        if isinstance(limit, ReadMaxFiles):
            pending = pending[: max(1, limit.max_files)]  # files stand for commits here
        return _offset(pending[-1])

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[HudiInputPartition] | list[ChangePartition]:
        if start["instant"] >= end["instant"]:
            return []
        if self.options.change_feed:
            changed = plan_changes(self._table(), start["instant"], end["instant"])
            return [ChangePartition(i, self.options.read, change) for i, change in enumerate(changed)]
        read = ReadOptions(
            path=self.options.read.path,
            query_type=QueryType.INCREMENTAL,
            begin=start["instant"],
            end=end["instant"],
            use_metadata=self.options.read.use_metadata,
            incremental_fallback=self.options.read.incremental_fallback,
        )
        scan = plan_scan(read, table=self._table())
        return [HudiInputPartition(i, scan.spec, split) for i, split in enumerate(scan.splits)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, ChangePartition):
            yield from commit_changes(partition.options.open_table(), partition.change).to_batches()
            return
        assert isinstance(partition, HudiInputPartition)
        yield from read_split(partition.spec, partition.split, spark_arrow_schema(self.schema))

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: offsets are instants on the table's timeline."""
