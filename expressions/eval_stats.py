"""Column-statistics evaluation: may a file hold a matching row?

Conservative by construction: every leaf answers "may match" unless the
statistics prove no row can match, and any doubt (missing stats, NaN bounds,
types that do not compare, a string max declared possibly truncated) keeps
the file. A file whose value count is 0 holds no row and matches nothing. Evaluated for all files at once with `pyarrow.compute`.

The stats table follows `metadata.formats.stats_table` (one row per file, min, max
and null count per column); a table that does not is refused.
"""

from __future__ import annotations

import logging
import threading
import weakref
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from expressions.binding import bind
from expressions.bound import BoundPredicate
from expressions.dialect import NanSemantics, nan_semantics
from expressions.eval_rows import is_nan_literal
from expressions.functions import Function, all_total, all_total_within_image, image_all, image_all_arrays, result_type
from expressions.tree import Comparison, Expr, In, IsNotNull, IsNull, Op, Ref, StartsWith, Unknown
from expressions.visitors import Visitor, visit
from metadata.formats.stats_table import (
    FILE_NAME,
    VALUE_COUNT,
    check_stats_table,
    max_field,
    min_field,
    null_count_field,
    stats_columns,
    truncated_columns,
)
from metadata.util import arrow_values
from metadata.util.arrow_values import to_numpy

log = logging.getLogger(__name__)

MAX_CHAR = "\U0010ffff"
SHORT_IN_LIST = 32

# The columns of each stats table alive, by its id: a warm planner's next predicate on the same (cached) table reuses
# their masks (has bounds, all NULL, ...), computed once; an entry goes with its table.
_COLUMNS_OF_TABLES: dict[int, dict[Ref, _Column]] = {}
_COLUMNS_LOCK = threading.Lock()


def _columns_of(stats: pa.Table) -> dict[Ref, _Column]:
    with _COLUMNS_LOCK:
        columns = _COLUMNS_OF_TABLES.get(id(stats))
        if columns is None:
            columns = _COLUMNS_OF_TABLES[id(stats)] = {}
            weakref.finalize(stats, _COLUMNS_OF_TABLES.pop, id(stats), None)
    return columns


class _Column:
    """One column's statistics (or those of f(column), see `derived`);
    derived masks are computed once, when first needed."""

    def __init__(self, low: pa.ChunkedArray, high: pa.ChunkedArray, nulls: pa.ChunkedArray | None,
                 count: pa.ChunkedArray | None, maybe_truncated: bool = False, all_null: pa.ChunkedArray | None = None,
                 nan_free: bool = False) -> None:
        self.maybe_truncated = maybe_truncated
        self.min, self.max, self.nulls, self.count = low, high, nulls, count
        self.type = self.min.type
        # floating values that may be NaN (not those an integer column was cast to)
        self.is_float = pa.types.is_floating(self.type) and not nan_free
        self.is_string = pa.types.is_string(self.type) or pa.types.is_large_string(self.type)
        if all_null is not None:
            self.__dict__["all_null"] = all_null  # known from the column f was applied to

    @classmethod
    def read(cls, stats: pa.Table, name: str) -> _Column:
        nulls = null_count_field(name)
        return cls(
            stats.column(min_field(name)),
            stats.column(max_field(name)),
            stats.column(nulls) if nulls in stats.column_names else None,
            stats.column(VALUE_COUNT) if VALUE_COUNT in stats.column_names else None,
            name in truncated_columns(stats),
        )

    def derived(self, functions: tuple[Function, ...]) -> _Column:
        """Statistics of f(column): per file, f's image of [min, max] where f
        is monotone there, no bounds elsewhere (the file stays)."""
        source = self.type
        target = result_type(functions, source)
        usable = pc.fill_null(pc.and_(self.has_bounds, arrow_values.scalar(not self.maybe_truncated, pa.bool_())), arrow_values.FALSE)
        nothing = arrow_values.scalar(None, source)
        vectorised = image_all_arrays(functions, pc.if_else(usable, self.min, nothing).combine_chunks(),
                                      pc.if_else(usable, self.max, nothing).combine_chunks(), source)
        if vectorised is not None:
            low_array, high_array = (pa.chunked_array([b.cast(target)]) for b in vectorised)
        else:
            low_array, high_array = self._images_file_by_file(functions, usable, target)
        from expressions.functions import RoundingCast

        nan_free = not pa.types.is_floating(source) and all(isinstance(f, RoundingCast) for f in functions)
        if all_total(functions, source):
            return _Column(low_array, high_array, self.nulls, self.count, nan_free=nan_free)
        if all_total_within_image(functions, source) and self.nulls is not None:
            # f may be NULL where it has no image (an overflow): those files' null counts are unknown
            known = pc.or_(pc.and_(pc.is_valid(low_array), pc.is_valid(high_array)), self.all_null)
            return _Column(low_array, high_array, pc.if_else(known, self.nulls, arrow_values.scalar(None, self.nulls.type)), self.count)
        return _Column(low_array, high_array, None, None, all_null=self.all_null)

    def _images_file_by_file(self, functions: tuple[Function, ...], usable: pa.ChunkedArray,
                             target: pa.DataType) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        """f's image per file, computed once per distinct (min, max) pair:
        files often share bounds (days, categories)."""
        source = self.type
        files = pa.table({"low": self.min, "high": self.max, "file": arrow_values.from_numpy(np.arange(len(self.min), dtype=np.int64))}).filter(usable)
        try:
            pairs = files.group_by(["low", "high"], use_threads=False).aggregate([])
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # key types the hash join has no kernel for
            pairs = None
        shared = pairs is not None and pairs.num_rows * 2 <= files.num_rows  # mostly distinct: a join gains nothing
        bounds = pairs if shared and pairs is not None else files
        images = [_image(functions, low, high, source) for low, high in zip(bounds.column("low").to_pylist(), bounds.column("high").to_pylist())]
        if shared:
            placed = files.join(bounds.append_column("pair", arrow_values.from_numpy(np.arange(bounds.num_rows, dtype=np.int64))),
                                ["low", "high"], use_threads=False).select(["file", "pair"])
            images = [images[n] for n in placed.column("pair").to_pylist()]
        else:
            placed = files.select(["file"])
        lows = arrow_values.array([None if b is None else b[0] for b in images], target)
        highs = arrow_values.array([None if b is None else b[1] for b in images], target)
        where = placed.column("file").combine_chunks()
        return _scatter(lows, where, len(self.min)), _scatter(highs, where, len(self.min))

    @cached_property
    def has_bounds(self) -> pa.ChunkedArray:
        has_bounds = pc.and_(pc.is_valid(self.min), pc.is_valid(self.max))
        if self.is_float:
            # NaN bounds say nothing. Nor does [0.0, 0.0]: once a NaN is written, parquet-mr keeps no float bounds in
            # the footer, and Hudi (0.x to 1.2) reads its absent min and max as 0.0 (Statistics.genericGetMin without
            # hasNonNullValue), so a file of -0.5 and NaN has column_stats [0.0, 0.0]. A file of zeros stays too.
            zero = arrow_values.scalar(0.0, self.type)
            has_bounds = pc.and_(has_bounds, pc.invert(pc.or_(pc.or_(pc.is_nan(self.min), pc.is_nan(self.max)),
                                                              pc.and_(pc.equal(self.min, zero), pc.equal(self.max, zero)))))
        return pc.fill_null(has_bounds, arrow_values.FALSE)

    @cached_property
    def all_null(self) -> pa.ChunkedArray:
        if self.nulls is None or self.count is None:
            return pa.chunked_array([arrow_values.booleans(False, len(self.min))])
        return pc.fill_null(pc.and_(pc.equal(self.nulls, self.count), pc.invert(self.has_bounds)), arrow_values.FALSE)

    @cached_property
    def non_null(self) -> pa.ChunkedArray:
        if self.nulls is None or self.count is None:
            return pa.chunked_array([arrow_values.booleans(True, len(self.min))])
        return pc.fill_null(pc.greater(pc.subtract(self.count, self.nulls), arrow_values.ZERO), arrow_values.TRUE)

    @cached_property
    def extended_max(self) -> pa.ChunkedArray:
        """max followed by the largest character: above every string that starts with max."""
        return pc.binary_join_element_wise(self.max, arrow_values.scalar(MAX_CHAR, self.max.type), arrow_values.EMPTY_STRING)


class StatsEvaluator(Visitor[pa.ChunkedArray]):
    def __init__(self, stats: pa.Table) -> None:
        self.stats = stats
        self.length = stats.num_rows
        self._columns = _columns_of(stats)

    def _column(self, ref: Ref) -> _Column:
        column = self._columns.get(ref)
        if column is None:  # two plans at once may both build it: the same column either way
            column = self._column(ref.column).derived(ref.functions) if ref.functions else _Column.read(self.stats, ref.name)
            self._columns[ref] = column
        return column

    def _all(self, value: bool) -> pa.ChunkedArray:
        return pa.chunked_array([arrow_values.array([value] * self.length, pa.bool_())])

    def always_true(self) -> pa.ChunkedArray:
        return self._all(True)

    def always_false(self) -> pa.ChunkedArray:
        return self._all(False)

    def and_(self, left: pa.ChunkedArray, right: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.and_(left, right)

    def or_(self, left: pa.ChunkedArray, right: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.or_(left, right)

    def unknown(self, node: Unknown) -> pa.ChunkedArray:
        log.debug("kept every file: %s", node.reason)
        return self._all(True)

    def _finish(self, column: _Column, decided: Any, needs_values: bool = True) -> pa.ChunkedArray:
        """Keep where undecided; a column with only NULLs holds no match for
        predicates that need a value."""
        may = pc.fill_null(pc.if_else(column.has_bounds, decided, arrow_values.TRUE), arrow_values.TRUE)
        if needs_values:
            may = pc.and_(may, pc.invert(column.all_null))
        return may

    def _safe(self, name: str, build) -> pa.ChunkedArray:  # type: ignore[no-untyped-def]
        try:
            return build()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            log.debug("kept every file for a predicate on %s: statistics do not compare (%s)", name, exc)
            return self._all(True)

    # Leaves -----------------------------------------------------------------------------
    def comparison(self, node: Comparison) -> pa.ChunkedArray:
        name = node.ref.name
        column = self._column(node.ref)
        value = node.literal.value
        if column.is_float and is_nan_literal(value):
            return pc.invert(column.all_null)  # NaN rows are invisible to min/max
        return self._safe(name, lambda: self._compare(node, column, value))

    def _compare(self, node: Comparison, column: _Column, value: Any) -> pa.ChunkedArray:
        scalar = arrow_values.scalar(value, column.type)
        op = Op.EQ if node.op is Op.NULL_SAFE_EQ else node.op
        lo, hi = column.min, column.max
        if op is Op.EQ:
            decided = pc.and_(pc.less_equal(lo, scalar), self._max_at_least(column, value, scalar, strict=False))
        elif op is Op.NE:
            if column.is_float or (column.is_string and column.maybe_truncated):
                # NaN rows are unequal to everything and absent from min/max; truncated
                # string bounds: min == max does not mean one value.
                return pc.invert(column.all_null)
            decided = pc.invert(pc.and_(pc.equal(lo, scalar), pc.equal(hi, scalar)))
        elif op is Op.LT:
            decided = pc.less(lo, scalar)
        elif op is Op.LE:
            decided = pc.less_equal(lo, scalar)
        elif op is Op.GT:
            decided = self._max_at_least(column, value, scalar, strict=True)
        else:
            decided = self._max_at_least(column, value, scalar, strict=False)
        if column.is_float and op in (Op.GT, Op.GE) and nan_semantics(node.origin) is NanSemantics.ORDERED:
            # Spark/Hive: NaN is above every number, and NaN rows leave no trace in max.
            decided = pc.or_(decided, column.non_null)
        return self._finish(column, decided)

    def _max_at_least(self, column: _Column, value: Any, scalar: pa.Scalar, strict: bool) -> pa.ChunkedArray:
        """max > v (or >=), also true where a string max may be a truncated
        prefix of larger values: v starts with max."""
        hi = column.max
        result = pc.greater(hi, scalar) if strict else pc.greater_equal(hi, scalar)
        if column.is_string and column.maybe_truncated and isinstance(value, str):
            truncation_doubt = pc.and_(pc.less_equal(hi, scalar), pc.greater(column.extended_max, scalar))
            result = pc.or_(result, truncation_doubt)
        return result

    def in_(self, node: In) -> pa.ChunkedArray:
        name = node.ref.name
        column = self._column(node.ref)
        values = [lit.value for lit in node.literals if not lit.is_null]
        if node.negated:
            if len(values) != len(node.literals):
                return self._all(False)  # x NOT IN (.., NULL) is never true
            return self._safe(name, lambda: self._not_in(column, values))
        if column.is_float and any(is_nan_literal(v) for v in values):
            return pc.invert(column.all_null)
        if not values:
            return self._all(False)
        return self._safe(name, lambda: self._in(node, column, values))

    def _in(self, node: In, column: _Column, values: list[Any]) -> pa.ChunkedArray:
        if len(values) <= SHORT_IN_LIST:
            decided = None
            for v in values:
                scalar = arrow_values.scalar(v, column.type)
                hit = pc.and_(pc.less_equal(column.min, scalar), self._max_at_least(column, v, scalar, strict=False))
                decided = hit if decided is None else pc.or_(decided, hit)
            return self._finish(column, decided)
        # Long lists: the list's range must overlap [min, max], and a file
        # holding a single value must hold one of the list's.
        value_array = arrow_values.array(values, column.type)
        low, high = pc.min_max(value_array).values()
        overlaps = pc.and_(pc.less_equal(column.min, high), self._max_at_least(column, low.as_py(), low, strict=False))
        if column.is_string and column.maybe_truncated:  # min == max need not be the only value
            return self._finish(column, overlaps)
        single = pc.equal(column.min, column.max)
        point_ok = pc.is_in(column.min, value_set=value_array)
        decided = pc.and_(overlaps, pc.or_(pc.invert(single), point_ok))
        return self._finish(column, decided)

    def _not_in(self, column: _Column, values: list[Any]) -> pa.ChunkedArray:
        if column.is_float or (column.is_string and column.maybe_truncated):  # NaN rows; truncated string bounds
            return pc.invert(column.all_null)
        value_array = arrow_values.array(values, column.type)
        only_listed = pc.and_(pc.equal(column.min, column.max), pc.is_in(column.min, value_set=value_array))
        return self._finish(column, pc.invert(only_listed))

    def is_null(self, node: IsNull) -> pa.ChunkedArray:
        column = self._column(node.ref)
        if column.nulls is None:
            return self._all(True)
        return pc.fill_null(pc.greater(column.nulls, arrow_values.ZERO), arrow_values.TRUE)

    def is_not_null(self, node: IsNotNull) -> pa.ChunkedArray:
        return self._column(node.ref).non_null

    def starts_with(self, node: StartsWith) -> pa.ChunkedArray:
        name = node.ref.name
        column = self._column(node.ref)
        if not column.is_string:
            return self._all(True)
        return self._safe(name, lambda: self._starts_with(node, column))

    def _starts_with(self, node: StartsWith, column: _Column) -> pa.ChunkedArray:
        prefix = node.prefix
        if node.negated:
            # Every value between two strings with the prefix has it too.
            both = pc.and_(pc.starts_with(column.min, prefix), pc.starts_with(column.max, prefix))
            return self._finish(column, pc.invert(both))
        scalar = arrow_values.scalar(prefix, pa.string())
        decided = self._max_at_least(column, prefix, scalar, strict=False)
        from expressions.functions import after_prefix

        upper = after_prefix(prefix)
        if upper is not None:
            decided = pc.and_(decided, pc.less(column.min, arrow_values.scalar(upper, pa.string())))
        return self._finish(column, decided)


def _scatter(values: pa.Array, positions: pa.Array, length: int) -> pa.ChunkedArray:
    """An array of `length` nulls with values[i] at positions[i]."""
    order = np.full(length, -1, dtype=np.int64)
    order[to_numpy(positions)] = np.arange(len(positions), dtype=np.int64)
    taken = values.take(arrow_values.from_numpy(order, valid=~(order < 0)))
    return pa.chunked_array([taken])


def _image(functions: tuple[Function, ...], low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
    try:
        return image_all(functions, low, high, source)
    except (ArithmeticError, ValueError):
        return None  # bounds f cannot take: no pruning for this file


def may_match(expr: Expr | BoundPredicate, stats: pa.Table) -> pa.BooleanArray:
    """Per file: True when it may hold a matching row. A BoundPredicate is
    not bound again, only narrowed to the columns with statistics."""
    check_stats_table(stats)
    bound = expr.on(stats_columns(stats)) if isinstance(expr, BoundPredicate) else bind(expr, stats_columns(stats), strict=False)
    result = pc.fill_null(visit(bound, StatsEvaluator(stats)), arrow_values.TRUE)
    if VALUE_COUNT in stats.column_names:  # an empty file holds no matching row
        result = pc.and_(result, pc.fill_null(pc.not_equal(stats.column(VALUE_COUNT), arrow_values.ZERO), arrow_values.TRUE))
    return result.combine_chunks()


def prune_files(expr: Expr | BoundPredicate, stats: pa.Table) -> list[str]:
    """fileName values of the files that may match, in input order."""
    keep = may_match(expr, stats)
    return stats.column(FILE_NAME).filter(keep).to_pylist()
