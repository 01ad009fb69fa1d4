"""RFC-04's incremental pull through HiveServer2 (Hudi's `HiveIncrementalPuller`).

The user's extract SQL reads the source table with the clause
`_hoodie_commit_time > '%s'`; the puller fills it with the begin instant,
sets Hudi's consume keys in the session, and restricts the read of the
source table to what the range wrote: the partitions its commits touched,
the commit-time range, and the rows of the newest base file each file group
got in range (`_hoodie_file_name`). The last two matter on servers that read
the table as plain Parquet (Spark's Thrift server cannot load Hudi's input
format): there every file version of a partition is visible, and only these
conditions keep each row once. The result is inserted into the target table
(created on the first pull).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from engine_bridge.hive.list_status import (
    CONSUME_MODE,
    MAX_COMMITS,
    START,
    consumed_instants,
    newest_base_files_in_range,
    written_partitions,
)
from engine_bridge.sql_conditions import partition_condition
from hive_sync.hiveql import SqlClient
from hive_sync.names import qualified
from metadata import HudiTable
from metadata.errors import HudiBridgeError
from metadata.instant import check_begin_instant

PLACEHOLDER = re.compile(r"`?_hoodie_commit_time`?\s*>\s*'%s'", re.IGNORECASE)


class HivePullError(HudiBridgeError, ValueError):
    """An extract SQL or a source table the pull cannot work with."""


@dataclass(frozen=True)
class HivePullPlan:
    sql: str
    instants: tuple[str, ...]
    partitions: tuple[str, ...]
    files: tuple[str, ...]


@dataclass(frozen=True)
class HivePullResult:
    source: str
    target: str
    begin: str
    instants: tuple[str, ...]
    partitions: tuple[str, ...]
    rows: int
    sql: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _source_selects(tree: Any, database: str, table: str) -> list[tuple[exp.Select, str | None]]:
    found = []
    for select in tree.find_all(exp.Select):
        source = select.args.get("from") or select.args.get("from_")
        if source is None:
            continue
        for node in source.find_all(exp.Table):
            if node.name.lower() == table.lower() and (node.db or database).lower() == database.lower():
                found.append((select, node.alias or None))
    return found


def plan_pull(extract_sql: str, table: HudiTable, source_db: str, source_table: str, begin: str,
              max_commits: int = 1) -> HivePullPlan:
    """The extract SQL filled and restricted to the range after `begin`."""
    begin = check_begin_instant(begin)
    if not PLACEHOLDER.search(extract_sql):
        raise HivePullError("the extract SQL has no `_hoodie_commit_time > '%s'` clause, so it would not pull incrementally")
    instants = consumed_instants(table, begin, max_commits)
    filled = PLACEHOLDER.sub(f"`_hoodie_commit_time` > '{begin}'", extract_sql)
    try:
        tree = sqlglot.parse_one(filled, read="hive")
    except sqlglot.ParseError as exc:
        raise HivePullError(f"the extract SQL does not parse: {exc}") from None
    selects = _source_selects(tree, source_db, source_table)
    if not selects:
        raise HivePullError(f"the extract SQL does not read {source_db}.{source_table}")
    partitions = written_partitions(table, instants)
    files = newest_base_files_in_range(table.view(), partitions, {i.requested_time for i in instants})
    names = sorted(s.base_file_name for s in files if s.base_file_name)
    for select, alias in selects:
        conditions: list[Any] = []
        if instants:
            kept = partition_condition(table, partitions, alias)
            if kept is not None:
                conditions.append(kept)
            last = instants[-1].requested_time
            conditions.append(exp.LTE(this=exp.column("_hoodie_commit_time", table=alias), expression=exp.Literal.string(last)))
            conditions.append(exp.In(this=exp.column("_hoodie_file_name", table=alias), expressions=[exp.Literal.string(n) for n in names])
                              if names else exp.false())
        else:
            conditions.append(exp.false())  # nothing new: read nothing
        select.where(*conditions, append=True, copy=False)
    return HivePullPlan(tree.sql(dialect="hive"), tuple(i.requested_time for i in instants), tuple(partitions), tuple(names))


def _count(client: SqlClient, sql: str) -> int:
    rows = client.run("count", f"SELECT count(*) FROM ({sql}) pulled")
    return int(rows[0][0]) if rows else 0


def hive_pull(client: SqlClient, source_db: str, source_table: str, target_db: str, target_table: str, extract_sql: str,
              begin: str, max_commits: int = 1, table_path: str | None = None) -> HivePullResult:
    """Run the pull through `client` (HiveServer2); returns what was inserted."""
    registered = client.get_table(source_db, source_table)
    if registered is None and table_path is None:
        raise HivePullError(f"{source_db}.{source_table} is not in the metastore; pass the table path")
    path = table_path or (registered.location if registered is not None else "")
    table = HudiTable.open(path)
    planned = plan_pull(extract_sql, table, source_db, source_table, begin, max_commits)
    key = table.config.name
    for name, value in ((CONSUME_MODE, "INCREMENTAL"), (START, begin), (MAX_COMMITS, str(max_commits))):
        client.run("set", f"SET {name.format(table=key)}={value}")
    rows = _count(client, planned.sql)
    target = qualified(target_db, target_table)
    if not client.database_exists(target_db):
        client.create_database(target_db)
    if client.get_table(target_db, target_table) is None:
        client.run("create_target", f"CREATE TABLE {target} STORED AS PARQUET AS {planned.sql}")
    else:
        client.run("insert", f"INSERT INTO {target} {planned.sql}")
    return HivePullResult(f"{source_db}.{source_table}", f"{target_db}.{target_table}", begin, planned.instants,
                          planned.partitions, rows, planned.sql)
