"""The Spark input partition of a Hudi scan, batch or streaming."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from engine_bridge.spark.options import ReadOptions
from engine_bridge.spark.scan import ReadSpec, Split
from listers.changes import CommitChange, commit_changes


class HudiInputPartition(InputPartition):
    """One Spark task: a group of file slices and what reading them needs,
    as plain strings (Spark pickles it to the executors)."""

    def __init__(self, index: int, spec: ReadSpec, split: Split) -> None:
        super().__init__(index)
        self.spec = spec
        self.split = split


class ChangePartition(InputPartition):
    """One Spark task of a change feed: one commit's changed file slices."""

    def __init__(self, index: int, options: ReadOptions, change: CommitChange) -> None:
        super().__init__(index)
        self.options = options
        self.change = change

    def batches(self) -> list[pa.RecordBatch]:
        """The commit's CDC rows (read on the executor, which opens the table itself)."""
        return commit_changes(self.options.open_table(), self.change).to_batches()
