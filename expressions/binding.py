"""Binding a tree to a schema: names resolved, literals coerced to column types.

After binding, every leaf's reference names a real (possibly nested) field
and every literal holds a Python value of that field's Arrow type, so the
evaluators compare like with like. A literal that cannot be represented
exactly in the column type (2.5 against an integer column) is rewritten to
the equivalent exact predicate (`i > 2.5` is `i >= 3`, `i = 2.5` is false).
"""

from __future__ import annotations

import difflib
import math
from datetime import date, datetime, timezone
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from expressions.dialect import Dialect
from expressions.errors import CoercionError, UnknownColumnError
from expressions.functions.base import result_type as function_result_type
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
    Not,
    Op,
    Or,
    Ref,
    StartsWith,
    Unknown,
    and_,
    or_,
    push_not_down,
)

if TYPE_CHECKING:
    from expressions.functions import RoundingCast


class Schema:
    """Field lookup by dotted path, with the engine's case rules."""

    def __init__(self, schema: pa.Schema, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        self.types: dict[str, pa.DataType] = {}
        self._exact: dict[str, str] = {}
        for f in schema:
            self._add(f.name, f.type)

    def _add(self, name: str, dtype: pa.DataType) -> None:
        self.types[name] = dtype
        self._exact[name if self.case_sensitive else name.lower()] = name
        if pa.types.is_struct(dtype):
            for i in range(dtype.num_fields):
                self._add(f"{name}.{dtype.field(i).name}", dtype.field(i).type)

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType] | None:
        candidates = [ref.name]
        if len(ref.path) > 1:
            candidates.append(".".join(ref.path[1:]))  # `t.col`: a table qualifier
        for name in candidates:
            key = name if self.case_sensitive else name.lower()
            if key in self._exact:
                exact = self._exact[key]
                return exact, self.types[exact]
        return None

    def suggest(self, name: str) -> str | None:
        matches = difflib.get_close_matches(name, list(self.types), n=1, cutoff=0.5)
        if not matches and not self.case_sensitive:
            lowered = {n.lower(): n for n in self.types}
            found = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
            matches = [lowered[f] for f in found]
        return matches[0] if matches else None


def bind(expr: Expr, schema: pa.Schema | Schema | dict | str, case_sensitive: bool = False, strict: bool = True) -> Expr:
    """Resolve and coerce against an Arrow schema or an Avro schema (dict or
    JSON text); `strict=False` turns unknown columns into Unknown leaves (used
    for statistics, where a column may simply have none)."""
    if isinstance(schema, (dict, str)):
        from metadata.formats.avro_schema import avro_to_arrow_schema, with_meta_fields

        schema = with_meta_fields(avro_to_arrow_schema(schema))
    lookup = schema if isinstance(schema, Schema) else Schema(schema, case_sensitive)
    return _bind(push_not_down(expr), lookup, strict)


def _bind(expr: Expr, schema: Schema, strict: bool) -> Expr:
    if isinstance(expr, And):
        return and_(_bind(expr.left, schema, strict), _bind(expr.right, schema, strict))
    if isinstance(expr, Or):
        return or_(_bind(expr.left, schema, strict), _bind(expr.right, schema, strict))
    if isinstance(expr, Unknown):
        # A part that cannot prune still names columns: an unknown one is an error, as in Spark, not a keep-everything.
        missing = next((ref for ref in expr.refs if schema.resolve(ref) is None), None) if strict else None
        if missing is not None:
            raise UnknownColumnError(missing.name, schema.suggest(missing.name), missing.position)
        return expr
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return expr
    if isinstance(expr, Not):
        return _bind(push_not_down(expr), schema, strict)
    ref: Ref = expr.ref  # type: ignore[attr-defined]
    found = schema.resolve(ref)
    if found is None:
        if strict:
            raise UnknownColumnError(ref.name, schema.suggest(ref.name), ref.position)
        return Unknown(f"column {ref.name} is not known here", refs=(ref,))
    name, dtype = found
    bound_ref = Ref(tuple(name.split(".")), ref.position, functions=ref.functions)
    if ref.cast is not None and not widens(dtype, ref.cast):
        rounding = rounding_cast(dtype, ref.cast)
        if rounding is None or ref.functions:
            return Unknown(f"CAST({name} AS {ref.cast}) is not a widening cast of {dtype}", refs=(bound_ref,))
        bound_ref = Ref(bound_ref.path, ref.position, functions=(rounding,))  # order kept, equality not: prunes through images
    if bound_ref.functions:
        result = function_result_type(bound_ref.functions, dtype)
        if result is None:
            return Unknown(f"{bound_ref} does not prune on a column of type {dtype}", refs=(bound_ref,))
        dtype, name = result, str(bound_ref)
    if isinstance(expr, (IsNull, IsNotNull)):
        return type(expr)(bound_ref)
    if isinstance(expr, StartsWith):
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return Unknown(f"LIKE on non-string column {name}", refs=(bound_ref,))
        return StartsWith(bound_ref, expr.prefix, expr.negated)
    if isinstance(expr, (Comparison, In)) and (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) \
            and expr.origin not in (Dialect.TRINO, Dialect.PRESTO):  # Trino refuses varchar = integer: the error stays
        numbers = _numeric_literals(expr)
        if numbers is not None:  # Spark casts the text to the number's type, Hive to DOUBLE: a cast, not an error
            from expressions.functions import StringToNumber

            cast = StringToNumber(integral=expr.origin is not Dialect.HIVE and all(isinstance(v, int) for v in numbers))
            bound_ref = Ref(bound_ref.path, ref.position, functions=(*bound_ref.functions, cast))
            dtype = cast.result_type(dtype) or dtype
    try:
        if isinstance(expr, Comparison):
            return _bind_comparison(expr, bound_ref, dtype)
        if isinstance(expr, In):
            return _bind_in(expr, bound_ref, dtype)
    except CoercionError as exc:
        if strict:
            raise
        return Unknown(str(exc), refs=(bound_ref,))
    raise TypeError(f"cannot bind {expr!r}")


def _numeric_literals(expr: Comparison | In) -> list[Any] | None:
    """The literals' values when every non-null one is a number (not a boolean)."""
    literals = [expr.literal] if isinstance(expr, Comparison) else list(expr.literals)
    values = [lit.value for lit in literals if not lit.is_null]
    if values and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in values):
        return values
    return None


_WIDER = {
    "SMALLINT": lambda t: pa.types.is_int8(t) or pa.types.is_int16(t),
    "INT": lambda t: pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t),
    "BIGINT": pa.types.is_integer,
    "DOUBLE": lambda t: pa.types.is_floating(t) or pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t),
    "FLOAT": lambda t: pa.types.is_float32(t) or pa.types.is_int8(t) or pa.types.is_int16(t),
    "TIMESTAMP": lambda t: pa.types.is_date(t) or pa.types.is_timestamp(t),
    "STRING": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    "VARCHAR": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
}
_WIDER["INTEGER"] = _WIDER["INT"]


def rounding_cast(dtype: pa.DataType, cast: str) -> RoundingCast | None:
    """CAST(integer column AS DOUBLE | FLOAT) where the float cannot hold every
    value exactly: monotone, so it still prunes (as Hudi's own tests expect)."""
    kind = cast.split("(")[0].strip()
    if not pa.types.is_integer(dtype) or kind not in ("DOUBLE", "FLOAT", "REAL"):
        return None
    from expressions.functions import RoundingCast

    return RoundingCast(64 if kind == "DOUBLE" else 32)


def widens(dtype: pa.DataType, cast: str) -> bool:
    """Whether CAST(column AS cast) keeps order and equality of every value,
    so a predicate on the cast holds exactly when it holds on the column."""
    check = _WIDER.get(cast.split("(")[0].strip())
    return bool(check and check(dtype))


def _bind_comparison(expr: Comparison, ref: Ref, dtype: pa.DataType) -> Expr:
    literal = expr.literal
    if literal.is_null:
        if expr.op is Op.NULL_SAFE_EQ:
            return IsNull(ref)
        return AlwaysFalse()  # any comparison with NULL is NULL: never selects
    if literal.value is True and expr.op is Op.EQ and not pa.types.is_boolean(dtype):  # `WHERE amount` reads as amount = TRUE
        raise CoercionError(f"column {ref} of type {dtype} is not a condition: compare it with a value, as in {ref} > 0", ref.position)
    exact, value = coerce(literal, dtype, ref)
    if exact:
        return Comparison(expr.op, ref, Literal(value, str(dtype), literal.position), expr.origin)
    # The literal lies strictly between two representable values.
    low, high = value
    op = expr.op
    if op in (Op.EQ, Op.NULL_SAFE_EQ):
        return AlwaysFalse()
    if op is Op.NE:
        return IsNotNull(ref)
    if op in (Op.GT, Op.GE):
        return Comparison(Op.GE, ref, Literal(high, str(dtype), literal.position), expr.origin)
    return Comparison(Op.LE, ref, Literal(low, str(dtype), literal.position), expr.origin)


def _bind_in(expr: In, ref: Ref, dtype: pa.DataType) -> Expr:
    values: list[Literal] = []
    has_null = False
    if (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) and all(type(lit.value) is str for lit in expr.literals):
        kind = str(dtype)  # strings compared with a string column: bound as they are (a 100,000-key IN list binds at once)
        return In(ref, tuple(Literal(lit.value, kind, lit.position) for lit in expr.literals), expr.negated, expr.origin)
    for literal in expr.literals:
        if literal.is_null:
            has_null = True
            continue
        exact, value = coerce(literal, dtype, ref)
        if exact:
            values.append(Literal(value, str(dtype), literal.position))
    kept = tuple(values)
    if has_null:
        kept = kept + (Literal(None, "null"),)
    if not values and not has_null:
        # No value can be equal: IN is false, NOT IN is true for non-null rows.
        return IsNotNull(ref) if expr.negated else AlwaysFalse()
    return In(ref, kept, expr.negated, expr.origin)


def coerce(literal: Literal, dtype: pa.DataType, ref: Ref) -> tuple[bool, Any]:
    """(True, value) when exact; (False, (below, above)) when the literal
    falls between two values of the type; raises CoercionError otherwise."""
    value, kind = literal.value, literal.kind

    def fail(why: str) -> CoercionError:
        return CoercionError(
            f"literal {_show(literal)} cannot be compared with column {ref} of type {dtype}: {why}",
            literal.position or ref.position,
        )

    try:
        if pa.types.is_boolean(dtype):
            if isinstance(value, bool):
                return True, value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return True, value.lower() == "true"
            raise fail("not a boolean")
        if pa.types.is_integer(dtype):
            number = _number(value, kind, fail)
            if isinstance(number, float) and (math.isnan(number) or math.isinf(number)):
                raise fail("not a finite number")
            exact: Decimal = Decimal(number) if not isinstance(number, Decimal) else number
            low, high = int(exact.to_integral_value(ROUND_FLOOR)), int(exact.to_integral_value(ROUND_CEILING))
            info = _int_range(dtype)
            if low == high:
                if not info[0] <= low <= info[1]:
                    raise fail(f"out of range {info[0]}..{info[1]}")
                return True, low
            return False, (low, high)
        if pa.types.is_floating(dtype):
            number = _number(value, kind, fail)
            return True, float(number)
        if pa.types.is_decimal(dtype):
            number = _number(value, kind, fail)
            if isinstance(number, float):
                if math.isnan(number) or math.isinf(number):
                    raise fail("not a finite number")
                number = Decimal(repr(number))
            quantum = Decimal(1).scaleb(-dtype.scale)
            below = Decimal(number).quantize(quantum, rounding=ROUND_FLOOR)
            above = Decimal(number).quantize(quantum, rounding=ROUND_CEILING)
            if below == above:
                if len(below.as_tuple().digits) > dtype.precision:
                    raise fail(f"more than {dtype.precision} digits")
                return True, below
            return False, (below, above)
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            if isinstance(value, str):
                return True, value
            raise fail("a string column needs a string literal")
        if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
            if isinstance(value, bytes):
                return True, value
            if isinstance(value, str):
                return True, value.encode("utf-8")
            raise fail("not binary")
        if pa.types.is_date(dtype):
            if isinstance(value, datetime):
                if value.time() == datetime.min.time():
                    return True, value.date()
                return False, (value.date(), date.fromordinal(value.date().toordinal() + 1))
            if isinstance(value, date):
                return True, value
            if isinstance(value, str):
                return True, date.fromisoformat(value.strip())
            raise fail("not a date")
        if pa.types.is_timestamp(dtype):
            if isinstance(value, datetime):
                moment = value
            elif isinstance(value, date):
                moment = datetime(value.year, value.month, value.day)
            elif isinstance(value, str):
                moment = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
            else:
                raise fail("not a timestamp")
            if dtype.tz is not None and moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)  # zone-less literals are UTC
            if dtype.tz is None and moment.tzinfo is not None:
                moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
            return True, moment
    except CoercionError:
        raise
    except InvalidOperation:
        raise fail("not a number") from None  # decimal's own text is a list of condition classes
    except (ValueError, OverflowError) as exc:
        raise fail(str(exc)) from None
    raise fail("this column type has no literal coercion")


def _number(value: Any, kind: str, fail: Any) -> int | float | Decimal:
    if isinstance(value, bool):
        raise fail("a boolean is not a number")
    if isinstance(value, (int, float, Decimal)):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            return Decimal(text)
    raise fail(f"a {kind} is not a number")


def _int_range(dtype: pa.DataType) -> tuple[int, int]:
    bits = dtype.bit_width
    if pa.types.is_unsigned_integer(dtype):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _show(literal: Literal) -> str:
    return repr(literal.value) if literal.kind != "string" else f"'{literal.value}'"
