"""SQL front end and printer for hive, spark, trino and presto.

`parse_sql` turns a WHERE clause into a HudiExpression (what it reads:
`sql_glot`). Plain predicates (`sql_plain`: columns compared with literals,
BETWEEN, IN, IS NULL, AND, OR, NOT) are read without sqlglot, whose import
is most of a cold plan's or scan's start; the rest, and every error, are
sqlglot's front end's. Both give the same tree. `to_sql` prints a tree back
in a dialect: a plain one as sqlglot would, without it; the rest through
sqlglot, imported then.
"""

from __future__ import annotations

from expressions.dialect import Dialect
from expressions.sql_plain import parse_plain, print_plain
from expressions.sql_text import MAX_NESTING
from expressions.tree import Expr


def parse_sql(text: str, dialect: Dialect | str = Dialect.SPARK, time_zone: str = "UTC") -> Expr:
    """The HudiExpression of a WHERE clause (without the WHERE keyword).
    `time_zone` is the session time zone date and time functions use."""
    dialect = Dialect.of(dialect)
    plain = parse_plain(text, dialect)
    if plain is not None:
        return plain
    from expressions.sql_glot import parse_with_sqlglot

    return parse_with_sqlglot(text, dialect, time_zone)


def to_sql(expr: Expr, dialect: Dialect | str = Dialect.SPARK) -> str:
    """SQL text of a tree in a dialect."""
    dialect = Dialect.of(dialect)
    plain = print_plain(expr)
    if plain is not None:
        return plain
    from expressions.sql_print import to_sql as print_sql

    return print_sql(expr, dialect)


__all__ = ["MAX_NESTING", "parse_sql", "to_sql"]
