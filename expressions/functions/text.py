"""`lower(c)` and `upper(c)`.

Neither keeps order (`'B' < 'a'` but `lower('B') > 'a'`), which is why
Hudi's use of them is unsound. What holds: every string between min and
max starts with their common prefix, so f of every such string starts with
f of that prefix. The image is the range of strings with that prefix (the
prefix cut before its first non-ASCII character, whose case mapping may
depend on what follows, as Σ does); a file holding one value is exact.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from expressions.functions.base import Function


def after_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with `prefix`."""
    for cut in range(len(prefix), 0, -1):
        last = ord(prefix[cut - 1])
        if last < 0x10FFFF:
            step = 1 if not 0xD7FF <= last < 0xE000 else 0xE000 - last
            return prefix[: cut - 1] + chr(last + step)
    return None


@dataclass(frozen=True)
class ChangeCase(Function):
    upper: bool

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.string() if pa.types.is_string(source) or pa.types.is_large_string(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return value.upper() if self.upper else value.lower()

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if low == high:
            value = self.apply(low, source)
            return value, value
        shared = os.path.commonprefix([low, high])
        ascii_end = next((i for i, ch in enumerate(shared) if ord(ch) > 0x7F), len(shared))
        prefix = self.apply(shared[:ascii_end], source)
        above = after_prefix(prefix)
        if not prefix or above is None:
            return None
        return prefix, above

    def sql(self, inner: str) -> str:
        return f"{'upper' if self.upper else 'lower'}({inner})"


@dataclass(frozen=True)
class Substring(Function):
    """`substring(c, pos, len)` as Spark's `UTF8String.substringSQL`: 1-based
    `pos` (0 reads as 1, a negative one counts from the end), at most `len`
    characters. A prefix (`pos` 1 or 0) keeps order: strings that first
    differ within the prefix keep their order, and the others have equal
    prefixes. Any other cut does not, and keeps files unless one value."""

    pos: int
    length: int

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.string() if pa.types.is_string(source) or pa.types.is_large_string(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        start = self.pos - 1 if self.pos > 0 else (len(value) + self.pos if self.pos < 0 else 0)
        end = start + self.length
        start = max(start, 0)
        return value[start:end] if start < end else ""

    @property
    def is_prefix(self) -> bool:
        return self.pos in (0, 1) and self.length > 0

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if low == high or self.is_prefix:
            return self.apply(low, source), self.apply(high, source)
        return None

    def sql(self, inner: str) -> str:
        return f"substring({inner}, {self.pos}, {self.length})"


# What `trim` removes when no characters are given: Spark's and Hive's the
# space alone; Trino's and Presto's every whitespace character (Java's
# Character.isWhitespace). The chain keeps the set, so an index built with
# one is not taken for a predicate with the other.
SPACE = " "
JAVA_WHITESPACE = "".join(chr(c) for c in (*range(0x09, 0x0E), *range(0x1C, 0x21), 0x1680, *range(0x2000, 0x2007),
                                           *range(0x2008, 0x200B), 0x2028, 0x2029, 0x205F, 0x3000))


@dataclass(frozen=True)
class Trim(Function):
    """`trim`, `ltrim`, `rtrim` (`trim(LEADING 'x' FROM c)`): characters of
    `chars` removed from the start, the end or both. Not order-preserving:
    a file prunes only when it holds one value."""

    side: str  # "both", "leading", "trailing"
    chars: str = SPACE

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.string() if pa.types.is_string(source) or pa.types.is_large_string(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if self.side == "leading":
            return value.lstrip(self.chars)
        if self.side == "trailing":
            return value.rstrip(self.chars)
        return value.strip(self.chars)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if low != high:
            return None
        value = self.apply(low, source)
        return value, value

    def sql(self, inner: str) -> str:
        if self.chars == SPACE:
            return {"both": "trim", "leading": "ltrim", "trailing": "rtrim"}[self.side] + f"({inner})"
        quoted = self.chars.replace("\\", "\\\\").replace("'", "\\'")
        return f"trim({self.side.upper()} '{quoted}' FROM {inner})"


@dataclass(frozen=True)
class Length(Function):
    """`length(c)` of a string: its characters (code points). Not order-preserving."""

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.int32() if pa.types.is_string(source) or pa.types.is_large_string(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return len(value)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        return (len(low), len(low)) if low == high else None

    def sql(self, inner: str) -> str:
        return f"length({inner})"
