"""Order-preserving functions of one column, as data skipping uses them.

A predicate on `f(c)` prunes with c's statistics when f is monotone over the
file's [min, max]: every value of f(c) then lies between f(min) and f(max)
(swapped for decreasing f). Each function answers that question per file
(`image`), not once for all inputs, which is what makes `date_format`,
`month` or `lower` usable where they are monotone and harmless where not:
an answer of None keeps the file.

Functions are immutable values (part of `Ref`), evaluate rows exactly
(`apply`, with the engine's NULL rules) and print as Spark SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa


class Function:
    """A function of the value it is applied to (constants are fields)."""

    def total_on(self, source: pa.DataType) -> bool:
        """Whether f(x) is NULL exactly when x is NULL on such a column (then
        the column's null counts are f(c)'s)."""
        return True

    def total_within_image(self, source: pa.DataType) -> bool:
        """Whether f(x) is NULL exactly when x is NULL for every x of a file
        whose image f gives. Integer arithmetic is NULL on overflow, not total,
        but it gives no image to a file it could overflow on: null counts then
        carry over to the files with an image."""
        return self.total_on(source)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        """The type of f(c) for a column of type `source`, or None when f
        does not prune on such a column (the leaf then keeps every file)."""
        raise NotImplementedError

    def apply(self, value: Any, source: pa.DataType) -> Any:
        """f(value) for one row value (None for NULL)."""
        raise NotImplementedError

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        """Bounds of f over every value in [low, high], or None when f is not
        known to be monotone there (or the bounds cannot be computed)."""
        raise NotImplementedError

    def sql(self, inner: str) -> str:
        """Spark SQL text of f applied to `inner`."""
        raise NotImplementedError

    def image_arrays(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> tuple[pa.Array, pa.Array] | None:
        """`image` of every file at once (null bounds where f gives none), or
        None when f has no vectorised form (the caller then goes file by file).
        Must never give narrower bounds than `image`."""
        return None


def apply_all(functions: tuple[Function, ...], value: Any, source: pa.DataType) -> Any:
    for function in functions:
        if value is None:
            return None
        value, source = function.apply(value, source), _result(function, source)
    return value


def image_all(functions: tuple[Function, ...], low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
    """Bounds of the composition over [low, high]: each function's image of
    the previous bounds (a superset of the values, so still sound)."""
    bounds: tuple[Any, Any] | None = (low, high)
    for function in functions:
        if bounds is None or bounds[0] is None or bounds[1] is None:
            return None
        bounds, source = function.image(bounds[0], bounds[1], source), _result(function, source)
    return bounds


def image_all_arrays(functions: tuple[Function, ...], low: pa.Array, high: pa.Array,
                     source: pa.DataType) -> tuple[pa.Array, pa.Array] | None:
    """`image_all` over arrays of bounds, or None when some function has no vectorised form."""
    for function in functions:
        images = function.image_arrays(low, high, source)
        if images is None:
            return None
        (low, high), source = images, _result(function, source)
    return low, high


def result_type(functions: tuple[Function, ...], source: pa.DataType) -> pa.DataType | None:
    current: pa.DataType | None = source
    for function in functions:
        if current is None:
            return None
        current = function.result_type(current)
    return current


def all_total(functions: tuple[Function, ...], source: pa.DataType) -> bool:
    return _each(functions, source, lambda function, on: function.total_on(on))  # each function's own override


def all_total_within_image(functions: tuple[Function, ...], source: pa.DataType) -> bool:
    return _each(functions, source, lambda function, on: function.total_within_image(on))


def _each(functions: tuple[Function, ...], source: pa.DataType, holds: Callable[[Function, pa.DataType], bool]) -> bool:
    """Whether `holds` for every function of the chain, each on the type the previous one gives."""
    for function in functions:
        if not holds(function, source):
            return False
        source = _result(function, source)
    return True


def to_sql(functions: tuple[Function, ...], column: str) -> str:
    text = column
    for function in functions:
        text = function.sql(text)
    return text


def _result(function: Function, source: pa.DataType) -> pa.DataType:
    found = function.result_type(source)
    if found is None:
        raise TypeError(f"{function.sql('c')} does not apply to {source}")
    return found
