"""Java/Spark/Joda datetime patterns (`yyyy-MM-dd HH`), as far as pruning
and Hudi's TIMESTAMP key generator need.

A pattern is read into fields and literal text. Formatting supports the
letters whose output depends only on the calendar fields (y, M/L, d, H, m,
s, S); a pattern with any other letter does not prune. `monotone_over`
decides whether formatting is order-preserving between two datetimes;
`fixed_width_parser` gives a parser when parsing is order-preserving.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import IntEnum


class Unit(IntEnum):
    """Calendar fields from most to least significant."""

    YEAR = 0
    MONTH = 1
    DAY = 2
    HOUR = 3
    MINUTE = 4
    SECOND = 5
    FRACTION = 6


_LETTERS = {"y": Unit.YEAR, "M": Unit.MONTH, "L": Unit.MONTH, "d": Unit.DAY, "H": Unit.HOUR, "m": Unit.MINUTE, "s": Unit.SECOND, "S": Unit.FRACTION}


@dataclass(frozen=True)
class Field:
    unit: Unit
    width: int  # how many pattern letters

    def format(self, moment: datetime) -> str:
        unit, width = self.unit, self.width
        if unit is Unit.YEAR:
            year = moment.year
            if width == 2:
                return f"{year % 100:02d}"
            text = f"{year:0{width}d}"
            return "+" + text if width == 4 and year > 9999 else text  # Java's EXCEEDS_PAD sign
        if unit is Unit.MONTH and width >= 3:
            return (calendar.month_abbr if width == 3 else calendar.month_name)[moment.month]
        if unit is Unit.FRACTION:
            return f"{moment.microsecond:06d}"[:width].ljust(width, "0")
        value = {Unit.MONTH: moment.month, Unit.DAY: moment.day, Unit.HOUR: moment.hour, Unit.MINUTE: moment.minute, Unit.SECOND: moment.second}[unit]
        return f"{value:0{width}d}"

    def fixed_width(self, low: datetime, high: datetime) -> bool:
        """Whether every value between low and high prints in the same number
        of digits (so that string order is numeric order)."""
        if self.unit is Unit.YEAR:
            return self.width == 4 and 1000 <= low.year and high.year <= 9999
        if self.unit is Unit.MONTH:
            return self.width == 2
        return self.unit is Unit.FRACTION or self.width == 2


@dataclass(frozen=True)
class Offset:
    """A zone offset (`Z`, `XXX`): `Z`, `+0100` or `+01:00`; parse only."""

    def format(self, moment: datetime) -> str:
        raise ValueError("zone offsets are parsed here, not formatted")


@dataclass(frozen=True)
class Pattern:
    text: str
    parts: tuple[Field | Offset | str, ...]

    @property
    def fields(self) -> list[Field]:
        return [p for p in self.parts if isinstance(p, Field)]

    @property
    def has_offset(self) -> bool:
        return any(isinstance(p, Offset) for p in self.parts)

    def format(self, moment: datetime) -> str:
        return "".join(p if isinstance(p, str) else p.format(moment) for p in self.parts)

    def monotone_over(self, low: datetime, high: datetime) -> bool:
        """Whether formatting keeps order for every datetime in [low, high].

        Fields above the most significant one in which low and high differ
        are constant there. The others must follow it in order of
        significance, one unit after another, each printed in fixed width:
        then the first differing character compares the most significant
        differing field. A field after a skipped unit (`yyyy-dd`), out of
        order (`MM/dd/yyyy` across years) or of varying width is not monotone.
        """
        first = first_difference(low, high)
        if first is None:
            return True
        expected: int = first
        for field in self.fields:
            if field.unit < first:
                continue
            if field.unit != expected or not field.fixed_width(low, high):
                return False
            expected = field.unit + 1  # after a fraction nothing more may vary
        return True


def first_difference(low: datetime, high: datetime) -> Unit | None:
    pairs = [(low.year, high.year), (low.month, high.month), (low.day, high.day), (low.hour, high.hour),
             (low.minute, high.minute), (low.second, high.second), (low.microsecond, high.microsecond)]
    for unit, (a, b) in zip(Unit, pairs):
        if a != b:
            return unit
    return None


_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")


def parse_pattern(text: str, offsets: bool = False) -> Pattern | None:
    """The pattern's fields and literals, or None when a letter is not one
    formatting supports (day names, AM/PM, week fields, zones; zone offsets
    `Z`/`X` with `offsets`, for parsing)."""
    parts: list[Field | Offset | str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token.startswith("'"):
            parts.append(token[1:-1].replace("''", "'") if token != "''" else "'")
        elif offsets and token[0] in "ZX" and len(token) <= 3:
            parts.append(Offset())
        elif token[0].isalpha():
            unit = _LETTERS.get(token[0])
            if unit is None or (unit is Unit.YEAR and len(token) == 3) or (unit is not Unit.FRACTION and len(token) > 4):
                return None
            parts.append(Field(unit, len(token)))
        else:
            parts.append(token)
    if "".join(m.group(0) for m in _TOKEN.finditer(text)) != text:
        return None
    return Pattern(text, tuple(parts))


@dataclass(frozen=True)
class FixedWidthParser:
    """Parses strings of one fixed-width, year-first pattern (`yyyy-MM-dd`,
    `yyyyMMddHH`...). Among strings it accepts, string order is time order,
    and Spark's parser accepts no other string between two it accepts
    (a sign or a fifth year digit sorts outside), so parsing is monotone
    over a file whose min and max both parse."""

    regex: re.Pattern[str]
    units: tuple[Unit, ...]
    has_offset: bool = False  # a trailing zone offset: aware results, string order is not time order

    def parse(self, text: str) -> datetime | None:
        match = self.regex.fullmatch(text)
        if match is None:
            return None
        values = [1, 1, 1, 0, 0, 0, 0]
        groups = match.groups()
        for unit, group in zip(self.units, groups):
            values[unit] = int(group.ljust(6, "0")[:6]) if unit is Unit.FRACTION else int(group)
        try:
            moment = datetime(*values)  # type: ignore[arg-type]
        except ValueError:
            return None  # 2021-02-30: no such day
        if not self.has_offset:
            return moment
        offset = groups[-1]
        if offset == "Z":
            return moment.replace(tzinfo=timezone.utc)
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        return moment.replace(tzinfo=timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))))


def fixed_width_parser(pattern: Pattern) -> FixedWidthParser | None:
    """A parser when the pattern's fields are year, month, day... in order
    from the year, each of fixed width, separated by non-digit literals."""
    regex, units = "", list[Unit]()
    for index, part in enumerate(pattern.parts):
        if isinstance(part, Offset):
            if index != len(pattern.parts) - 1:
                return None
            return FixedWidthParser(re.compile(regex + r"(Z|[+-]\d{2}:?\d{2})"), tuple(units), True) if units else None
        if isinstance(part, str):
            if any(ch.isdigit() for ch in part):
                return None
            regex += re.escape(part)
            continue
        expected = Unit(len(units)) if len(units) < len(Unit) else None
        if part.unit != expected:
            return None
        width = 4 if part.unit is Unit.YEAR else 2 if part.unit is not Unit.FRACTION else part.width
        if part.width != width or (part.unit is Unit.MONTH and part.width != 2):
            return None
        regex += rf"(\d{{{width}}})"
        units.append(part.unit)
    if not units:
        return None
    return FixedWidthParser(re.compile(regex), tuple(units))
