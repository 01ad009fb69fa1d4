"""Candidate files handed to Presto/Trino: a `SELECT` on a Hudi table
rewritten with the partitions the plan kept and `"$path" IN (...)`.

Presto's Hive connector, and Trino's before version 411, read a Hudi table
registered in the metastore as Parquet and drop, at split generation, every
file whose `$path` is not in the set, so the query reads only the latest
base files that may match (read-optimized on MOR). Trino 411 and later
refuse Hudi tables in the Hive connector; its Hudi connector plans with the
metadata table itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from engine_bridge.sql_conditions import partition_condition
from expressions import Dialect, ExpressionError, SqlSyntaxError
from listers import DirectoryLister, incremental, plan
from metadata import FileSlice, HudiTable
from metadata.errors import HudiBridgeError, HudiError
from metadata.storage.paths import hadoop_uri, join

PATH_COLUMN = "$path"


class RewriteError(HudiBridgeError, ValueError):
    """A query the rewrite cannot take (not one SELECT over one table)."""


@dataclass(frozen=True)
class CandidateQuery:
    sql: str
    files: tuple[str, ...]
    partitions: tuple[str, ...]
    explanation: str


def _single_table(select: exp.Select, sql: str) -> exp.Table:
    source = select.args.get("from") or select.args.get("from_")
    tables = list(source.find_all(exp.Table)) if source is not None else []
    if len(tables) != 1 or select.args.get("joins"):
        raise RewriteError(f"expected a SELECT from one Hudi table: {sql}")
    if source is None or not isinstance(source.this, exp.Table):  # "$path" belongs to the scan of the table, not to a subquery over it
        raise RewriteError("the FROM clause holds a subquery: give the SELECT over the Hudi table itself (the innermost query)")
    return tables[0]


def _unqualified(where: Any, alias: str) -> Any:
    def strip(node: Any) -> Any:
        if isinstance(node, exp.Column) and node.table == alias:
            return exp.column(node.name, quoted=node.this.quoted if isinstance(node.this, exp.Identifier) else False)
        return node
    return where.copy().transform(strip)


def candidate_query(sql: str, table_path: str, dialect: Dialect | str = Dialect.TRINO, begin: str | None = None, end: str | None = None,
                    as_of: str | None = None) -> CandidateQuery:
    """`sql` with the plan's partitions and candidate base files added (and,
    with `begin`, the `_hoodie_commit_time` range of an incremental pull).
    `table_path` is the table's location as the engine sees it."""
    dialect = Dialect.of(dialect)
    try:
        statement = sqlglot.parse_one(sql, read=dialect.value)
    except sqlglot.ParseError as exc:
        raise RewriteError(f"cannot parse the query: {exc}") from None
    except sqlglot.errors.TokenError as exc:
        raise RewriteError(f"cannot read the query's text ({dialect}): {str(exc).splitlines()[0]}") from None
    if not isinstance(statement, exp.Select):
        raise RewriteError(f"expected a SELECT: {sql}")
    table_node = _single_table(statement, sql)
    alias = table_node.alias_or_name
    qualifier = table_node.alias or None
    where = statement.args.get("where")
    predicate = _unqualified(where.this, alias).sql(dialect=dialect.value) if where is not None else "TRUE"
    table = HudiTable.open(table_path)
    if begin is not None:
        planned = incremental(table, begin, end)
        files: list[FileSlice] = list(planned.files)
        row_filter = sqlglot.parse_one(planned.row_filter, read="spark")
        explanation = f"incremental ({begin}, {end or 'latest'}]: {len(planned.instants)} instant(s), {len(files)} file slice(s)"
    else:
        try:
            result = plan(DirectoryLister(table, as_of), predicate, dialect=dialect)
        except (ExpressionError, SqlSyntaxError) as exc:
            raise RewriteError(f"the WHERE clause cannot be planned: {exc}") from None
        files, row_filter, explanation = list(result.files), None, result.explain()
    bases = [s for s in files if s.base_file]
    location = hadoop_uri(table.storage)  # engines match "$path" to it: file:/... for a local table, as Hadoop names it
    paths = sorted(join(location, s.base_file) for s in bases if s.base_file)
    kept_partitions = sorted({s.partition for s in bases})
    conditions: list[Any] = []
    kept = partition_condition(table, kept_partitions, qualifier)
    if kept is not None:
        conditions.append(kept)
    path_column = exp.column(PATH_COLUMN, table=qualifier, quoted=True)
    conditions.append(exp.In(this=path_column, expressions=[exp.Literal.string(p) for p in paths]) if paths else exp.false())
    if row_filter is not None:
        conditions.append(row_filter)
    rewritten = statement.copy().where(*conditions, append=True, copy=False)
    return CandidateQuery(rewritten.sql(dialect=dialect.value), tuple(paths), tuple(kept_partitions), explanation)


def run_query(server: str, catalog: str, schema: str, sql: str, user: str = "hudi-bridge",
              session: Mapping[str, str] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run `sql` through the `trino` DBAPI client; (column names, rows)."""
    from urllib.parse import urlparse

    import trino

    url = urlparse(server if "://" in server else f"http://{server}")
    if url.hostname is None:
        raise RewriteError(f"--server {server!r}: expected http(s)://host:port")
    connection = trino.dbapi.connect(host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8080),
                                     http_scheme=url.scheme or "http", user=user, catalog=catalog, schema=schema,
                                     session_properties=dict(session or {}))
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        rows = [tuple(r) for r in cursor.fetchall()]
        names = [d[0] for d in cursor.description or []]
        return names, rows
    except trino.exceptions.TrinoQueryError as exc:
        raise HudiError(f"{server}: {exc.message}") from None
    except (trino.exceptions.TrinoConnectionError, trino.exceptions.HttpError, OSError) as exc:
        reason = re.search(r"\[Errno \d+\] ([^\]\")']+)", str(exc))
        why = reason.group(1).strip().lower() if reason else str(exc).splitlines()[0][:200]
        raise HudiError(f"Trino/Presto server {server}: cannot connect ({why}); check --server and that the server is up") from None
    finally:
        connection.close()
