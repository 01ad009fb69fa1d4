"""The service's side of a Hive metastore: tables registered from a
database (every Hudi table there, by its Hive name), and a table's sync
status (what the metastore holds against the table: the drift a sync would
mend, planned as `hudi-bridge sync --dry-run` plans it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine_bridge.service.config import HiveTarget, ServiceConfigError, TableEntry
from engine_bridge.service.errors import ServiceError
from metadata import HudiTable
from metadata.errors import HudiBridgeError

HUDI_INPUT_FORMATS = ("org.apache.hudi.hadoop.HoodieParquetInputFormat", "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat",
                      "org.apache.hudi.hadoop.HoodieParquetInputFormatBase", "com.uber.hoodie.hadoop.HoodieInputFormat")


def is_hudi(params: Mapping[str, str], input_format: str) -> bool:
    return input_format in HUDI_INPUT_FORMATS or params.get("spark.sql.sources.provider", "").lower() == "hudi"


def tables_of_database(metastore: str, database: str) -> list[TableEntry]:
    """Every Hudi table of `database`, named `database.table`; a table's `_ro`/`_rt` pair is served once (by the
    name without the suffix when there is one, else `_rt`'s)."""
    from hive_sync.hms import HmsClient

    try:
        with HmsClient(metastore) as client:
            found: dict[str, str] = {}
            for name in client.list_tables(database):
                registered = client.get_table(database, name)
                if registered is None or not registered.location or not is_hudi(registered.params, registered.input_format):
                    continue
                held = found.get(registered.location)
                if held is None or _preferred(name, held):
                    found[registered.location] = name
    except HudiBridgeError as exc:
        raise ServiceConfigError(f"tables of {database} in {metastore}: {exc}") from None
    return [TableEntry(f"{database}.{name}", location, hive=HiveTarget(metastore, database, _base_name(name)))
            for location, name in sorted(found.items(), key=lambda item: item[1])]


def _base_name(name: str) -> str:
    return name[:-3] if name.endswith(("_ro", "_rt")) else name


def _rank(name: str) -> int:
    return 0 if not name.endswith(("_ro", "_rt")) else 1 if name.endswith("_rt") else 2


def _preferred(name: str, held: str) -> bool:
    return _rank(name) < _rank(held)


def sync_status(table: HudiTable, target: HiveTarget) -> dict[str, Any]:
    """What the metastore holds against the table: the sync a `hudi-bridge sync` would make now (nothing: in sync)."""
    from hive_sync import SyncOptions, plan_sync
    from hive_sync.hms import HmsClient

    try:
        with HmsClient(target.metastore) as client:
            planned = plan_sync(table, client, SyncOptions(target.database, target.table, create_database=False,
                                                           skip_ro_suffix=target.skip_ro_suffix))
            synced = {}
            for table_plan in planned.tables:
                definition = table_plan.definition
                registered = client.get_table(definition.database, definition.name)
                synced[definition.qualified_name] = None if registered is None else registered.last_synced
    except HudiBridgeError as exc:
        raise ServiceError.refused(exc) from None
    tables = [t.to_dict() for t in planned.tables]
    drift = sum(len(p) for t in tables for p in t["partitions"].values()) + sum(len(t["added_columns"]) + len(t["changed_columns"]) for t in tables)
    latest = table.timeline.latest_completed()
    return {"metastore": target.metastore, "database": target.database, "in_sync": planned.is_noop,
            "latest_completed": latest.requested_time if latest else None, "last_synced": synced,
            "partition_and_column_changes": drift, "tables": tables}
