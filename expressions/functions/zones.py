"""Session time zones: local wall-clock time of an instant and back.

Spark evaluates `hour(ts)`, `to_date(ts)`, `date_format(ts, ...)` and
`to_timestamp(s, ...)` in the session time zone. A fixed offset (UTC,
`+05:30`) maps instants to wall-clock time monotonically. A zone with
daylight saving time does not (clocks go back), so ranges are widened by
the largest offset any zone can have (18 hours, java.time's bound): sound
for every zone, and still strong for day-level and coarser predicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from functools import cached_property

from expressions.errors import ExpressionError
from metadata.util.time_zone import fixed_offset, time_zone

MAX_OFFSET = timedelta(hours=18)


@dataclass(frozen=True)
class SessionZone:
    name: str = "UTC"

    def __post_init__(self) -> None:
        self.tz  # noqa: B018  # an unknown zone fails where it is given

    @cached_property
    def fixed(self) -> timedelta | None:
        return fixed_offset(self.name)

    @cached_property
    def tz(self) -> tzinfo:
        found = time_zone(self.name)
        if found is None:
            raise ExpressionError(f"unknown session time zone {self.name!r}")
        return found

    def local(self, value: datetime | date) -> datetime:
        """Wall-clock time of a value: dates at midnight, zone-less
        timestamps as they are, instants in this zone."""
        if not isinstance(value, datetime):
            return datetime(value.year, value.month, value.day)
        if value.tzinfo is None:
            return value
        return value.astimezone(self.tz).replace(tzinfo=None)

    def local_range(self, low: datetime | date, high: datetime | date) -> tuple[datetime, datetime] | None:
        """Bounds of the wall-clock times of every value in [low, high]."""
        if not isinstance(low, datetime) or not isinstance(high, datetime) or low.tzinfo is None or self.fixed is not None:
            return self.local(low), self.local(high)
        try:
            return (low.astimezone(timezone.utc) - MAX_OFFSET).replace(tzinfo=None), (high.astimezone(timezone.utc) + MAX_OFFSET).replace(tzinfo=None)
        except OverflowError:
            return None

    def instant(self, local: datetime) -> datetime:
        """The instant of a wall-clock time. Java's rules: an ambiguous time
        takes the earlier offset, a time in a gap moves forward by the gap;
        zoneinfo's fold=0 gives both."""
        return local.replace(tzinfo=self.tz, fold=0).astimezone(timezone.utc)

    def instant_range(self, low: datetime, high: datetime) -> tuple[datetime, datetime] | None:
        try:
            if self.fixed is not None:
                return self.instant(low), self.instant(high)
            return (low - MAX_OFFSET).replace(tzinfo=timezone.utc), (high + MAX_OFFSET).replace(tzinfo=timezone.utc)
        except OverflowError:
            return None

    def __str__(self) -> str:
        return self.name
