"""Catalog tables through the `hudi` source.

Spark hands a Python data source no options for a catalog table, not even
its path, so the location is looked up here, on the driver, and passed on.
A table synced as `<name>_ro` (serde `hoodie.query.as.ro.table=true`) is
read read-optimized, as Hudi's own source reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine_bridge.spark.options import PATH, QUERY_TYPE, QueryType
from engine_bridge.spark.register import source_name
from metadata.errors import HudiBridgeError
from metadata.storage.paths import hadoop_local_path

RO_TABLE = "hoodie.query.as.ro.table"


class CatalogTableError(HudiBridgeError):
    """A catalog table that is not a Hudi table, or has no location."""


@dataclass(frozen=True)
class HudiCatalogTable:
    database: str
    name: str
    path: str
    options: dict[str, str]


def _scala_map(m: Any) -> dict[str, str]:
    found = {}
    iterator = m.iterator()
    while iterator.hasNext():
        entry = iterator.next()
        found[str(entry._1())] = str(entry._2())
    return found


def describe(spark: Any, name: str) -> HudiCatalogTable:
    """Where a catalog table lives and the read options it implies."""
    database, _, table = name.rpartition(".")
    database = database or spark.catalog.currentDatabase()
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    if not catalog.tableExists(database, table):
        raise CatalogTableError(f"table {database}.{table} does not exist")
    entry = catalog.getTable(database, table)
    provider = entry.provider().get() if entry.provider().isDefined() else ""
    if str(provider).lower() not in ("hudi", "org.apache.hudi"):
        raise CatalogTableError(f"{database}.{table} is a {provider or 'Hive'} table, not a Hudi table")
    serde = _scala_map(entry.storage().properties())
    location = serde.get(PATH)
    if not location and entry.storage().locationUri().isDefined():
        location = str(entry.storage().locationUri().get().toString())
    if not location:
        raise CatalogTableError(f"{database}.{table} has no location")
    options = {k: v for k, v in serde.items() if k.startswith("hoodie.") and k != RO_TABLE}
    if serde.get(RO_TABLE, "false").lower() == "true":
        options[QUERY_TYPE] = str(QueryType.READ_OPTIMIZED)
    return HudiCatalogTable(database, table, hadoop_local_path(location), options)


def table(spark: Any, name: str, **options: str) -> Any:
    """A catalog Hudi table (`db.table` or `table`) as a DataFrame read by the
    `hudi` source; `options` override the table's own."""
    found = describe(spark, name)
    return spark.read.format(source_name(spark)).options(**{**found.options, **options}).load(found.path)


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def register_views(spark: Any, database: str) -> list[str]:
    """A temporary view `USING hudi OPTIONS (path ...)` for every Hudi table
    of `database`, named as the table; returns the view names."""
    source = source_name(spark)
    views = []
    for entry in spark.catalog.listTables(database):
        if entry.isTemporary:
            continue
        try:
            found = describe(spark, f"{database}.{entry.name}")
        except CatalogTableError:
            continue
        settings = ", ".join(f"`{k}` {_sql_text(v)}" for k, v in sorted({**found.options, PATH: found.path}.items()))
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{entry.name}` USING {source} OPTIONS ({settings})")
        views.append(entry.name)
    return views
