"""Order-preserving functions of a column (see `base`).

The function classes load on first use (PEP 562): most predicates name no
function, and making their dataclasses took about a fifth of a cold
`import listers` (7 to 12 ms). `base`, which every reference's chain goes
through, loads at once; so does `SessionZone`, which every bound predicate
carries."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from expressions.functions.base import (
    Function,
    all_total,
    all_total_within_image,
    apply_all,
    image_all,
    image_all_arrays,
    result_type,
    to_sql,
)
from expressions.functions.zones import SessionZone
from metadata.util.datetime_pattern import Pattern, Unit, parse_pattern

if TYPE_CHECKING:
    from expressions.functions.arithmetic import Add, Divide, Multiply, RoundingCast, StringToNumber
    from expressions.functions.calendar import (
        DateFormat,
        DatePart,
        ParseTime,
        SecondsToTimestamp,
        ToDate,
        ToTimestamp,
        UnixSeconds,
        normalise,
    )
    from expressions.functions.text import ChangeCase, Length, Substring, Trim, after_prefix

# Each lazily loaded name, with the module that defines it.
_HOMES = {
    **dict.fromkeys(["Add", "Divide", "Multiply", "RoundingCast", "StringToNumber"], "arithmetic"),
    **dict.fromkeys(["DateFormat", "DatePart", "ParseTime", "SecondsToTimestamp", "ToDate", "ToTimestamp", "UnixSeconds", "normalise"], "calendar"),
    **dict.fromkeys(["ChangeCase", "Length", "Substring", "Trim", "after_prefix"], "text"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Add", "ChangeCase", "DateFormat", "DatePart", "Divide", "Function", "Multiply", "ParseTime", "Pattern", "RoundingCast", "SecondsToTimestamp", "StringToNumber",
    "Length", "SessionZone", "Substring", "ToDate", "Trim", "ToTimestamp", "Unit", "UnixSeconds", "after_prefix", "all_total", "all_total_within_image",
    "apply_all", "image_all", "image_all_arrays", "normalise", "parse_pattern", "result_type", "to_sql",
]
