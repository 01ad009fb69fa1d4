"""Exact row evaluation under SQL three-valued logic (NULL never selects).

NaN follows the dialect a leaf came from (`expressions.dialect.nan_semantics`):
Spark and Hive treat NaN as equal to itself and greater than every number;
Trino and Presto follow IEEE (every comparison with NaN is false except `<>`).
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from expressions.binding import bind
from expressions.dialect import Dialect, NanSemantics, nan_semantics
from expressions.errors import ExpressionError
from expressions.functions import apply_all, result_type
from expressions.tree import Comparison, Expr, In, IsNotNull, IsNull, Op, Ref, StartsWith, Unknown
from expressions.visitors import Visitor, visit
from metadata.util import arrow_values

_COMPARE = {Op.EQ: pc.equal, Op.NE: pc.not_equal, Op.LT: pc.less, Op.LE: pc.less_equal, Op.GT: pc.greater, Op.GE: pc.greater_equal}


def column_of(table: pa.Table, ref: Ref) -> pa.ChunkedArray:
    """The values a reference reads: the (possibly nested) column, with the
    reference's functions applied row by row."""
    column = table.column(ref.path[0])
    for part in ref.path[1:]:
        column = pc.struct_field(column, part)
    if not ref.functions:
        return column
    source = column.type
    values = [apply_all(ref.functions, v, source) for v in column.to_pylist()]
    return pa.chunked_array([arrow_values.array(values, result_type(ref.functions, source))])


def is_nan_literal(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class RowEvaluator(Visitor[pa.ChunkedArray]):
    """Boolean (with nulls) per row. With `unknown_as_true`, leaves that
    cannot be evaluated count as "may match" (used for partition pruning)."""

    def __init__(self, table: pa.Table, unknown_as_true: bool = False) -> None:
        self.table = table
        self.unknown_as_true = unknown_as_true
        self.length = table.num_rows

    def _constant(self, value: bool) -> pa.ChunkedArray:
        return pa.chunked_array([arrow_values.booleans(value, self.length)])

    def always_true(self) -> pa.ChunkedArray:
        return self._constant(True)

    def always_false(self) -> pa.ChunkedArray:
        return self._constant(False)

    def and_(self, left: pa.ChunkedArray, right: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.and_kleene(left, right)

    def or_(self, left: pa.ChunkedArray, right: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.or_kleene(left, right)

    def comparison(self, node: Comparison) -> pa.ChunkedArray:
        column = column_of(self.table, node.ref)
        value = node.literal.value
        scalar = arrow_values.scalar(value, column.type)
        if node.op is Op.NULL_SAFE_EQ:
            return pc.fill_null(self._compare(Op.EQ, column, scalar, value, node.origin), arrow_values.FALSE)
        return self._compare(node.op, column, scalar, value, node.origin)

    def _compare(self, op: Op, column: pa.ChunkedArray, scalar: pa.Scalar, value: Any, origin: Dialect | None) -> pa.ChunkedArray:
        result = _COMPARE[op](column, scalar)
        if not pa.types.is_floating(column.type) or nan_semantics(origin) is NanSemantics.IEEE:
            return result
        nan = pc.is_nan(column)
        if is_nan_literal(value):
            # Spark: NaN equals NaN and sorts above every other value.
            return {
                Op.EQ: nan,
                Op.NE: pc.invert(nan),
                Op.LT: pc.invert(nan),
                Op.LE: pc.or_kleene(pc.invert(nan), nan),
                Op.GT: pc.and_kleene(nan, pc.invert(nan)),
                Op.GE: nan,
            }[op]
        if op in (Op.GT, Op.GE):
            return pc.or_kleene(result, nan)
        return result

    def in_(self, node: In) -> pa.ChunkedArray:
        column = column_of(self.table, node.ref)
        values = [lit.value for lit in node.literals if not lit.is_null]
        list_has_null = len(values) != len(node.literals)
        matched = pc.is_in(column, value_set=arrow_values.array(values, column.type), skip_nulls=True)
        if pa.types.is_floating(column.type):
            if nan_semantics(node.origin) is NanSemantics.IEEE:
                matched = pc.and_(matched, pc.invert(pc.is_nan(column)))  # IEEE: NaN equals nothing
            elif any(is_nan_literal(v) for v in values):
                matched = pc.or_(matched, pc.is_nan(column))
        # SQL: a match is TRUE; no match is NULL if the list holds NULL, else FALSE.
        no_match = arrow_values.NULL_BOOL if list_has_null else arrow_values.FALSE
        result = pc.if_else(matched, arrow_values.TRUE, no_match)
        if node.negated:
            result = pc.invert(result)
        return pc.if_else(pc.is_null(column), arrow_values.NULL_BOOL, result)

    def is_null(self, node: IsNull) -> pa.ChunkedArray:
        return pc.is_null(column_of(self.table, node.ref))

    def is_not_null(self, node: IsNotNull) -> pa.ChunkedArray:
        return pc.is_valid(column_of(self.table, node.ref))

    def starts_with(self, node: StartsWith) -> pa.ChunkedArray:
        result = pc.starts_with(column_of(self.table, node.ref), pattern=node.prefix)
        return pc.invert(result) if node.negated else result

    def unknown(self, node: Unknown) -> pa.ChunkedArray:
        if self.unknown_as_true:
            return self._constant(True)
        what = node.sql or "a predicate"
        raise ExpressionError(f"cannot evaluate rows: {what} is not one hudi-bridge evaluates on rows ({node.reason}); "
                              "filter the rows in the engine")


def evaluate_rows(expr: Expr, table: pa.Table, case_sensitive: bool = False) -> pa.BooleanArray:
    """Which rows the predicate selects (NULL counts as not selected)."""
    bound = bind(expr, table.schema, case_sensitive=case_sensitive, strict=True)
    result = visit(bound, RowEvaluator(table))
    return pc.fill_null(result, arrow_values.FALSE).combine_chunks()
