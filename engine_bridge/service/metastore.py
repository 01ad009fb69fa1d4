"""A served table's Hive sync status: what the metastore holds against the
table, the drift a sync would mend, planned as `hudi-bridge sync --dry-run`
plans it. (Tables registered from a metastore database: `config.tables_of_database`.)"""

from __future__ import annotations

from typing import Any

from engine_bridge.service.config import HiveTarget
from engine_bridge.service.errors import ServiceError
from metadata import HudiTable
from metadata.errors import HudiBridgeError


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
