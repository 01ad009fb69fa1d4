"""`c + k`, `c - k`, `c * k`, `c / k` and `-c` with constant k.

Integer results are checked against the integer range Spark computes in
(the column's type, or BIGINT for a BIGINT constant): a file whose bounds
overflow keeps its place, since a wrapped (non-ANSI) result is not monotone.
Floating results are widened outward by one ulp, so Spark's exact decimal
arithmetic (`c * 1.5`) and double arithmetic both stay inside the bounds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from expressions.functions.base import Function
from metadata.util import arrow_values
from metadata.util.arrow_values import from_numpy, scalar, to_numpy

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


def _may_overflow(source: pa.DataType, constant: Number) -> bool:
    """Whether `apply` can give NULL for a non-NULL value: integer results
    outside BIGINT and dates outside the calendar are NULL here."""
    return (pa.types.is_integer(source) or pa.types.is_date(source)) and _is_int_constant(constant)


def _outward(low: float, high: float) -> tuple[float, float]:
    return math.nextafter(low, -math.inf), math.nextafter(high, math.inf)


# Vectorised images: the same arithmetic as `image`, on all files at once -------------
_DATE_DAYS = ((date(1, 1, 1) - date(1970, 1, 1)).days, (date(9999, 12, 31) - date(1970, 1, 1)).days)  # Python's date range
Bounds = tuple[pa.Array, pa.Array]


def _values(array: pa.Array, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, validity) of a bounds array."""
    valid = to_numpy(array.is_valid())
    filled = pc.fill_null(array, scalar(0, array.type)) if array.null_count else array
    return np.asarray(to_numpy(filled)).astype(dtype), valid


def _int_images(low: pa.Array, high: pa.Array, source: pa.DataType, constant: Number, factor: int, offset: int) -> Bounds | None:
    """Bounds of `c * factor + offset` for integer bounds; a file whose result
    could leave Spark's integer range gets null bounds (it stays)."""
    if pa.types.is_uint64(source) or not all(_INT64[0] <= n <= _INT64[1] for n in (factor, offset)):
        return None
    first, last = _int_range(source, constant)
    lows, low_ok = _values(low, np.int64)
    highs, high_ok = _values(high, np.int64)
    if factor < 0:
        lows, highs, low_ok, high_ok = highs, lows, high_ok, low_ok
    ok = low_ok & high_ok
    if factor > 0:  # low * f + o >= first and high * f + o <= last
        ok &= _at_least(lows, -((offset - first) // factor)) & _at_most(highs, (last - offset) // factor)
    elif factor < 0:  # decreasing: the new low comes from the old high
        ok &= _at_most(lows, (first - offset) // factor) & _at_least(highs, -((offset - last) // factor))
    elif not first <= offset <= last:
        ok &= False
    lows, highs = np.where(ok, lows, 0), np.where(ok, highs, 0)
    return (from_numpy((lows * factor + offset).astype(np.int64), valid=ok),
            from_numpy((highs * factor + offset).astype(np.int64), valid=ok))


def _at_least(values: np.ndarray, limit: int) -> np.ndarray:
    if limit > _INT64[1]:
        return np.zeros(len(values), dtype=bool)
    return values >= max(limit, _INT64[0])


def _at_most(values: np.ndarray, limit: int) -> np.ndarray:
    if limit < _INT64[0]:
        return np.zeros(len(values), dtype=bool)
    return values <= min(limit, _INT64[1])


def _float_images(low: pa.Array, high: pa.Array, operation: Any, decreasing: bool) -> Bounds:
    """`operation` on float64 bounds, widened outward by one ulp (as `_outward`)."""
    lows, low_ok = _values(low, np.float64)
    highs, high_ok = _values(high, np.float64)
    if decreasing:
        lows, highs, low_ok, high_ok = highs, lows, high_ok, low_ok
    ok = low_ok & high_ok
    with np.errstate(all="ignore"):
        new_low = np.nextafter(operation(lows), -np.inf)
        new_high = np.nextafter(operation(highs), np.inf)
    return from_numpy(np.asarray(new_low, np.float64), valid=ok), from_numpy(np.asarray(new_high, np.float64), valid=ok)


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

    def total_on(self, source: pa.DataType) -> bool:
        return not _may_overflow(source, self.constant)

    def total_within_image(self, source: pa.DataType) -> bool:
        return True  # an overflowing file gets no image

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

    def image_arrays(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> Bounds | None:
        if pa.types.is_date32(source):
            if not _is_int_constant(self.constant):
                return None
            shifted = _int_images(low.cast(pa.int32()), high.cast(pa.int32()), pa.int64(), 0, 1, int(self.constant))
            if shifted is None:
                return None
            in_range = [pc.and_(pc.greater_equal(b, _DATE_DAYS[0]), pc.less_equal(b, _DATE_DAYS[1])) for b in shifted]
            ok = pc.fill_null(pc.and_(*in_range), arrow_values.FALSE)
            low_days, high_days = (pc.if_else(ok, b, arrow_values.scalar(None, pa.int64())).cast(pa.int32()).cast(pa.date32()) for b in shifted)
            return low_days, high_days
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _int_images(low, high, source, self.constant, 1, int(self.constant))
        if pa.types.is_integer(source) or pa.types.is_floating(source):
            k = float(self.constant)
            return _float_images(low, high, lambda v: v + k, decreasing=False)
        return None

    def sql(self, inner: str) -> str:
        if self.constant < 0:
            return f"({inner} - {-self.constant})"
        return f"({inner} + {self.constant})"


@dataclass(frozen=True)
class Multiply(Function):
    """`c * k` (`-c` is k = -1): decreasing for a negative k."""

    constant: Number

    def total_on(self, source: pa.DataType) -> bool:
        return not _may_overflow(source, self.constant)

    def total_within_image(self, source: pa.DataType) -> bool:
        return True  # an overflowing file gets no image

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

    def image_arrays(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> Bounds | None:
        if pa.types.is_integer(source) and _is_int_constant(self.constant):
            return _int_images(low, high, source, self.constant, int(self.constant), 0)
        if pa.types.is_floating(source):  # an integer times a fraction is exact in `apply`: file by file
            k = float(self.constant)
            return _float_images(low, high, lambda v: v * k, decreasing=self.constant < 0)
        return None

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

    def image_arrays(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> Bounds | None:
        if self.result_type(source) is None:
            return None
        k = float(self.constant)
        return _float_images(low, high, lambda v: v / k, decreasing=self.constant < 0)

    def sql(self, inner: str) -> str:
        return f"({inner} / {self.constant})"


@dataclass(frozen=True)
class RoundingCast(Function):
    """CAST(c AS DOUBLE | FLOAT) of an integer column too wide for the
    floating type to hold exactly (BIGINT to DOUBLE, INT to FLOAT): rounding
    to the nearest float keeps order (a <= b gives f(a) <= f(b)) but not
    equality, so it prunes through the images of the bounds, never as the
    column itself."""

    bits: int  # 64: DOUBLE, 32: FLOAT

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return (pa.float64() if self.bits == 64 else pa.float32()) if pa.types.is_integer(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return float(value) if self.bits == 64 else float(np.float32(value))

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        return self.apply(low, source), self.apply(high, source)

    def image_arrays(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> tuple[pa.Array, pa.Array] | None:
        target = self.result_type(source)
        return (pc.cast(low, target, safe=False), pc.cast(high, target, safe=False)) if target is not None else None

    def sql(self, inner: str) -> str:
        return f"CAST({inner} AS {'DOUBLE' if self.bits == 64 else 'FLOAT'})"


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


@dataclass(frozen=True)
class StringToNumber(Function):
    """A string column compared with a number: Spark casts the text to the
    number's type (BIGINT, dropping a fraction, or DOUBLE); text that is no
    number is NULL. Text order is not number order ('10' < '9'), so a string
    column's bounds give no image and the file stays."""

    integral: bool  # BIGINT, else DOUBLE

    def total_on(self, source: pa.DataType) -> bool:
        return False

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if not (pa.types.is_string(source) or pa.types.is_large_string(source)):
            return None
        return pa.int64() if self.integral else pa.float64()

    def apply(self, value: Any, source: pa.DataType) -> Any:
        text = str(value).strip()
        if self.integral:
            if not _NUMBER_TEXT.fullmatch(text):
                return None
            number = int(Decimal(text))
            return number if -(2**63) <= number < 2**63 else None
        try:
            return float(text)
        except ValueError:
            return None

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        return None

    def sql(self, inner: str) -> str:
        return f"CAST({inner} AS {'BIGINT' if self.integral else 'DOUBLE'})"
