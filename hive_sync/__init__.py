"""Syncing Hudi tables into a Hive metastore.

`sync(table, client, SyncOptions(database=...))` plans with `plan_sync` and
applies with `apply_sync`; `open_client(mode, ...)` gives the executor
(`hms`, `hiveql`, `spark`); `EmbeddedMetastore` starts a local metastore.
"""

from hive_sync.client import MetastoreClient
from hive_sync.connect import SyncMode, open_client
from hive_sync.embedded import EmbeddedMetastore
from hive_sync.errors import SchemaEvolutionError, SyncError
from hive_sync.sync import SyncPlan, SyncResult, TablePlan, apply_sync, plan_sync, sync
from hive_sync.target import SyncOptions

__all__ = [
    "EmbeddedMetastore",
    "MetastoreClient",
    "SchemaEvolutionError",
    "SyncError",
    "SyncMode",
    "SyncOptions",
    "SyncPlan",
    "SyncResult",
    "TablePlan",
    "apply_sync",
    "open_client",
    "plan_sync",
    "sync",
]
