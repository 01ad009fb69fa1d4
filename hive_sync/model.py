"""What a sync wants a Hive table to be, and what a metastore holds.

Executors translate these into Thrift structures (`hms`) or quoted HiveQL
(`hiveql`, `spark`); the planner only compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hive_sync.schema import HiveColumn

HOODIE_INPUT_FORMAT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
HOODIE_REALTIME_INPUT_FORMAT = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
PARQUET_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"

# The last-synced marker: moved only after every partition change landed.
LAST_COMMIT_TIME_SYNC = "last_commit_time_sync"
LAST_COMMIT_COMPLETION_TIME_SYNC = "last_commit_completion_time_sync"
MARKER_KEYS = (LAST_COMMIT_TIME_SYNC, LAST_COMMIT_COMPLETION_TIME_SYNC)

PartitionValues = tuple[str, ...]


@dataclass(frozen=True)
class TableDefinition:
    """One Hive table as the sync wants it (marker parameters excluded)."""

    database: str
    name: str
    columns: tuple[HiveColumn, ...]
    partition_columns: tuple[HiveColumn, ...]
    location: str
    input_format: str
    output_format: str = PARQUET_OUTPUT_FORMAT
    serde: str = PARQUET_SERDE
    serde_params: dict[str, str] = field(default_factory=dict)
    table_params: dict[str, str] = field(default_factory=dict)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class RegisteredTable:
    """What the metastore holds for a table."""

    columns: tuple[HiveColumn, ...]
    partition_columns: tuple[HiveColumn, ...]
    location: str
    params: dict[str, str]
    serde_params: dict[str, str] = field(default_factory=dict)
    input_format: str = ""

    @property
    def last_synced(self) -> str | None:
        return self.params.get(LAST_COMMIT_TIME_SYNC) or None

    @property
    def last_synced_completion(self) -> str | None:
        return self.params.get(LAST_COMMIT_COMPLETION_TIME_SYNC) or None


@dataclass(frozen=True)
class HivePartition:
    values: PartitionValues
    location: str
