"""Date and time functions: to_date, year..second, date_format,
from_unixtime, to_timestamp/to_date/unix_timestamp with a pattern.

Values are read as wall-clock time in the session zone (`zones`). Each
image is exact where the function is monotone over the file's range and
None elsewhere: `month(c)` over a file spanning two years, `date_format`
with a pattern that is not year-first over the range, a string that does
not parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from functools import cached_property
from typing import Any

import pyarrow as pa

from expressions.functions.base import Function
from expressions.functions.zones import SessionZone
from metadata.util.datetime_pattern import FixedWidthParser, Pattern, Unit, first_difference, fixed_width_parser
from metadata.util.time_zone import EPOCH

UTC_MICROS = pa.timestamp("us", tz="UTC")


def is_datetime(dtype: pa.DataType) -> bool:
    return pa.types.is_date(dtype) or pa.types.is_timestamp(dtype)


def is_string(dtype: pa.DataType) -> bool:
    return pa.types.is_string(dtype) or pa.types.is_large_string(dtype)


# Spark's cast of a string to DATE: trimmed, a year of 4 to 7 digits, then
# optional -[m]m, -[d]d and a time part after ' ' or 'T'.
_SPARK_DATE = re.compile(r"([+-]?\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?", re.DOTALL)


def spark_string_to_date(text: str) -> date | None:
    match = _SPARK_DATE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day = match.groups()
    try:
        return date(int(year), int(month or 1), int(day or 1))
    except ValueError:
        return None


@dataclass(frozen=True)
class ToDate(Function):
    """`to_date(c)` / `CAST(c AS DATE)`: the local date of a timestamp; a
    string is cast as Spark casts it, which is not monotone (`2021-1-5`
    sorts after `2021-01-31`), so string files prune only when one value."""

    zone: SessionZone = field(default_factory=SessionZone)

    def total_on(self, source: pa.DataType) -> bool:
        return not is_string(source)  # an unparseable string is NULL

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.date32() if is_datetime(source) or is_string(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if isinstance(value, str):
            return spark_string_to_date(value)
        return self.zone.local(value).date()

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if isinstance(low, str):
            value = spark_string_to_date(low)
            return (value, value) if low == high and value is not None else None
        bounds = self.zone.local_range(low, high)
        return None if bounds is None else (bounds[0].date(), bounds[1].date())

    def sql(self, inner: str) -> str:
        return f"to_date({inner})"


@dataclass(frozen=True)
class ToTimestamp(Function):
    """`CAST(c AS TIMESTAMP)` of a date (its local midnight) or a timestamp (itself)."""

    zone: SessionZone = field(default_factory=SessionZone)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if pa.types.is_timestamp(source):
            return source
        return UTC_MICROS if pa.types.is_date(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if isinstance(value, datetime):
            return value
        return self.zone.instant(self.zone.local(value))

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if isinstance(low, datetime):
            return low, high
        return self.zone.instant_range(self.zone.local(low), self.zone.local(high))

    def sql(self, inner: str) -> str:
        return f"CAST({inner} AS TIMESTAMP)"


_PART_NAMES = {Unit.YEAR: "year", Unit.MONTH: "month", Unit.DAY: "day", Unit.HOUR: "hour", Unit.MINUTE: "minute", Unit.SECOND: "second"}


@dataclass(frozen=True)
class DatePart(Function):
    """`year(c)`, `month(c)`, `day(c)`, `hour(c)`, `minute(c)`, `second(c)`:
    monotone over a range where every more significant field is constant
    (`month` within one year, `hour` within one day; `year` always)."""

    unit: Unit
    zone: SessionZone = field(default_factory=SessionZone)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if pa.types.is_date(source) and self.unit > Unit.DAY:
            return None  # Spark casts the date to a timestamp first; no pruning there
        return pa.int32() if is_datetime(source) and self.unit is not Unit.FRACTION else None

    def _part(self, moment: datetime) -> int:
        return int((moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)[self.unit])

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return self._part(self.zone.local(value))

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        bounds = self.zone.local_range(low, high)
        if bounds is None:
            return None
        first = first_difference(*bounds)
        if first is not None and first < self.unit:
            return None
        return self._part(bounds[0]), self._part(bounds[1])

    def sql(self, inner: str) -> str:
        return f"{_PART_NAMES[self.unit]}({inner})"


@dataclass(frozen=True)
class DateFormat(Function):
    """`date_format(c, pattern)`: monotone where `Pattern.monotone_over` says so.
    Hudi prunes with any pattern, which drops matching files
    (`MM/dd/yyyy` over 2021-12-31..2022-01-01); this does not."""

    pattern: Pattern
    zone: SessionZone = field(default_factory=SessionZone)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return pa.string() if is_datetime(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        return self.pattern.format(self.zone.local(value))

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        bounds = self.zone.local_range(low, high)
        if bounds is None or not self.pattern.monotone_over(*bounds):
            return None
        return self.pattern.format(bounds[0]), self.pattern.format(bounds[1])

    def sql(self, inner: str) -> str:
        return f"date_format({inner}, '{_quote(self.pattern.text)}')"


@dataclass(frozen=True)
class SecondsToTimestamp(Function):
    """The instant of a number of seconds since the epoch (inside `from_unixtime`);
    NULL beyond the years 1..9999 Python represents."""

    def total_on(self, source: pa.DataType) -> bool:
        return False

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        return UTC_MICROS if pa.types.is_integer(source) else None

    def apply(self, value: Any, source: pa.DataType) -> Any:
        try:
            moment = EPOCH + timedelta(seconds=int(value))
        except OverflowError:
            return None
        return moment if 1 <= moment.year <= 9999 else None

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        low, high = self.apply(low, source), self.apply(high, source)
        return None if low is None or high is None else (low, high)

    def sql(self, inner: str) -> str:
        return f"timestamp_seconds({inner})"


@dataclass(frozen=True)
class ParseTime(Function):
    """`to_date(s, pattern)`, `to_timestamp(s, pattern)` and the parse inside
    `unix_timestamp(s, pattern)`, for fixed-width year-first patterns only
    (`FixedWidthParser`). A string that does not parse is NULL (an error
    under ANSI), so the function is not total."""

    pattern: Pattern
    to_date: bool
    zone: SessionZone = field(default_factory=SessionZone)

    def total_on(self, source: pa.DataType) -> bool:
        return False  # a string that does not parse is NULL

    @cached_property
    def parser(self) -> FixedWidthParser | None:
        return fixed_width_parser(self.pattern)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if not is_string(source) or self.parser is None:
            return None
        return pa.date32() if self.to_date else UTC_MICROS

    def apply(self, value: Any, source: pa.DataType) -> Any:
        parser = self.parser
        local = parser.parse(value) if parser else None
        if local is None:
            return None
        return local.date() if self.to_date else self.zone.instant(local)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        parser = self.parser
        if parser is None:
            return None
        first, last = parser.parse(low), parser.parse(high)
        if first is None or last is None:
            return None  # strings between them may parse to anything
        if self.to_date:
            return first.date(), last.date()
        return self.zone.instant_range(first, last)

    def sql(self, inner: str) -> str:
        name = "to_date" if self.to_date else "to_timestamp"
        return f"{name}({inner}, '{_quote(self.pattern.text)}')"


@dataclass(frozen=True)
class UnixSeconds(Function):
    """`unix_timestamp(c[, pattern])`: seconds since the epoch (floor) of a
    timestamp, of a date's local midnight, or of a string parsed with a
    fixed-width pattern (`ParseTime`)."""

    pattern: Pattern | None = None
    zone: SessionZone = field(default_factory=SessionZone)

    @cached_property
    def parse(self) -> ParseTime | None:
        return ParseTime(self.pattern, False, self.zone) if self.pattern is not None else None

    @cached_property
    def as_instant(self) -> ToTimestamp:
        return ToTimestamp(self.zone)

    def total_on(self, source: pa.DataType) -> bool:
        return not is_string(source)

    def result_type(self, source: pa.DataType) -> pa.DataType | None:
        if is_string(source):
            return pa.int64() if self.parse is not None and self.parse.result_type(source) is not None else None
        return pa.int64() if is_datetime(source) else None

    @staticmethod
    def _seconds(moment: datetime) -> int:
        if moment.tzinfo is None:  # a zone-less timestamp counts from the epoch as it is
            moment = moment.replace(tzinfo=timezone.utc)
        return (moment - EPOCH) // timedelta(seconds=1)

    def apply(self, value: Any, source: pa.DataType) -> Any:
        if isinstance(value, str):
            moment = self.parse.apply(value, source) if self.parse else None
        else:
            moment = self.as_instant.apply(value, source)
        return None if moment is None else self._seconds(moment)

    def image(self, low: Any, high: Any, source: pa.DataType) -> tuple[Any, Any] | None:
        if isinstance(low, str):
            bounds = self.parse.image(low, high, source) if self.parse else None
        else:
            bounds = self.as_instant.image(low, high, source)
        return None if bounds is None else (self._seconds(bounds[0]), self._seconds(bounds[1]))

    def sql(self, inner: str) -> str:
        if self.pattern is None:
            return f"unix_timestamp({inner})"
        return f"unix_timestamp({inner}, '{_quote(self.pattern.text)}')"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


# functions of a date's calendar, equal on a date and on its local midnight
_CALENDAR = (ToDate, DatePart, DateFormat, UnixSeconds)


def normalise(functions: tuple[Function, ...]) -> tuple[Function, ...]:
    """The shortest equal chain: to_date(to_date(c)) is to_date(c) (sqlglot
    wraps `year(c)` in one), and a cast to TIMESTAMP under a calendar
    function changes nothing (a date is its local midnight either way;
    Trino's SQL prints such casts)."""
    result: list[Function] = []
    for function in functions:
        if isinstance(function, _CALENDAR) and result and isinstance(result[-1], ToTimestamp):
            result.pop()
        if isinstance(function, ToDate) and result and isinstance(result[-1], ToDate):
            continue
        result.append(function)
    return tuple(result)
