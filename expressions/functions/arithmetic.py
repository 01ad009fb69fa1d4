"""`c + k`, `c - k`, `c * k`, `c / k` and `-c` with constant k.

Integer results are checked against the integer range Spark computes in
(the column's type, or BIGINT for a BIGINT constant): a file whose bounds
overflow keeps its place, since a wrapped (non-ANSI) result is not monotone.
Floating results are widened outward by one ulp, so Spark's exact decimal
arithmetic (`c * 1.5`) and double arithmetic both stay inside the bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa

from expressions.functions.base import Function

Number = int | float | Decimal
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _int_range(source: pa.DataType, constant: Number) -> tuple[int, int]:
    """The range of Spark's integer result: the wider of column and constant."""
    if pa.types.is_int64(source) or not _INT32[0] <= int(constant) <= _INT32[1]:
        return _INT64
    return _INT32


def _in_int64(result: int) -> int | None:
    return result if _INT64[0] <= result <= _INT64[1] else None


def _int_bounds(low: int, high: int, source: pa.DataType, constant: Number) -> tuple[int, int] | None:
    """Integer bounds of f, or None when Spark's result could overflow (and wrap)."""
    first, last = _int_range(source, constant)
    return (low, high) if first <= low and high <= last else None


def _is_int_constant(value: Number) -> bool:
    return isinstance(value, int) or (isinstance(value, Decimal) and value == value.to_integral_value())


def _outward(low: float, high: float) -> tuple[float, float]:
    return math.nextafter(low, -math.inf), math.nextafter(high, math.inf)


def _numeric_result(source: pa.DataType, constant: Number) -> pa.DataType | None:
    if pa.types.is_integer(source):
        return pa.int64() if _is_int_constant(constant) else pa.float64()
    if pa.types.is_floating(source):
        return pa.float64()
    return None  # decimals keep every file for now: their result scale is Spark's own rule


@dataclass(frozen=True)
class Add(Function):
    """`c + k` (`c - k` is k negated); on a DATE column, k days (Spark's date + int)."""

    constant: Number

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if pa.types.is_date(source):
            return pa.date32() if _is_int_constant(self.constant) else None
        return _numeric_result(source, self.constant)

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if isinstance(value, date):
            try:
                return value + timedelta(days=int(self.constant))
            except OverflowError:
                return None
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _in_int64(int(value) + int(self.constant))
        return float(value) + float(self.constant)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if pa.types.is_date(source):
            low, high = self.apply(low, source), self.apply(high, source)
            return None if low is None or high is None else (low, high)
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _int_bounds(int(low) + int(self.constant), int(high) + int(self.constant), source, self.constant)
        return _outward(float(low) + float(self.constant), float(high) + float(self.constant))

    def sql(self, inner: str) -> str:
        if self.constant < 0:
            return f"({inner} - {-self.constant})"
        return f"({inner} + {self.constant})"


@dataclass(frozen=True)
class Multiply(Function):
    """`c * k` (`-c` is k = -1): decreasing for a negative k."""

    constant: Number

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if pa.types.is_floating(source) and self.constant == 0:
            return None  # inf * 0 is NaN: not monotone
        return _numeric_result(source, self.constant)

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _in_int64(int(value) * int(self.constant))
        return float(Decimal(value) * Decimal(self.constant)) if pa.types.is_integer(source) else float(value) * float(self.constant)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if self.constant < 0:
            low, high = high, low
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _int_bounds(int(low) * int(self.constant), int(high) * int(self.constant), source, self.constant)
        return _outward(self.apply(low, source), self.apply(high, source))

    def sql(self, inner: str) -> str:
        if self.constant == -1:
            return f"(- {inner})"
        return f"({inner} * {self.constant})"


@dataclass(frozen=True)
class Divide(Function):
    """`c / k` for a non-zero k: a DOUBLE in Spark, decreasing for a negative k."""

    constant: Number

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if self.constant == 0 or not (pa.types.is_integer(source) or pa.types.is_floating(source)):
            return None
        return pa.float64()

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return float(value) / float(self.constant)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if self.constant < 0:
            low, high = high, low
        return _outward(self.apply(low, source), self.apply(high, source))

    def sql(self, inner: str) -> str:
        return f"({inner} / {self.constant})"
