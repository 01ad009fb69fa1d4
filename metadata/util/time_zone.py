"""Time-zone names as Spark and Hudi's key generators take them.

A fixed offset (`UTC`, `GMT`, `Z`, `+05:30`, `UTC-3`) maps instants to
wall-clock time monotonically; a named zone may have daylight saving time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_FIXED = re.compile(r"(?:UTC|GMT|Z)?(?:([+-])(\d{1,2})(?::?(\d{2}))?)?", re.IGNORECASE)
_UTC_NAMES = {"ETC/UTC", "ETC/GMT", "ETC/UNIVERSAL", "UNIVERSAL", "ZULU"}


def fixed_offset(name: str) -> timedelta | None:
    """The offset of a zone name that is a fixed offset; None for named zones."""
    text = name.strip()
    if text.upper() in _UTC_NAMES:
        return timedelta(0)
    match = _FIXED.fullmatch(text)
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    offset = timedelta(hours=int(hours or 0), minutes=int(minutes or 0))
    return -offset if sign == "-" else offset


def time_zone(name: str) -> tzinfo | None:
    """The zone a name stands for, or None when no zone has that name."""
    offset = fixed_offset(name)
    if offset is not None:
        return timezone(offset)
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None
