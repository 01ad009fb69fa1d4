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
from engine_bridge.spark.scan import SliceToRead, group_slices, plan_scan, read_split
from engine_bridge.spark.schema import spark_arrow_schema
from listers.changes import plan_changes
from listers.incremental import incremental, range_key
from metadata import HudiTable
from metadata.timeline.instant import BEFORE_ALL_INSTANTS

START_OFFSET = "hoodie.datasource.streaming.startoffset"
MAX_COMMITS = "hoodie.bridge.streaming.max.commits.per.batch"
# Rate limits beside the commit limit (Hudi issue #8544): files (base and log)
# and bytes of file slices a batch reads. A commit larger than what is left
# is split by file group; a batch takes at least one file group.
MAX_FILES = "hoodie.bridge.streaming.max.files.per.batch"
MAX_BYTES = "hoodie.bridge.streaming.max.bytes.per.batch"


@dataclass(frozen=True)
class StreamOptions:
    read: ReadOptions
    start: str  # earliest | latest | an instant (commits after it)
    max_commits: int | None
    change_feed: bool = False  # hoodie.datasource.query.incremental.format=cdc: Hudi's CDC rows
    max_files: int | None = None
    max_bytes: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> StreamOptions:
        options = {k.lower(): v for k, v in raw.items()}
        start = options.get(START_OFFSET, "earliest").strip().lower()
        if start not in ("earliest", "latest"):
            start = query_instant(start, START_OFFSET)
        max_commits = _positive(options, MAX_COMMITS, "a number of commits")
        kept = {k: v for k, v in options.items()
                if k in (PATH, "paths", METADATA, INCREMENTAL_FALLBACK) or k.startswith((STORAGE_PREFIX, HADOOP_S3A_PREFIX))}
        return cls(ReadOptions.parse(kept), start, max_commits, wants_change_feed(options),
                   _positive(options, MAX_FILES, "a number of files"), _positive(options, MAX_BYTES, "a number of bytes"))


def _positive(options: Mapping[str, str], key: str, what: str) -> int | None:
    text = options.get(key)
    try:
        value = int(text) if text else None
    except ValueError:
        raise SparkOptionError(f"option {key}={text!r}: expected {what}") from None
    if value is not None and value < 1:
        raise SparkOptionError(f"option {key} must be at least 1")
    return value


Offset = dict[str, Any]


def _offset(instant: str, commit: str | None = None, group: tuple[str, str] | None = None) -> Offset:
    """Every commit up to `instant` delivered, and (when a commit was split)
    of the next one, `commit`, its file groups up to `group` in (partition, file id) order."""
    if commit is None or group is None:
        return {"instant": instant}
    return {"instant": instant, "commit": commit, "group": list(group)}


def _group(offset: Offset) -> tuple[str, str] | None:
    return (offset["group"][0], offset["group"][1]) if "group" in offset else None


class HudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, raw_options: Mapping[str, str], schema: Any) -> None:
        self.options = StreamOptions.parse(raw_options)
        self.schema = schema
        self._target: str | None = None  # availableNow: nothing after this key

    def _table(self) -> HudiTable:
        return self.options.read.open_table()

    def _keys(self, table: HudiTable | None = None) -> list[str]:
        """Range keys of the completed commits, ascending."""
        table = table or self._table()
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

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        begin = start["instant"]
        table = self._table()
        pending = [k for k in self._keys(table) if k > begin and (self._target is None or k <= self._target)]
        if not pending:
            return start
        max_commits = limit.max_files if isinstance(limit, ReadMaxFiles) else None  # files stand for commits here
        if self.options.max_files is None and self.options.max_bytes is None:
            return _offset(pending[: max_commits or len(pending)][-1])
        return self._throttled(table, start, pending, max_commits)

    def _commit_slices(self, table: HudiTable, previous: str, key: str) -> list[SliceToRead]:
        """The file slices one commit wrote, in (partition, file id) order."""
        plan = incremental(table, previous, key, fallback_to_full_scan=self.options.read.incremental_fallback)
        return sorted((SliceToRead.of(s) for s in plan.files), key=lambda s: s.group)

    def _throttled(self, table: HudiTable, start: Offset, pending: list[str], max_commits: int | None) -> Offset:
        """Whole commits while the files and bytes limits allow, then the file
        groups of the next commit that fit (a change feed takes whole commits
        only: a record moved between file groups must not be split). A batch
        takes at least one file group."""
        max_files, max_bytes = self.options.max_files or 1 << 62, self.options.max_bytes or 1 << 62
        files = size = 0
        done, previous, after = start, start["instant"], _group(start) if start.get("commit") == pending[0] else None
        for n, key in enumerate(pending):
            if max_commits is not None and n >= max_commits:
                break
            slices = [s for s in self._commit_slices(table, previous, key) if after is None or s.group > after]
            need_files, need_size = sum(s.file_count for s in slices), sum(s.size for s in slices)
            nothing_yet = files == 0 and size == 0
            if files + need_files <= max_files and size + need_size <= max_bytes or nothing_yet and self.options.change_feed:
                files, size, done, previous, after = files + need_files, size + need_size, _offset(key), key, None
                continue
            if self.options.change_feed:
                break
            taken = 0
            for s in slices:
                if files + s.file_count > max_files or size + s.size > max_bytes:
                    if not (nothing_yet and taken == 0):
                        break
                files, size, taken = files + s.file_count, size + s.size, taken + 1
            if taken == len(slices):
                done = _offset(key)
            elif taken:
                done = _offset(previous, key, slices[taken - 1].group)
            break
        return done

    def partitions(self, start: Offset, end: Offset) -> list[HudiInputPartition] | list[ChangePartition]:
        if start == end:
            return []
        if self.options.change_feed:
            changed = plan_changes(self._table(), start["instant"], end["instant"])
            return [ChangePartition(i, self.options.read, change) for i, change in enumerate(changed)]
        table = self._table()
        pieces: list[tuple[str, str, tuple[str, str] | None, tuple[str, str] | None]] = []  # (begin, end, after group, through group)
        begin = start["instant"]
        if "commit" in start:  # the rest of a split commit (up to where `end` splits it, if it does)
            through = _group(end) if end.get("commit") == start["commit"] else None
            pieces.append((begin, start["commit"], _group(start), through))
            begin = start["commit"]
        if end["instant"] > begin:
            pieces.append((begin, end["instant"], None, None))
        if "commit" in end and end.get("commit") != start.get("commit"):
            pieces.append((end["instant"], end["commit"], None, _group(end)))
        result: list[HudiInputPartition] = []
        for low, high, after, through in pieces:  # each piece with its own range's row filter
            read = ReadOptions(path=self.options.read.path, query_type=QueryType.INCREMENTAL, begin=low, end=high,
                               use_metadata=self.options.read.use_metadata, incremental_fallback=self.options.read.incremental_fallback,
                               storage_options=self.options.read.storage_options)
            scan = plan_scan(read, table=table)
            chosen = [s for split in scan.splits for s in split.slices
                      if (after is None or s.group > after) and (through is None or s.group <= through)]
            result += [HudiInputPartition(len(result) + i, scan.spec, split)
                       for i, split in enumerate(group_slices(chosen, self.options.read.split_bytes))]
        return result

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, ChangePartition):
            yield from partition.batches()
            return
        assert isinstance(partition, HudiInputPartition)
        yield from read_split(partition.spec, partition.split, spark_arrow_schema(self.schema))

    def commit(self, end: Offset) -> None:
        """Nothing to release: offsets are instants on the table's timeline."""
