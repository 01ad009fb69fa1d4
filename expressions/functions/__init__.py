"""Order-preserving functions of a column (see `base`)."""

from expressions.functions.arithmetic import Add, Divide, Multiply, RoundingCast, StringToNumber
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
from expressions.functions.calendar import DateFormat, DatePart, ParseTime, SecondsToTimestamp, ToDate, ToTimestamp, UnixSeconds, normalise
from expressions.functions.text import ChangeCase, Length, Substring, Trim
from expressions.functions.zones import SessionZone
from metadata.datetime_pattern import Pattern, Unit, parse_pattern

__all__ = [
    "Add", "ChangeCase", "DateFormat", "DatePart", "Divide", "Function", "Multiply", "ParseTime", "Pattern", "RoundingCast", "SecondsToTimestamp", "StringToNumber",
    "Length", "SessionZone", "Substring", "ToDate", "Trim", "ToTimestamp", "Unit", "UnixSeconds", "all_total", "all_total_within_image", "apply_all", "image_all", "image_all_arrays", "normalise", "parse_pattern", "result_type", "to_sql",
]
