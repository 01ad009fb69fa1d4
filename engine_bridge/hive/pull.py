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
(created on the first pull), and the last instant pulled is kept in the
target's table property `hudi-bridge.pulled.through`: a rerun with an older
begin starts after it rather than appending the same rows again.

Everything is checked before connecting: one SELECT statement, the
placeholder found in the parsed query (not in a comment or a string), names
that can stand in a SET key.
"""

from __future__ import annotations

import logging
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
from hive_sync.names import check_hive_name, qualified, quote_literal
from metadata import HudiTable
from metadata.errors import HudiBridgeError
from metadata.timeline.instant import check_begin_instant

log = logging.getLogger(__name__)
PLACEHOLDER_VALUE = "%s"
COMMIT_TIME = "_hoodie_commit_time"
PULLED_THROUGH = "hudi-bridge.pulled.through"  # the target's table property: the last instant pulled into it
# What can stand in `SET hoodie.<table>.consume.*` (HiveQL cannot quote a SET key).
_SET_KEY_PART = re.compile(r"[A-Za-z0-9_.\-]+")


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


def parse_extract_sql(extract_sql: str) -> exp.Query:
    """The extract SQL as one query holding `_hoodie_commit_time > '%s'`."""
    try:
        statements = [s for s in sqlglot.parse(extract_sql, read="hive") if s is not None]
    except (sqlglot.ParseError, sqlglot.errors.TokenError) as exc:
        raise HivePullError(f"the extract SQL does not parse: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        kinds = ", ".join(type(s).__name__.upper() for s in statements) or "nothing"
        raise HivePullError(f"the extract SQL must be exactly one SELECT statement (found: {kinds})")
    query = statements[0]
    if not _placeholders(query):
        raise HivePullError(f"the extract SQL has no `{COMMIT_TIME} > '%s'` condition (outside comments and strings), "
                            "so it would not pull incrementally")
    return query


def _placeholders(query: exp.Expr) -> list[exp.Literal]:
    return [node.expression for node in query.find_all(exp.GT)
            if isinstance(node.this, exp.Column) and node.this.name.lower() == COMMIT_TIME
            and isinstance(node.expression, exp.Literal) and node.expression.is_string and node.expression.this == PLACEHOLDER_VALUE]


def _source_query(extract_sql: str, source_db: str, source_table: str) -> tuple[exp.Query, list[tuple[exp.Select, str | None]]]:
    """The extract SQL's query and its SELECTs that read the source table (at least one)."""
    tree = parse_extract_sql(extract_sql)
    selects = _source_selects(tree, source_db, source_table)
    if not selects:
        raise HivePullError(f"the extract SQL does not read {source_db}.{source_table}")
    return tree, selects


def consume_settings(table_name: str, begin: str, max_commits: int) -> list[str]:
    """Hudi's `SET hoodie.<table>.consume.*` statements, refusing a table name a SET key cannot hold."""
    if not _SET_KEY_PART.fullmatch(table_name):
        raise HivePullError(f"hoodie.table.name {table_name!r} cannot stand in a SET key (letters, digits, '_', '.', '-' only)")
    return [f"SET {name.format(table=table_name)}={value}"
            for name, value in ((CONSUME_MODE, "INCREMENTAL"), (START, begin), (MAX_COMMITS, str(max_commits)))]


def plan_pull(extract_sql: str, table: HudiTable, source_db: str, source_table: str, begin: str,
              max_commits: int = 1) -> HivePullPlan:
    """The extract SQL filled and restricted to the range after `begin`."""
    begin = check_begin_instant(begin)
    tree, selects = _source_query(extract_sql, source_db, source_table)
    for placeholder in _placeholders(tree):
        placeholder.replace(exp.Literal.string(begin))
    instants = consumed_instants(table, begin, max_commits)
    partitions = written_partitions(table, instants)
    files = newest_base_files_in_range(table, partitions, instants)
    names = sorted(s.base_file_name for s in files if s.base_file_name)
    for select, alias in selects:
        conditions: list[Any] = []
        if instants:
            kept = partition_condition(table, partitions, alias)
            if kept is not None:
                conditions.append(kept)
            last = instants[-1].requested_time
            conditions.append(exp.LTE(this=exp.column(COMMIT_TIME, table=alias), expression=exp.Literal.string(last)))
            conditions.append(exp.In(this=exp.column("_hoodie_file_name", table=alias), expressions=[exp.Literal.string(n) for n in names])
                              if names else exp.false())
        else:
            conditions.append(exp.false())  # nothing new: read nothing
        select.where(*conditions, append=True, copy=False)
    return HivePullPlan(tree.sql(dialect="hive"), tuple(i.requested_time for i in instants), tuple(partitions), tuple(names))


def _count(client: SqlClient, sql: str) -> int:
    rows = client.run("count", f"SELECT count(*) FROM ({sql}) pulled")
    return int(rows[0][0]) if rows else 0


def check_pull(extract_sql: str, source_db: str, source_table: str, target_db: str, target_table: str, begin: str,
               table_path: str | None) -> None:
    """What can be checked before connecting: names, the begin instant, the
    extract SQL, and (given its path) the table's name for the SET keys."""
    for name, what in ((source_db, "source database"), (source_table, "source table"), (target_db, "target database"),
                       (target_table, "target table")):
        check_hive_name(name, what)
    check_begin_instant(begin)
    _source_query(extract_sql, source_db, source_table)
    if table_path is not None:
        consume_settings(HudiTable.open(table_path).config.name, check_begin_instant(begin), 1)


def hive_pull(client: SqlClient, source_db: str, source_table: str, target_db: str, target_table: str, extract_sql: str,
              begin: str, max_commits: int = 1, table_path: str | None = None) -> HivePullResult:
    """Run the pull through `client` (HiveServer2); returns what was inserted.
    A target that was pulled through a later instant than `begin` continues from there."""
    registered = client.get_table(source_db, source_table)
    if registered is None and table_path is None:
        raise HivePullError(f"{source_db}.{source_table} is not in the metastore; pass the table path")
    path = table_path or (registered.location if registered is not None else "")
    table = HudiTable.open(path)
    begin = check_begin_instant(begin)
    existing = client.get_table(target_db, target_table) if client.database_exists(target_db) else None
    pulled_through = existing.params.get(PULLED_THROUGH, "") if existing is not None else ""
    if pulled_through > begin:
        log.warning("%s.%s was pulled through %s already: pulling after it, not after %s", target_db, target_table, pulled_through, begin)
        begin = pulled_through
    settings = consume_settings(table.config.name, begin, max_commits)
    planned = plan_pull(extract_sql, table, source_db, source_table, begin, max_commits)
    for statement in settings:
        client.run("set", statement)
    if not planned.instants:
        return HivePullResult(f"{source_db}.{source_table}", f"{target_db}.{target_table}", begin, (), (), 0, planned.sql)
    rows = _count(client, planned.sql)
    target = qualified(target_db, target_table)
    if not client.database_exists(target_db):
        client.create_database(target_db)
    if existing is None:
        client.run("create_target", f"CREATE TABLE {target} STORED AS PARQUET AS {planned.sql}")
    else:
        client.run("insert", f"INSERT INTO {target} {planned.sql}")
    client.run("checkpoint", f"ALTER TABLE {target} SET TBLPROPERTIES ({quote_literal(PULLED_THROUGH)}={quote_literal(planned.instants[-1])})")
    return HivePullResult(f"{source_db}.{source_table}", f"{target_db}.{target_table}", begin, planned.instants,
                          planned.partitions, rows, planned.sql)
