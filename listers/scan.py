"""`scan()`: the rows of a Hudi table as Arrow, read from only the file slices
a plan keeps, for Python engines (DuckDB, Polars, pandas, Daft, Ray).

The plan uses every index the table keeps (listers.planner). Its candidates
may still hold rows that do not match, so the predicate is applied to the
rows read, with the same evaluator the planner's tests trust
(`expressions.evaluate_rows`). A base file alone is read by pyarrow with the
projection; a MOR slice is merged by hudi-rs. Rows come in the table's
schema (`conform`): columns added since as nulls, promoted ones cast.
Slices are read a few at a time on threads (pyarrow and hudi-rs release the
GIL) and yielded in plan order, so memory holds a handful of slices.

    scan("/data/trips", where="city = 'sf' AND fare > 20", columns=["uuid", "fare"]).to_table()
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from expressions import Dialect, Expr, evaluate_rows, parse_sql
from expressions.tree import and_
from expressions.visitors import references
from listers.directory_lister import DirectoryLister
from listers.incremental import incremental
from listers.planner import plan
from metadata import FileSlice, HudiTable
from metadata.errors import HudiBridgeError
from metadata.storage.secrets import redact
from metadata.table.slice_rows import conform, merged_rows, table_read_schema
from metadata.util.arrow_memory import empty_table
from metadata.util.read_ahead import read_ahead
from metadata.util.text_enum import TextEnum


class QueryType(TextEnum):
    SNAPSHOT = "snapshot"
    READ_OPTIMIZED = "read_optimized"  # base files only (MOR logs left unmerged), as Hudi's read-optimized query
    INCREMENTAL = "incremental"  # the records the commits after `begin` (up to `end`) wrote, as Hudi's incremental query


class ScanError(HudiBridgeError, ValueError):
    """A scan that cannot be made as asked (an unknown column, a missing begin)."""


@dataclass(frozen=True)
class Scan:
    """Planned file slices and how to read them; nothing is read until asked."""

    table: HudiTable
    slices: tuple[FileSlice, ...]
    schema: pa.Schema  # of the rows returned
    row_filter: Expr | None
    read_schema: pa.Schema  # what is read from each slice: the projection and what the filter needs, in the table's types
    explanation: str
    threads: int = 2

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Record batches in plan order, a few slices read ahead."""
        if not self.slices:
            return
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="hudi-bridge-scan") as pool:
            for rows in read_ahead(pool, self.slices, self._read, self.threads * 2):
                yield from rows.to_batches()

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.schema)

    def to_pandas(self) -> Any:
        return self.to_table().to_pandas()

    def to_polars(self) -> Any:
        import polars as pl

        return pl.from_arrow(self.to_table())

    def to_duckdb(self, name: str, connection: Any = None) -> Any:
        """Register the rows as a view `name` in a DuckDB connection (DuckDB's default one unless given, so
        `duckdb.sql` sees it too) and return the connection. The rows stream once, on the first query."""
        import duckdb

        if connection is None:
            connection = duckdb.default_connection() if callable(duckdb.default_connection) else duckdb.default_connection
        connection.register(name, self.to_reader())
        return connection

    def _read(self, piece: FileSlice) -> pa.Table:
        where = self.table.storage.display_path(piece.base_file or (piece.log_files[0] if piece.log_files else piece.partition))
        rows = merged_rows(self.table, piece, None if piece.log_files else self.read_schema.names)
        if rows.num_rows == 0:
            return empty_table(self.schema)
        rows = conform(rows, self.read_schema, where)
        if self.row_filter is not None:
            rows = rows.filter(evaluate_rows(self.row_filter, rows))
        return rows.select(self.schema.names)


def _columns(schema: pa.Schema, wanted: Sequence[str] | None, what: str) -> list[str]:
    """`wanted` as the schema spells them (case-insensitive, as Spark and Hive resolve names)."""
    if wanted is None:
        return list(schema.names)
    spelled = {name.lower(): name for name in schema.names}
    missing = [c for c in wanted if c.lower() not in spelled]
    if missing:
        raise ScanError(f"{what}: no column {', '.join(missing)} in the table (it has {', '.join(schema.names)})")
    return [spelled[c.lower()] for c in wanted]


def scan(
    path_or_table: str | HudiTable,
    where: str | Expr | None = None,
    columns: Sequence[str] | None = None,
    as_of: str | None = None,
    query_type: QueryType | str = QueryType.SNAPSHOT,
    begin: str | None = None,
    end: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    dialect: Dialect | str = Dialect.SPARK,
    threads: int | None = None,
    service: str | None = None,
    service_token: str | None = None,
) -> Scan:
    """The rows of a table matching `where` (SQL in `dialect`, or a HudiExpression), `columns` of them,
    as of an instant or (incremental) written after `begin`; read only from the slices a plan keeps.
    With `service` (a `hudi-bridge serve` URL), `path_or_table` is the table's name there: the service plans,
    and the slices it names are read here (`storage_options` reach the files)."""
    query_type = QueryType(query_type)
    _check_window(query_type, begin, end)
    if service is not None:
        if not isinstance(path_or_table, str):
            raise ScanError("with service=, name the table as the service serves it")
        return _scan_through_service(path_or_table, service, service_token, where, columns, as_of, query_type, begin, end,
                                     storage_options, Dialect.of(dialect), threads)
    table = path_or_table if isinstance(path_or_table, HudiTable) else HudiTable.open(path_or_table, storage_options=storage_options)
    full = table_read_schema(table)
    expr = parse_sql(where, dialect) if isinstance(where, str) else where
    output = _columns(full, columns, "columns")
    needed = _columns(full, _top_columns(expr), "where") if expr is not None else []
    read_columns = tuple(dict.fromkeys([*output, *needed]))
    if query_type is QueryType.INCREMENTAL:
        assert begin is not None
        pulled = incremental(table, begin, end)
        commit_filter = parse_sql(pulled.row_filter, Dialect.SPARK)
        read_columns = tuple(dict.fromkeys([*read_columns, *_columns(full, _top_columns(commit_filter), "begin")]))
        row_filter: Expr | None = commit_filter if expr is None else and_(commit_filter, expr)
        slices, explanation = pulled.files, f"incremental ({begin}, {end or 'latest'}]: {len(pulled.instants)} instant(s)"
    else:
        lister = DirectoryLister(table, as_of)
        planned = plan(lister, expr if expr is not None else "TRUE", dialect=dialect)
        slices, row_filter, explanation = planned.files, expr, planned.explain()
    return _scan_of(table, full, slices, row_filter, output, read_columns, explanation, query_type, threads)


def _check_window(query_type: QueryType, begin: str | None, end: str | None) -> None:
    if query_type is QueryType.INCREMENTAL and begin is None:
        raise ScanError("an incremental scan needs begin (the instant after which commits are read)")
    if query_type is not QueryType.INCREMENTAL and (begin is not None or end is not None):
        raise ScanError("begin and end belong to query_type='incremental'")


def _scan_of(table: HudiTable, full: pa.Schema, slices: Sequence[FileSlice], row_filter: Expr | None, output: Sequence[str],
             read_columns: Sequence[str], explanation: str, query_type: QueryType, threads: int | None) -> Scan:
    """The scan of planned slices (base files alone for a read-optimized query)."""
    if query_type is QueryType.READ_OPTIMIZED:
        slices = tuple(dataclasses.replace(s, log_files=()) for s in slices if s.base_file)
    return Scan(table, tuple(slices), pa.schema([full.field(c) for c in output]), row_filter,
                pa.schema([full.field(c) for c in read_columns]), explanation, threads or min(4, os.cpu_count() or 2))


def _scan_through_service(name: str, service: str, token: str | None, where: str | Expr | None, columns: Sequence[str] | None,
                          as_of: str | None, query_type: QueryType, begin: str | None, end: str | None,
                          storage_options: Mapping[str, str] | None, dialect: Dialect, threads: int | None) -> Scan:
    from listers.service_client import ServiceClient

    if isinstance(where, Expr):
        raise ScanError("with service=, give where as SQL text")
    asked = ServiceClient(service, token).plan(name, where if where is not None else True, dialect.value, as_of,
                                               begin if query_type is QueryType.INCREMENTAL else None, end, columns)
    table = HudiTable.open(asked.base_uri, storage_options=storage_options)
    full = table_read_schema(table)
    row_filter = parse_sql(where, dialect) if where is not None else None
    if query_type is QueryType.INCREMENTAL:  # the service's residual is the commit filter (and the predicate)
        row_filter = parse_sql(asked.plan.residual, Dialect.SPARK)
    output = _columns(full, columns, "columns")
    needed = _columns(full, _top_columns(row_filter), "where") if row_filter is not None else []
    explanation = f"planned by {redact(service)} (plan {asked.answer['plan_id']}, instant {asked.instant}):\n{asked.plan.explain()}"
    return _scan_of(table, full, asked.plan.files, row_filter, output, tuple(dict.fromkeys([*output, *needed])), explanation,
                    query_type, threads)


def _top_columns(expr: Expr) -> list[str]:
    """The top-level columns a predicate reads (a nested `a.b` reads `a`)."""
    return list(dict.fromkeys(ref.path[0] for ref in references(expr)))


__all__ = ["QueryType", "Scan", "ScanError", "scan"]
