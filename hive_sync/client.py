"""The operations a sync needs from a metastore, whatever carries them.

Each method is one round trip (one Thrift call or one SQL statement), so
`calls` counts what a sync costs; the orchestrator batches partitions and
never calls per partition except where the carrier has no batch form
(HiveQL's SET LOCATION).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from hive_sync.errors import SyncError
from hive_sync.model import HivePartition, PartitionValues, RegisteredTable, TableDefinition


class MetastoreClient(Protocol):
    @property
    def calls(self) -> Counter[str]:
        """Round trips made so far, by method or statement kind."""
    # False when the carrier refuses `spark.sql.*` table properties.
    accepts_spark_properties: bool

    def describe(self) -> str:
        """Where the client writes, for messages (`metastore thrift://...`)."""

    def database_exists(self, database: str) -> bool: ...

    def create_database(self, database: str) -> None: ...

    def get_table(self, database: str, name: str) -> RegisteredTable | None: ...

    def list_partitions(self, database: str, name: str) -> dict[PartitionValues, str]:
        """Every partition (values -> location); one call."""

    def get_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> dict[PartitionValues, str]:
        """Those of `values` that are registered; one call. A location may be
        empty when the carrier cannot tell it cheaply."""

    def create_table(self, table: TableDefinition) -> None: ...

    def alter_table(self, table: TableDefinition, params: dict[str, str], cascade: bool) -> None:
        """Set columns and storage as `table` has them and `params` over the
        existing properties; `cascade` applies the columns to partitions."""

    def set_table_params(self, database: str, name: str, params: dict[str, str]) -> None: ...

    def add_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None: ...

    def alter_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None: ...

    def drop_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> None: ...

    def close(self) -> None: ...


class EmptyMetastore:
    """A metastore that holds nothing, for `sync --dry-run` without one: the
    plan shows what a first sync would create. It refuses every write."""

    accepts_spark_properties = True

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def describe(self) -> str:
        return "an empty metastore (dry run, no metastore given)"

    def database_exists(self, database: str) -> bool:
        return False

    def get_table(self, database: str, name: str) -> RegisteredTable | None:
        return None

    def list_partitions(self, database: str, name: str) -> dict[PartitionValues, str]:
        return {}

    def get_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> dict[PartitionValues, str]:
        return {}

    def _refuse(self, *args: object) -> None:
        raise SyncError("an empty metastore stands in for a dry run only; give --metastore-uri or --embedded-metastore to write")

    create_database = create_table = alter_table = set_table_params = _refuse
    add_partitions = alter_partitions = drop_partitions = _refuse

    def close(self) -> None:
        pass
