"""One client for a sync, chosen by mode: `hms`, `hiveql` or `spark`."""

from __future__ import annotations

from typing import Any

from hive_sync.client import MetastoreClient
from hive_sync.errors import SyncError
from hive_sync.hiveql import hiveserver2_client, spark_session_client
from hive_sync.hms import HmsClient
from metadata.util.text_enum import TextEnum


class SyncMode(TextEnum):
    HMS = "hms"  # the metastore's Thrift API
    HIVEQL = "hiveql"  # HiveQL statements through a HiveServer2
    SPARK = "spark"  # HiveQL statements through a SparkSession


def open_client(mode: SyncMode | str, metastore_uri: str | None = None, hiveserver2: str | None = None, spark: Any = None) -> MetastoreClient:
    """`hms` needs the metastore URI; `hiveql` a HiveServer2 address (plus the
    URI to carry the Spark DataSource properties); `spark` a SparkSession."""
    try:
        mode = SyncMode(mode)
    except ValueError:
        raise SyncError(f"unknown sync mode {mode!r}; expected one of {', '.join(SyncMode.values())}") from None
    if mode is SyncMode.HMS:
        if not metastore_uri:
            raise SyncError("mode hms needs a metastore URI (thrift://host:port) or an embedded metastore")
        return HmsClient(metastore_uri)
    if mode is SyncMode.HIVEQL:
        if not hiveserver2:
            raise SyncError("mode hiveql needs a HiveServer2 address (host:port)")
        return hiveserver2_client(hiveserver2, HmsClient(metastore_uri) if metastore_uri else None)
    if spark is None:
        raise SyncError("mode spark needs a SparkSession")
    return spark_session_client(spark, HmsClient(metastore_uri) if metastore_uri else None)
