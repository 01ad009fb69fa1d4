"""The `hudi` Python data source: Spark reads Hudi tables planned by hudi-bridge.

Pushed filters prune file slices only where it is safe. PySpark up to at
least 4.3 keeps the partitions planned with one query's pushed filters on
the relation and reuses them for a later query on the same DataFrame or
temporary view that pushes nothing (an OR, a bare count), without calling
the source again; pruning there would silently drop rows. `register()`
checks which Spark it runs on and sets the default
(`hoodie.bridge.prune.pushed.filters`) accordingly. Spark filters every row
itself in all cases: every pushed filter is returned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from engine_bridge.spark.options import ReadOptions, wants_change_feed
from engine_bridge.spark.partition import ChangePartition, HudiInputPartition
from engine_bridge.spark.scan import plan_scan, read_split
from engine_bridge.spark.schema import spark_arrow_schema, spark_schema, table_arrow_schema
from engine_bridge.spark.stream import HudiStreamReader
from expressions import Expr, ExpressionError, from_spark_filters
from listers.changes import CDC_SCHEMA, plan_changes

log = logging.getLogger(__name__)


class HudiBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: Any) -> None:
        self.options = options
        self.schema = schema
        self._pushed: Expr | None = None

    def pushFilters(self, filters: Sequence[Any]) -> Iterator[Any]:
        """Keep the filters for the planning call that follows (when pruning
        is on); hand all of them back so Spark filters rows itself."""
        filters = list(filters)
        self._pushed = None
        if filters and self.options.prune_pushed:
            try:
                self._pushed = from_spark_filters(filters)
            except (ExpressionError, TypeError) as exc:
                log.info("pushed filters not used for pruning: %s", exc)
        yield from filters

    def partitions(self) -> list[HudiInputPartition]:
        pushed, self._pushed = self._pushed, None  # consumed by this planning call only
        scan = plan_scan(self.options, pushed)
        for note in scan.explanation:
            log.info("%s: %s", self.options.path, note)
        # Spark pickles the reader before partitions() runs: what read() needs travels in the partition.
        return [HudiInputPartition(i, scan.spec, split) for i, split in enumerate(scan.splits)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, HudiInputPartition):
            return  # a plan with no split (an empty table, a range with no commit): Spark still asks for one partition
        yield from read_split(partition.spec, partition.split, spark_arrow_schema(self.schema))


class HudiChangeReader(DataSourceReader):
    """`hoodie.datasource.query.incremental.format=cdc`: Hudi's CDC rows
    (listers.changes), a task per commit, in commit order."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[ChangePartition]:
        table = self.options.open_table()
        return [ChangePartition(i, self.options, change)
                for i, change in enumerate(plan_changes(table, self.options.begin or "0", self.options.end))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ChangePartition):
            return  # a range with no commit: Spark still asks for one partition
        yield from partition.batches()


class HudiDataSource(DataSource):
    """`spark.read.format("hudi").load(path)`, options under Hudi's names
    (see engine_bridge.spark.options)."""

    source_name = "hudi"
    prune_pushed_default = True

    @classmethod
    def name(cls) -> str:
        return cls.source_name

    def _read_options(self) -> ReadOptions:
        return ReadOptions.parse(self.options, self.prune_pushed_default)

    def schema(self) -> Any:
        if wants_change_feed(self.options):  # batch or stream: Hudi's CDC columns
            return spark_schema(CDC_SCHEMA)
        return spark_schema(table_arrow_schema(self._read_options().open_table()))

    def reader(self, schema: Any) -> HudiBatchReader | HudiChangeReader:
        options = self._read_options()
        if options.is_change_feed:
            return HudiChangeReader(options)
        return HudiBatchReader(options, schema)

    def streamReader(self, schema: Any) -> HudiStreamReader:
        return HudiStreamReader(self.options, schema)


def configured_source(name: str, prune_pushed_default: bool) -> type[HudiDataSource]:
    """A subclass carrying the registered name and pruning default (Spark
    pickles the class by value, so the settings reach every worker)."""
    return type("RegisteredHudiDataSource", (HudiDataSource,), {
        "source_name": name,
        "prune_pushed_default": prune_pushed_default,
        "__module__": __name__,
    })
