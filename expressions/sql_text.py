"""What both SQL front ends (`sql_plain`, `sql_glot`) read alike: how deep a
predicate may nest, where a column is named in the text, and a number
literal's kind."""

from __future__ import annotations

import re
from decimal import Decimal

from expressions.errors import line_column
from expressions.tree import Literal

# What --where and the engines' predicates may be: one boolean expression (a
# subquery inside it is an Unknown leaf), no statement, and nesting sqlglot's
# recursive parser handles.
MAX_NESTING = 32
# A name every dialect reads unquoted (lowercase; sqlglot's printer quotes the rest). Matched whole (`fullmatch`):
# `$` would also end a match before a trailing newline, printing "a\n" unquoted, which reads back as `a`.
PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def name_position(text: str, name: str) -> tuple[int, int] | None:
    """(line, column) of the first place `name` stands alone in `text` (any case)."""
    match = re.search(r"(?<![\w.])" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE)
    return None if match is None else line_column(text, match.start())


def ref_position(text: str, path: tuple[str, ...]) -> tuple[int, int] | None:
    """Where a column is named: its dotted path, else its last part."""
    return name_position(text, ".".join(path)) or name_position(text, path[-1])


def number(text: str) -> Literal:
    """A number literal: an integer, a float (with an exponent) or a decimal."""
    if re.fullmatch(r"[+-]?\d+", text):
        return Literal(int(text), "integer")
    if re.search(r"[eE]", text):
        return Literal(float(text), "float")
    return Literal(Decimal(text), "decimal")
