"""sqlglot function nodes to `expressions.functions`.

sqlglot parses every dialect's date functions into one vocabulary
(`date_add` and Trino's `date_add('day', ...)` are both day additions,
patterns become strftime codes), so one reader serves all four dialects.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect as GlotDialect
from sqlglot.time import format_time

from expressions.functions import (
    Add,
    ChangeCase,
    DateFormat,
    DatePart,
    Divide,
    Function,
    Length,
    Multiply,
    ParseTime,
    Pattern,
    SecondsToTimestamp,
    SessionZone,
    Substring,
    ToDate,
    ToTimestamp,
    Trim,
    Unit,
    UnixSeconds,
    parse_pattern,
)
from expressions.functions.text import JAVA_WHITESPACE, SPACE
from expressions.tree import Literal

Number = int | float | Decimal
_PARTS: dict[type[exp.Expr], Unit] = {
    exp.Year: Unit.YEAR, exp.Month: Unit.MONTH, exp.Day: Unit.DAY, exp.DayOfMonth: Unit.DAY,
    exp.Hour: Unit.HOUR, exp.Minute: Unit.MINUTE, exp.Second: Unit.SECOND,
}
_SPARK = GlotDialect.get_or_raise("spark")


class FunctionReader:
    def __init__(self, zone: SessionZone, literal: Callable[[exp.Expr], Literal | None], whitespace_trim: bool = False) -> None:
        self.zone = zone
        self.literal = literal
        self.whitespace_trim = whitespace_trim  # Trino's and Presto's trim removes every whitespace character

    def constant(self, node: exp.Expr) -> Number | None:
        """A numeric constant (`-1`, `2 * -1` as sqlglot writes date_sub's)."""
        if isinstance(node, exp.Mul):
            left, right = self.constant(node.this), self.constant(node.expression)
            return None if left is None or right is None else left * right  # type: ignore[operator]
        literal = self.literal(node)
        if literal is None or literal.kind not in ("integer", "decimal", "float") or isinstance(literal.value, bool):
            return None
        return literal.value

    def pattern(self, node: exp.Expr) -> Pattern | None:
        fmt = node.args.get("format")
        if not isinstance(fmt, exp.Literal) or not fmt.is_string:
            return None
        return parse_pattern(format_time(fmt.this, _SPARK.INVERSE_TIME_MAPPING, _SPARK.INVERSE_TIME_TRIE) or "")

    def peel(self, node: exp.Expr, inside: bool = False) -> tuple[list[Function], exp.Expr] | None:
        """(functions innermost first, the node they apply to) for an
        order-preserving function node; None for anything else. A cast of a
        bare column to TIMESTAMP is a function only `inside` another one
        (alone it is a widening cast of the column)."""
        zone = self.zone
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
            return self._arithmetic(node)
        if isinstance(node, exp.Div):
            k = self.constant(node.expression)
            return ([Divide(k)], node.this) if k is not None and k != 0 else None
        if isinstance(node, exp.Neg):
            return [Multiply(-1)], node.this
        if isinstance(node, (exp.TsOrDsAdd, exp.DateAdd, exp.DateSub)):
            unit = node.args.get("unit")
            k = self.constant(node.expression)
            if k is None or (unit is not None and unit.name.upper() not in ("DAY", "'DAY'")):
                return None
            return [Add(-k if isinstance(node, exp.DateSub) else k)], node.this
        if isinstance(node, exp.TsOrDsToDate):
            if node.args.get("format") is None:
                return [ToDate(zone)], node.this
            pattern = self.pattern(node)
            return ([ParseTime(pattern, True, zone)], node.this) if pattern else None
        if isinstance(node, (exp.Cast, exp.TryCast)) and node.to.is_type(exp.DataType.Type.DATE):
            return [ToDate(zone)], node.this
        if isinstance(node, (exp.Cast, exp.TryCast)) and node.to.is_type(exp.DataType.Type.TIMESTAMP) and (
                inside or not isinstance(node.this, (exp.Column, exp.Dot))):
            return [ToTimestamp(zone)], node.this
        if type(node) in _PARTS:
            return [DatePart(_PARTS[type(node)], zone)], node.this
        if isinstance(node, exp.TimeToStr):
            pattern = self.pattern(node)
            inner = node.this.this if isinstance(node.this, exp.TimeStrToTime) else node.this
            return ([DateFormat(pattern, zone)], inner) if pattern else None
        if isinstance(node, exp.UnixToStr):
            pattern = self.pattern(node)
            return ([SecondsToTimestamp(), DateFormat(pattern, zone)], node.this) if pattern else None
        if isinstance(node, exp.StrToTime):
            pattern = self.pattern(node)
            return ([ParseTime(pattern, False, zone)], node.this) if pattern else None
        if isinstance(node, exp.StrToUnix):
            return [UnixSeconds(self.pattern(node), zone)], node.this
        if isinstance(node, exp.Anonymous) and node.name.lower() == "timestamp_seconds" and len(node.expressions) == 1:
            return [SecondsToTimestamp()], node.expressions[0]
        if isinstance(node, exp.UnixToTime) and node.args.get("scale") is None and node.args.get("zone") is None:
            return [SecondsToTimestamp()], node.this  # Trino's from_unixtime(seconds)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "format_datetime" and len(node.expressions) == 2:
            fmt = node.expressions[1]  # Trino's format_datetime takes a Java pattern, as Spark's date_format
            pattern = parse_pattern(fmt.this) if isinstance(fmt, exp.Literal) and fmt.is_string else None
            return ([DateFormat(pattern, zone)], node.expressions[0]) if pattern else None
        if isinstance(node, (exp.Lower, exp.Upper)):
            return [ChangeCase(isinstance(node, exp.Upper))], node.this
        if isinstance(node, exp.Trim):
            given = node.args.get("expression")
            chars = given.this if isinstance(given, exp.Literal) and given.is_string else None
            if given is not None and chars is None:
                return None
            side = (node.text("position") or "BOTH").lower()
            default = JAVA_WHITESPACE if self.whitespace_trim else SPACE
            return [Trim(side, chars or default)], node.this
        if isinstance(node, exp.Length):
            return [Length()], node.this
        if isinstance(node, exp.Substring):
            start, length = self.constant(node.args.get("start") or exp.Literal.number(1)), self.constant(node.args["length"]) if node.args.get("length") else None
            if not isinstance(start, int) or not isinstance(length, int):
                return None
            return [Substring(start, length)], node.this
        return None

    def _arithmetic(self, node: exp.Add | exp.Sub | exp.Mul) -> tuple[list[Function], exp.Expr] | None:
        right, left = self.constant(node.expression), self.constant(node.this)
        if right is not None and left is None:  # c op k
            if isinstance(node, exp.Mul):
                return [Multiply(right)], node.this
            return [Add(right if isinstance(node, exp.Add) else -right)], node.this
        if left is not None and right is None:  # k op c
            if isinstance(node, exp.Mul):
                return [Multiply(left)], node.expression
            if isinstance(node, exp.Add):
                return [Add(left)], node.expression
            return [Multiply(-1), Add(left)], node.expression  # k - c
        return None
