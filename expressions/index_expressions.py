"""Expression indexes seen from predicates: which leaves an index on f(c) answers.

An index on f(c) keeps, per file, the bounds and null count of f(c): the
statistics of a virtual column. A predicate is rewritten into one over that
column that every matching row also satisfies (an implied predicate), and
the stats evaluator prunes with it:

- a leaf on f(c) itself (the same function chain after normalisation, as
  sqlglot reads each dialect's spelling) is taken as it is;
- beyond Hudi, a leaf on the bare column c is implied on f(c):
  `c = x` by `f(c) = f(x)` and `c IN (...)` by `f(c) IN (f(x)...)` for any f
  (a function gives equal values equal images); `c >= x` by `f(c) >= lo`
  and `c <= x` by `f(c) <= hi`, where [lo, hi] bound f over every value on
  that side of x, which exists only where f keeps order there (`image`),
  and only when f is NULL exactly when c is;
- anything else is true (it may hold in any file).

The index's values are Spark's, computed in the writer's session time zone:
the plan's zone must be that one (UTC unless said), as Hudi assumes.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa

from expressions.bound import BoundPredicate, bound_as
from expressions.errors import ExpressionError
from expressions.functions import Function, SessionZone, Unit, all_total, apply_all, image_all, result_type
from expressions.sql import parse_sql
from expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Op,
    Or,
    Ref,
    StartsWith,
    and_,
    or_,
)
from metadata.mdt.expression_index import EXPRESSION_INDEX_PREFIX, ExpressionIndexPartition, ExpressionIndexType
from metadata.util import arrow_values


def same_function(a: tuple[Function, ...], b: tuple[Function, ...]) -> bool:
    """Whether two chains compute the same values: equal after normalisation,
    where year/month/day of to_date(c) is year/month/day of c (sqlglot reads
    Spark's `month(ts)` with the to_date, Trino's without)."""
    return _canonical(a) == _canonical(b)


def _canonical(functions: tuple[Function, ...]) -> tuple[Function, ...]:
    from expressions.functions import DatePart, ToDate, normalise

    chain = list(normalise(functions))
    for i in range(len(chain) - 1, 0, -1):
        after = chain[i]
        if isinstance(chain[i - 1], ToDate) and isinstance(after, DatePart) and after.unit <= Unit.DAY:
            del chain[i - 1]
    return tuple(chain)


def index_ref(index: ExpressionIndexPartition, zone: SessionZone | None = None) -> Ref | None:
    """f(column) of an index as a reference with its function chain, or None
    when the function is not evaluated here."""
    text = index.spark_sql()
    if text is None:
        return None
    try:
        parsed = parse_sql(f"{text} IS NULL", "spark", (zone or SessionZone()).name)
    except ExpressionError:
        return None
    if not isinstance(parsed, IsNull):
        return None
    from expressions.functions import normalise

    ref = parsed.ref
    return Ref(ref.path, functions=normalise(ref.functions))


class SparkIndexExpressions:
    """`metadata.mdt.expression_index.IndexExpressions` with this package's functions, in one session zone."""

    def __init__(self, zone: SessionZone | None = None) -> None:
        self.zone = zone or SessionZone()
        self._functions: dict[ExpressionIndexPartition, tuple[Function, ...] | None] = {}  # parsed once per index, not per file

    def functions(self, index: ExpressionIndexPartition) -> tuple[Function, ...] | None:
        if index not in self._functions:
            ref = index_ref(index, self.zone)
            self._functions[index] = None if ref is None else ref.functions
        return self._functions[index]

    def result_type(self, index: ExpressionIndexPartition, source: pa.DataType) -> pa.DataType | None:
        return self._result_type(self.functions(index), source)

    @staticmethod
    def _result_type(functions: tuple[Function, ...] | None, source: pa.DataType) -> pa.DataType | None:
        return None if functions is None else (result_type(functions, source) if functions else source)

    def evaluate(self, index: ExpressionIndexPartition, values: pa.Array) -> pa.Array:
        functions = self.functions(index)
        dtype = self._result_type(functions, values.type)
        if functions is None or dtype is None:
            raise ExpressionError(f"{index.value}: {index.function} is not evaluated on a {values.type} column")
        if not functions:
            return values
        source = values.type
        return arrow_values.array([None if v is None else apply_all(functions, v, source) for v in values.to_pylist()], dtype)


def implied_on_index(predicate: BoundPredicate, indexed: Ref, source: pa.DataType, virtual: str) -> BoundPredicate | None:
    """The predicate implied on the index's virtual column `virtual` (the
    values of `indexed`, a column with its function chain, of type `source`),
    or None when nothing of it is implied (no leaf the index answers)."""
    dtype = result_type(indexed.functions, source) if indexed.functions else source
    if dtype is None:
        return None
    rewriter = _Rewriter(indexed, source, dtype, Ref((virtual,)))
    implied = rewriter.rewrite(predicate.expr)
    if not rewriter.used or isinstance(implied, AlwaysTrue):
        return None
    return bound_as(implied, pa.schema([(virtual, dtype)]))


class _Rewriter:
    def __init__(self, indexed: Ref, source: pa.DataType, dtype: pa.DataType, target: Ref) -> None:
        self.path, self.functions = indexed.path, indexed.functions
        self.source, self.dtype, self.target = source, dtype, target
        self.total = all_total(self.functions, source)
        self.used = False

    def rewrite(self, expr: Expr) -> Expr:
        if isinstance(expr, And):
            return and_(self.rewrite(expr.left), self.rewrite(expr.right))
        if isinstance(expr, Or):
            return or_(self.rewrite(expr.left), self.rewrite(expr.right))
        if isinstance(expr, AlwaysFalse):
            return expr
        ref = getattr(expr, "ref", None)
        if not isinstance(ref, Ref) or ref.path != self.path or ref.cast is not None:
            return AlwaysTrue()
        if same_function(ref.functions, self.functions):
            return self._exact(expr)
        if not ref.functions and self.functions:
            return self._from_column(expr)
        return AlwaysTrue()

    def _exact(self, expr: Expr) -> Expr:
        self.used = True
        if isinstance(expr, Comparison):
            return Comparison(expr.op, self.target, expr.literal, expr.origin)
        if isinstance(expr, In):
            return In(self.target, expr.literals, expr.negated, expr.origin)
        if isinstance(expr, (IsNull, IsNotNull)):
            return type(expr)(self.target)
        if isinstance(expr, StartsWith):
            return StartsWith(self.target, expr.prefix, expr.negated)
        return AlwaysTrue()

    def _image_of(self, value: Any) -> Literal | None:
        try:
            result = apply_all(self.functions, value, self.source)
        except (OverflowError, ValueError):
            return None
        return None if result is None else Literal(result, str(self.dtype))

    def _from_column(self, expr: Expr) -> Expr:
        if isinstance(expr, Comparison) and expr.op in (Op.EQ, Op.NULL_SAFE_EQ) and not expr.literal.is_null:
            image = self._image_of(expr.literal.value)
            if image is None:
                return AlwaysTrue()
            self.used = True
            return Comparison(Op.EQ, self.target, image, expr.origin)
        if isinstance(expr, In) and not expr.negated:
            images = [self._image_of(lit.value) for lit in expr.literals if not lit.is_null]
            if any(i is None for i in images):
                return AlwaysTrue()
            self.used = True
            return In(self.target, tuple(i for i in images if i is not None), False, expr.origin) if images else AlwaysFalse()
        if isinstance(expr, IsNull) and self.total:
            self.used = True
            return IsNull(self.target)
        if isinstance(expr, Comparison) and expr.op in (Op.GE, Op.GT, Op.LE, Op.LT) and self.total:
            return self._range(expr)
        return AlwaysTrue()

    def _range(self, expr: Comparison) -> Expr:
        """c >= x implies f(c) >= lo, lo the least f over [x, top]; c <= x, f(c) <= hi over [bottom, x]."""
        ends = _domain(self.source, expr.literal.value)
        if ends is None:
            return AlwaysTrue()
        value, upward = expr.literal.value, expr.op in (Op.GE, Op.GT)
        try:
            bounds = image_all(self.functions, value, ends[1], self.source) if upward else image_all(self.functions, ends[0], value, self.source)
        except (OverflowError, ValueError):
            return AlwaysTrue()
        if bounds is None or bounds[0] is None or bounds[1] is None:
            return AlwaysTrue()
        self.used = True
        if upward:
            return Comparison(Op.GE, self.target, Literal(bounds[0], str(self.dtype)), expr.origin)
        return Comparison(Op.LE, self.target, Literal(bounds[1], str(self.dtype)), expr.origin)


def _domain(dtype: pa.DataType, like: Any) -> tuple[Any, Any] | None:
    """The least and greatest values of a column type (for ranges from a literal to either end)."""
    if pa.types.is_timestamp(dtype) and isinstance(like, datetime):
        tz = timezone.utc if like.tzinfo is not None else None
        return datetime.min.replace(tzinfo=tz), datetime.max.replace(tzinfo=tz)
    if pa.types.is_date(dtype) and isinstance(like, date):
        return date.min, date.max
    if pa.types.is_integer(dtype) and isinstance(like, int):
        info = pa.types.is_signed_integer(dtype)
        bits = dtype.bit_width
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if info else (0, (1 << bits) - 1)
    return None




# Spark's argument list of each function Hudi indexes, as index options (HoodieExpressionIndex).
_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "date_format": ("format",), "from_unixtime": ("format",), "unix_timestamp": ("format",), "to_date": ("format",),
    "to_timestamp": ("format",), "date_add": ("days",), "date_sub": ("days",), "substring": ("pos", "len"),
    "year": (), "month": (), "day": (), "hour": (), "lower": (), "upper": (), "length": (),
    "trim": ("trimString",), "ltrim": ("trimString",), "rtrim": ("trimString",),
}
_CALL = re.compile(r"\s*(?P<function>[A-Za-z_]+)\s*\((?P<args>.*)\)\s*", re.DOTALL)
_ARGUMENT = re.compile(r"\s*(?:'(?P<text>(?:[^'\\]|\\.)*)'|(?P<number>[+-]?\d+)|(?P<column>`[^`]+`(?:\.`[^`]+`)*|[A-Za-z_][\w.]*))\s*(?:,|$)")


def expression_index_of(name: str, text: str, index_type: ExpressionIndexType = ExpressionIndexType.COLUMN_STATS) -> ExpressionIndexPartition:
    """An expression index from its Spark SQL (`date_format(ts, 'yyyy-MM-dd')`,
    `substring(name, 1, 3)`, a bare column for identity), named
    `expr_index_<name>`, of column_stats or bloom filters; an expression not
    evaluated here is an error saying which."""
    index_name = name if name.startswith(EXPRESSION_INDEX_PREFIX) else EXPRESSION_INDEX_PREFIX + name
    call = _CALL.fullmatch(text)
    parts: list[re.Match[str]] = []
    if call is None:
        column_only = _ARGUMENT.fullmatch(text)
        if column_only is None or column_only.group("column") is None:
            raise ExpressionError(f"expression index {name}: {text!r} is neither a column nor a function of one")
        return ExpressionIndexPartition(index_name, _column_name(column_only.group("column")), "identity", index_type=index_type)
    function, args = call.group("function").lower(), call.group("args")
    position = 0
    while position < len(args):
        match = _ARGUMENT.match(args, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"expression index {name}: cannot read the arguments of {text!r} from position {position + 1}")
        parts.append(match)
        position = match.end()
    if function not in _ARGUMENTS:
        raise ExpressionError(f"expression index {name}: {function} is not evaluated here (choose from {', '.join(sorted(_ARGUMENTS))})")
    if not parts or parts[0].group("column") is None:
        raise ExpressionError(f"expression index {name}: the first argument of {function} must be a column")
    names = _ARGUMENTS[function]
    if len(parts) - 1 > len(names):
        raise ExpressionError(f"expression index {name}: {function} takes {len(names) + 1} argument(s) here, not {len(parts)}")
    options = []
    for option, part in zip(names, parts[1:]):
        value = part.group("text") if part.group("text") is not None else part.group("number")
        if value is None:
            raise ExpressionError(f"expression index {name}: {option} of {function} must be a literal")
        options.append((option, value.replace("\\'", "'").replace("\\\\", "\\")))
    index = ExpressionIndexPartition(index_name, _column_name(parts[0].group("column")), function, tuple(sorted(options)), index_type)
    if index_ref(index) is None:
        raise ExpressionError(f"expression index {name}: {text!r} is not an expression evaluated here")
    return index


def _column_name(text: str) -> str:
    return ".".join(part.strip("`") for part in re.findall(r"`[^`]+`|[^.]+", text))
