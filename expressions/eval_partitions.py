"""Exact evaluation of a predicate against partition values.

Leaves on partition columns are evaluated exactly on the values parsed from
partition paths (typed by the partition fields' types; Hive's default
partition is NULL); leaves on other columns may match anything.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import pyarrow as pa
import pyarrow.compute as pc

from expressions.binding import bind
from expressions.eval_rows import RowEvaluator
from expressions.tree import Expr, visit
from metadata.partition_path import parse_partition_values

log = logging.getLogger(__name__)


def partition_values_table(
    partitions: list[str], fields: tuple[str, ...], types: dict[str, pa.DataType], hive_style: bool, url_encoded: bool = False
) -> pa.Table:
    """One row per partition path, one typed column per partition field."""
    parsed = [parse_partition_values(p, fields, hive_style, url_encoded) for p in partitions]
    columns = {}
    for name in fields:
        raw = pa.array([values[name] for values in parsed], pa.string())
        target = types.get(name, pa.string())
        try:
            columns[name] = raw.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            log.debug("partition field %s kept as text: values do not cast to %s (%s)", name, target, exc)
            columns[name] = raw
    return pa.table(columns) if columns else pa.table({"_": pa.array([None] * len(partitions), pa.null())})


def prune_partitions(
    expr: Expr,
    partitions: list[str],
    fields: tuple[str, ...],
    types: dict[str, pa.DataType],
    hive_style: bool,
    url_encoded: bool = False,
    prunable: Collection[str] | None = None,
) -> list[str]:
    """Partitions that may hold matching rows, in input order. Only fields in
    `prunable` (default: all) are compared with path values; a leaf on any
    other field may match anything (its path holds a transformed value)."""
    if not fields or not partitions:
        return list(partitions)
    table = partition_values_table(partitions, fields, types, hive_style, url_encoded)
    if prunable is not None:
        table = table.select([name for name in table.column_names if name in prunable]) if set(prunable) & set(table.column_names) else None
        if table is None:
            return list(partitions)
    bound = bind(expr, table.schema, strict=False)
    keep = pc.fill_null(visit(bound, RowEvaluator(table, unknown_as_true=True)), False)
    return [p for p, k in zip(partitions, keep.to_pylist()) if k]
