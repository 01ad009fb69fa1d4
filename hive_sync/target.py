"""Which Hive tables a Hudi table becomes, and what each should hold.

COW: one table. MOR: `<t>_ro` (read optimized, base files only) and `<t>_rt`
(real time, base plus logs), as Hudi's HiveSyncTool registers them. Each is
an external Parquet table with Hudi's input format, the serde parameters
Hudi's readers look for, and the Spark DataSource properties so Spark plans
it through Hudi's file index.
"""

from __future__ import annotations

from dataclasses import dataclass

from hive_sync.errors import SyncError
from hive_sync.model import (
    HOODIE_INPUT_FORMAT,
    HOODIE_REALTIME_INPUT_FORMAT,
    LAST_COMMIT_COMPLETION_TIME_SYNC,
    LAST_COMMIT_TIME_SYNC,
    TableDefinition,
)
from hive_sync.names import check_hive_name
from hive_sync.partition_events import table_location
from hive_sync.schema import hive_columns, spark_table_properties
from metadata import HudiTable
from metadata.errors import HudiError

DEFAULT_BATCH_SIZE = 1000
QUERY_AS_RO_TABLE = "hoodie.query.as.ro.table"


@dataclass(frozen=True)
class SyncOptions:
    database: str
    table: str | None = None  # default: hoodie.table.name
    create_database: bool = True
    batch_size: int = DEFAULT_BATCH_SIZE  # partitions per metastore call
    support_timestamp: bool = False  # timestamps as TIMESTAMP, not bigint
    skip_ro_suffix: bool = False  # MOR: read-optimized table named <t>, not <t>_ro
    datasource_properties: bool = True  # register as a Spark DataSource table
    full: bool = False  # compare every partition, whatever the marker says

    def __post_init__(self) -> None:
        if not self.database:
            raise SyncError("a sync needs a database name")
        check_hive_name(self.database, "database")  # before any metastore is started or called
        if self.table:
            check_hive_name(self.table, "table")
        if self.batch_size < 1:
            raise SyncError(f"batch size must be at least 1, not {self.batch_size}")


def table_definitions(table: HudiTable, options: SyncOptions) -> list[TableDefinition]:
    """The Hive tables to register, without the last-synced marker."""
    base_name = options.table or table.name
    if not base_name:
        raise SyncError(f"{table.base_uri}: hoodie.table.name is empty; name the Hive table")
    check_hive_name(options.database, "database")
    check_hive_name(base_name, "table")
    if not table.config.base_file_format.has_parquet_footers:
        raise SyncError(f"{table.base_uri}: its base files are {table.config.base_file_format.value}, which Hive's Hudi input formats "
                        "(HoodieParquetInputFormat) do not read; nothing is registered")
    try:
        avro = table.avro_schema()
    except HudiError as exc:
        raise SyncError(f"cannot sync {table.base_uri}: {exc}") from exc
    config = table.config
    data, partitions = hive_columns(avro, config.partition_fields, options.support_timestamp)
    common_params = {"EXTERNAL": "TRUE"}
    if options.datasource_properties:
        common_params.update(spark_table_properties(avro, config.partition_fields))
        if config.is_partitioned:
            # Spark tracks the partitions in the catalog (SHOW PARTITIONS, ALTER
            # TABLE ... PARTITION work), as Hudi's own CREATE TABLE registers them.
            common_params["spark.sql.partitionProvider"] = "catalog"
    if config.is_mor:
        variants = [
            (base_name if options.skip_ro_suffix else f"{base_name}_ro", True, HOODIE_INPUT_FORMAT),
            (f"{base_name}_rt", False, HOODIE_REALTIME_INPUT_FORMAT),
        ]
    else:
        variants = [(base_name, False, HOODIE_INPUT_FORMAT)]
    return [
        TableDefinition(
            database=options.database,
            name=name,
            columns=tuple(data),
            partition_columns=tuple(partitions),
            location=table_location(table),
            input_format=input_format,
            serde_params={"path": table_location(table), QUERY_AS_RO_TABLE: str(read_optimized).lower(), "serialization.format": "1"},
            table_params=dict(common_params),
        )
        for name, read_optimized, input_format in variants
    ]


def sync_marker(table: HudiTable) -> dict[str, str]:
    """The marker parameters: how far the metastore is known to be in step.

    v8+: the commit that completed last (completion times only grow, so a
    later sync looks at instants completed after it, whatever their
    requested times). v6 knows requested times only: a write still pending
    when this sync ran may complete later with an older requested time, so
    the marker stops at the last commit requested before the earliest
    pending write (no marker at all means a full diff next time)."""
    timeline = table.timeline
    commits = timeline.commits()
    if timeline.uses_completion_time:
        done = [i for i in commits if i.completion_time]
        if not done:
            return {}
        latest = max(done, key=lambda i: i.completion_time or "")
        return {LAST_COMMIT_TIME_SYNC: latest.requested_time, LAST_COMMIT_COMPLETION_TIME_SYNC: latest.completion_time or ""}
    pending_writes = [i.requested_time for i in timeline.pending() if i.action.writes_data]
    horizon = min(pending_writes, default=None)
    safe = [i for i in commits if horizon is None or i.requested_time < horizon]
    return {LAST_COMMIT_TIME_SYNC: safe[-1].requested_time} if safe else {}
