"""Exact evaluation of a predicate against partition values.

Leaves on partition columns are evaluated exactly on the values parsed from
partition paths (typed by the partition fields' types; Hive's default
partition is NULL); leaves on other columns may match anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from expressions.binding import bind
from expressions.bound import BoundPredicate
from expressions.eval_rows import RowEvaluator
from expressions.tree import AlwaysTrue, And, Comparison, Expr, In, Literal, Op, Or, Ref, and_, or_
from expressions.visitors import visit
from metadata.table.partition_path import parse_partition_values
from metadata.util import arrow_values

log = logging.getLogger(__name__)


def partition_values_table(
    partitions: list[str], fields: tuple[str, ...], types: dict[str, pa.DataType], hive_style: bool, url_encoded: bool = False,
    segments_of: Mapping[str, int] | None = None,
) -> pa.Table:
    """One row per partition path, one typed column per partition field."""
    parsed = [parse_partition_values(p, fields, hive_style, url_encoded, segments_of) for p in partitions]
    columns = {}
    for name in fields:
        raw = arrow_values.strings([values[name] for values in parsed])
        target = types.get(name, pa.string())
        try:
            columns[name] = raw.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            log.debug("partition field %s kept as text: values do not cast to %s (%s)", name, target, exc)
            columns[name] = raw
    return pa.table(columns) if columns else pa.table({"_": pa.nulls(len(partitions), pa.null())})


def prune_partitions(
    expr: Expr | BoundPredicate,
    partitions: list[str],
    fields: tuple[str, ...],
    types: dict[str, pa.DataType],
    hive_style: bool,
    url_encoded: bool = False,
    prunable: Collection[str] | None = None,
    segments_of: Mapping[str, int] | None = None,
) -> list[str]:
    """Partitions that may hold matching rows, in input order. Only fields in
    `prunable` (default: all) are compared with path values; a leaf on any
    other field may match anything (its path holds a transformed value)."""
    if not fields or not partitions:
        return list(partitions)
    table = partition_values_table(partitions, fields, types, hive_style, url_encoded, segments_of)
    if prunable is not None:
        table = table.select([name for name in table.column_names if name in prunable]) if set(prunable) & set(table.column_names) else None
        if table is None:
            return list(partitions)
    bound = expr.on(table.schema) if isinstance(expr, BoundPredicate) else bind(expr, table.schema, strict=False)
    keep = pc.fill_null(visit(bound, RowEvaluator(table, unknown_as_true=True)), arrow_values.FALSE)
    return [p for p, k in zip(partitions, keep.to_pylist()) if k]


def map_to_path_values(expr: Expr, field: str, path_value: Callable[[Any], str | None], monotone: bool) -> Expr:
    """A bound predicate with its leaves on `field` rewritten to leaves on the
    text the key generator wrote for it (`path_value`, e.g. Hudi's TIMESTAMP
    key generator: 1685607300000 -> '2023/06/01/08').

    `f = c` and `f IN (...)` become `path = g(c)` / `path IN (g(c)...)`: a
    row equal to c is in g(c)'s partition. Where g never maps a larger value
    to a smaller path (`monotone`), `f <= c` becomes `path <= g(c)` and
    `f >= c` `path >= g(c)` (`<` and `>` too: rows just below c may share
    g(c)). Every other leaf on `field` may match anywhere."""
    if isinstance(expr, And):
        return and_(map_to_path_values(expr.left, field, path_value, monotone), map_to_path_values(expr.right, field, path_value, monotone))
    if isinstance(expr, Or):
        return or_(map_to_path_values(expr.left, field, path_value, monotone), map_to_path_values(expr.right, field, path_value, monotone))
    ref = getattr(expr, "ref", None)
    if ref is None or ref.path != (field,):
        return expr
    if ref.functions:
        return AlwaysTrue()
    path = Ref((field,), ref.position)
    if isinstance(expr, Comparison) and not expr.literal.is_null:
        mapped = path_value(expr.literal.value)
        if mapped is None:
            return AlwaysTrue()
        target = Literal(mapped, "string")
        if expr.op in (Op.EQ, Op.NULL_SAFE_EQ):
            return Comparison(Op.EQ, path, target)
        if monotone and expr.op in (Op.LT, Op.LE):
            return Comparison(Op.LE, path, target)
        if monotone and expr.op in (Op.GT, Op.GE):
            return Comparison(Op.GE, path, target)
    if isinstance(expr, In) and not expr.negated:
        values = [path_value(lit.value) for lit in expr.literals if not lit.is_null]
        if None not in values:
            return In(path, tuple(Literal(v, "string") for v in values))
    return AlwaysTrue()
