"""The `hiveql` and `spark` executors: quoted HiveQL statements.

`SqlClient` runs statements through any `execute(sql) -> rows` function: a
pyhive cursor on a HiveServer2 (`hiveql`) or `SparkSession.sql` (`spark`).
Identifiers are backtick-quoted and literals single-quoted with escapes
(`hive_sync.names`), so hostile names and values are stored verbatim and
nothing a user names can end a statement.

Spark SQL (its Thrift server and SparkSession) refuses `spark.sql.*` table
properties and the `EXTERNAL` property in DDL. When a metastore client is
given, table-level writes and reads go through the metastore's Thrift API
(which accepts them) and only partition statements go through SQL; without
one, the client says it cannot carry the DataSource properties and the
planner stops with a message naming the way that works.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from hive_sync.client import MetastoreClient
from hive_sync.errors import SyncError
from hive_sync.model import HivePartition, PartitionValues, RegisteredTable, TableDefinition
from hive_sync.names import partition_spec, qualified, quote_identifier, quote_literal
from hive_sync.schema import HiveColumn
from metadata.table.partition_path import unescape_path_name

log = logging.getLogger(__name__)

Rows = list[tuple[Any, ...]]
Execute = Callable[[str], Rows]
SPARK_ONLY_PREFIX = "spark.sql."
# Set by the EXTERNAL keyword; Spark refuses it as a property.
RESERVED_PROPERTIES = frozenset({"EXTERNAL"})


def _server_message(exc: Exception) -> str:
    """The server's own words from a pyhive/py4j error, not the Thrift dump."""
    text = str(exc)
    match = re.search(r"errorMessage=['\"](.*?)['\"]\)", text, re.S) or re.search(r"HiveSQLException:(.*?)['\"],", text, re.S)
    message = (match.group(1) if match else text).strip()
    return message.splitlines()[0][:500] if message else type(exc).__name__


def _whole_text(exc: BaseException) -> str:
    """An error's text with its causes' (py4j keeps the Java cause chain in the text)."""
    texts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


def _properties(params: dict[str, str]) -> str:
    return ", ".join(f"{quote_literal(k)}={quote_literal(v)}" for k, v in sorted(params.items()))


def _column_list(columns: Sequence[HiveColumn]) -> str:
    return ", ".join(f"{quote_identifier(c.name)} {c.type}" for c in columns)


class SqlClient:
    """A metastore reached through HiveQL statements."""

    def __init__(
        self,
        execute: Execute,
        where: str,
        metastore: MetastoreClient | None = None,
        spark_sql: bool | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._execute = execute
        self.where = where
        self.metastore = metastore
        self._on_close = on_close
        self._statements: Counter[str] = Counter()
        self.spark_sql = self._detect_spark() if spark_sql is None else spark_sql
        # Through the metastore the DataSource properties can be set; through
        # Spark SQL they cannot.
        self.accepts_spark_properties = metastore is not None or not self.spark_sql

    # Plumbing --------------------------------------------------------------------------
    @property
    def calls(self) -> Counter[str]:
        """Statements run plus calls made through the metastore client."""
        return self._statements + (self.metastore.calls if self.metastore is not None else Counter())

    def run(self, kind: str, sql: str) -> Rows:
        self._statements[kind] += 1
        log.debug("%s: %s", self.where, sql)
        try:
            return self._execute(sql)
        except Exception as exc:  # pyhive and py4j raise their own types
            message = _server_message(exc)
            whole = _whole_text(exc)  # the first line of a Spark error rarely names its cause
            missing = re.search(r"ClassNotFoundException:?\s*([\w.$]+)", whole)
            if missing and missing.group(1) not in message:
                message += f" (caused by ClassNotFoundException: {missing.group(1)})"
            if "org.apache.hudi" in whole or "DATA_SOURCE_NOT_FOUND" in whole:
                message += " (the server lacks Hudi's jars: put Hudi's Hive/Spark bundle on its classpath, or sync with --mode hms)"
            raise SyncError(f"{self.where} refused {kind} ({sql[:200]}{'...' if len(sql) > 200 else ''}): {message}") from exc

    def _detect_spark(self) -> bool:
        """Spark SQL answers `SET key` with (key, value); Hive says 'undefined'."""
        rows = self.run("detect_dialect", "SET spark.sql.ansi.enabled")
        return bool(rows) and len(rows[0]) == 2 and rows[0][0] == "spark.sql.ansi.enabled"

    def describe(self) -> str:
        return self.where

    def close(self) -> None:
        if self.metastore is not None:
            self.metastore.close()
        if self._on_close is not None:
            self._on_close()

    # Databases and tables ----------------------------------------------------------------
    def database_exists(self, database: str) -> bool:
        if self.metastore is not None:
            return self.metastore.database_exists(database)
        rows = self.run("show_databases", "SHOW DATABASES")
        return any(row[0] == database for row in rows)

    def create_database(self, database: str) -> None:
        self.run("create_database", f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")

    def get_table(self, database: str, name: str) -> RegisteredTable | None:
        if self.metastore is not None:
            return self.metastore.get_table(database, name)
        rows = self.run("show_tables", f"SHOW TABLES IN {quote_identifier(database)}")
        # Spark answers (database, table, isTemporary); Hive answers (table,).
        if not any((row[1] if len(row) > 2 else row[0]) == name for row in rows):
            return None
        target = qualified(database, name)
        columns, partition_columns = self._describe_columns(self.run("describe", f"DESCRIBE {target}"))
        params, serde_params = {}, {}
        for key, value in self.run("show_properties", f"SHOW TBLPROPERTIES {target}"):
            if key.startswith("option."):  # Spark shows storage properties this way
                serde_params[key[len("option."):]] = value
            else:
                params[key] = value
        details = self._formatted(self.run("describe_formatted", f"DESCRIBE FORMATTED {target}"))
        if details.get("type", details.get("tabletype", "")).upper() in ("EXTERNAL", "EXTERNAL_TABLE"):
            params.setdefault("EXTERNAL", "TRUE")  # Spark shows it as the table type only
        return RegisteredTable(
            columns=columns,
            partition_columns=partition_columns,
            location=details.get("location", ""),
            params=params,
            serde_params=serde_params,
            input_format=details.get("inputformat", ""),
        )

    @staticmethod
    def _describe_columns(rows: Rows) -> tuple[tuple[HiveColumn, ...], tuple[HiveColumn, ...]]:
        data: list[HiveColumn] = []
        partitions: list[HiveColumn] = []
        section = data
        for row in rows:
            name = (row[0] or "").strip()
            if name == "# Partition Information":
                section = partitions
                continue
            if not name or name.startswith("#"):
                continue
            section.append(HiveColumn(name, (row[1] or "").strip(), (row[2] or "") if len(row) > 2 else ""))
        # DESCRIBE lists partition columns with the data columns as well.
        partition_names = {c.name for c in partitions}
        return tuple(c for c in data if c.name not in partition_names), tuple(partitions)

    @staticmethod
    def _formatted(rows: Rows) -> dict[str, str]:
        """`Location`, `InputFormat`... from DESCRIBE FORMATTED (Spark or Hive)."""
        details: dict[str, str] = {}
        for row in rows:
            label = (row[0] or "").strip().rstrip(":").replace(" ", "").lower()
            value = (row[1] or "").strip() if len(row) > 1 else ""
            if label in ("location", "inputformat", "type", "tabletype") and label not in details:
                details[label] = value
        return details

    def _writable_params(self, params: dict[str, str]) -> dict[str, str]:
        kept = {k: v for k, v in params.items() if k not in RESERVED_PROPERTIES}
        if self.spark_sql:
            refused = sorted(k for k in kept if k.startswith(SPARK_ONLY_PREFIX))
            if refused:
                raise SyncError(f"{self.where} refuses table properties {', '.join(refused)}; give the metastore URI to set them")
        return kept

    def create_table(self, table: TableDefinition) -> None:
        if self.metastore is not None:
            self.metastore.create_table(table)
            return
        partitioned = f" PARTITIONED BY ({_column_list(table.partition_columns)})" if table.partition_columns else ""
        params = self._writable_params(table.table_params)
        properties = f" TBLPROPERTIES ({_properties(params)})" if params else ""
        self.run(
            "create_table",
            f"CREATE EXTERNAL TABLE IF NOT EXISTS {qualified(table.database, table.name)} ({_column_list(table.columns)})"
            f"{partitioned} ROW FORMAT SERDE {quote_literal(table.serde)} WITH SERDEPROPERTIES ({_properties(table.serde_params)})"
            f" STORED AS INPUTFORMAT {quote_literal(table.input_format)} OUTPUTFORMAT {quote_literal(table.output_format)}"
            f" LOCATION {quote_literal(table.location)}{properties}",
        )

    def alter_table(self, table: TableDefinition, params: dict[str, str], cascade: bool) -> None:
        if self.metastore is not None:
            self.metastore.alter_table(table, params, cascade)
            return
        current = self.get_table(table.database, table.name)
        if current is None:
            raise SyncError(f"{self.where}: table {table.qualified_name} disappeared during the sync")
        target = qualified(table.database, table.name)
        suffix = " CASCADE" if cascade and not self.spark_sql else ""
        have = {c.name.lower(): c for c in current.columns}
        added = [c for c in table.columns if c.name.lower() not in have]
        if added:
            self.run("add_columns", f"ALTER TABLE {target} ADD COLUMNS ({_column_list(added)}){suffix}")
        for column in table.columns:
            old = have.get(column.name.lower())
            if old is not None and old.type.lower() != column.type.lower():
                name = quote_identifier(column.name)
                self.run("change_column", f"ALTER TABLE {target} CHANGE COLUMN {name} {name} {column.type}{suffix}")
        self.run("set_serde_properties", f"ALTER TABLE {target} SET SERDEPROPERTIES ({_properties(table.serde_params)})")
        self.run("set_location", f"ALTER TABLE {target} SET LOCATION {quote_literal(table.location)}")
        writable = self._writable_params(params)
        if writable:
            self.set_table_params(table.database, table.name, writable)

    def set_table_params(self, database: str, name: str, params: dict[str, str]) -> None:
        if self.metastore is not None:
            self.metastore.set_table_params(database, name, params)
            return
        self.run("set_properties", f"ALTER TABLE {qualified(database, name)} SET TBLPROPERTIES ({_properties(params)})")

    # Partitions -----------------------------------------------------------------------------
    def list_partitions(self, database: str, name: str) -> dict[PartitionValues, str]:
        """Values of every partition; SHOW PARTITIONS gives no locations."""
        rows = self.run("show_partitions", f"SHOW PARTITIONS {qualified(database, name)}")
        return {tuple(unescape_path_name(seg.partition("=")[2]) for seg in row[0].split("/")): "" for row in rows}

    def get_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> dict[PartitionValues, str]:
        registered = self.list_partitions(table.database, table.name)
        return {v: registered[v] for v in values if v in registered}

    def _keys(self, table: TableDefinition) -> list[str]:
        return [c.name for c in table.partition_columns]

    def add_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None:
        keys = self._keys(table)
        specs = " ".join(f"{partition_spec(keys, p.values)} LOCATION {quote_literal(p.location)}" for p in partitions)
        self.run("add_partitions", f"ALTER TABLE {qualified(table.database, table.name)} ADD IF NOT EXISTS {specs}")

    def alter_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None:
        keys = self._keys(table)
        for p in partitions:  # HiveQL has no batch form of SET LOCATION
            self.run(
                "set_partition_location",
                f"ALTER TABLE {qualified(table.database, table.name)} {partition_spec(keys, p.values)} SET LOCATION {quote_literal(p.location)}",
            )

    def drop_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> None:
        keys = self._keys(table)
        specs = ", ".join(partition_spec(keys, v) for v in values)
        self.run("drop_partitions", f"ALTER TABLE {qualified(table.database, table.name)} DROP IF EXISTS {specs}")


def hiveserver2_client(address: str, metastore: MetastoreClient | None = None, username: str = "hudi-bridge") -> SqlClient:
    """A SqlClient over pyhive to `host:port` (port 10000 when absent)."""
    from pyhive import hive

    host, _, port_text = address.rpartition(":") if ":" in address else (address, "", "10000")
    try:
        port = int(port_text)
    except ValueError:
        raise SyncError(f"HiveServer2 address {address!r} is not host:port") from None
    try:
        connection = hive.connect(host=host, port=port, username=username)
    except Exception as exc:
        raise SyncError(f"cannot connect to HiveServer2 {address}: {_server_message(exc)}") from exc
    cursor = connection.cursor()

    def execute(sql: str) -> Rows:
        cursor.execute(sql)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []

    return SqlClient(execute, f"HiveServer2 {address}", metastore, on_close=connection.close)


def spark_session_client(spark: Any, metastore: MetastoreClient | None = None) -> SqlClient:
    """A SqlClient over `spark.sql`; with the session's own metastore URI
    (hive.metastore.uris) used for table-level writes when none is given."""
    if metastore is None:
        uris = spark.sparkContext._jsc.hadoopConfiguration().get("hive.metastore.uris")
        if uris:
            from hive_sync.hms import HmsClient

            metastore = HmsClient(uris.split(",")[0])

    def execute(sql: str) -> Rows:
        return [tuple(row) for row in spark.sql(sql).collect()]

    return SqlClient(execute, "SparkSession", metastore, spark_sql=True)
