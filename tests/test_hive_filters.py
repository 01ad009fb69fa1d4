"""Hive's filter text and SearchArgument strings give the tree parse_sql gives."""

from __future__ import annotations

import pytest

from expressions import SqlSyntaxError, Unknown, parse_hive_filter, parse_search_argument, parse_sql, push_not_down
from expressions.tree import Expr

# Hive's ExprNodeDesc display strings, with the Spark SQL that means the same.
HIVE_FILTERS = [
    ("(key = 5)", "key = 5"),
    ("((key >= 100) and (key < 200))", "key >= 100 AND key < 200"),
    ("((key >= 100L) and (key < 200L))", "key >= 100 AND key < 200"),
    ("(not x)", "NOT x"),
    ("x is null", "x IS NULL"),
    ("x is not null", "x IS NOT NULL"),
    ("(col) IN (1, 2)", "col IN (1, 2)"),
    ("(col) IN ('a', 'b')", "col IN ('a', 'b')"),
    ("(not (col) IN (1, 2))", "col NOT IN (1, 2)"),
    ("(d = DATE'2024-01-01')", "d = DATE '2024-01-01'"),
    ("(ts < TIMESTAMP'2024-01-01 00:00:00')", "ts < TIMESTAMP '2024-01-01 00:00:00'"),
    ("(a > 1.5D)", "a > 1.5D"),
    ("(a > 1.5BD)", "a > 1.5"),
    ("(a = 2S)", "a = 2"),
    ("(a = 1Y)", "a = 1"),
    ("(s = 'it\\'s')", "s = 'it\\'s'"),
    ("col BETWEEN 1 AND 5", "col BETWEEN 1 AND 5"),
    ("col NOT BETWEEN 1 AND 5", "NOT (col BETWEEN 1 AND 5)"),
    ("((a = 1) or (b = 2))", "a = 1 OR b = 2"),
    ("(((a = 1) or (b = 2)) and (c <> 3))", "(a = 1 OR b = 2) AND c <> 3"),
    ("(s.f > 3)", "s.f > 3"),
    ("(a <=> 3)", "a <=> 3"),
    ("(a <= 3)", "a <= 3"),
    ("(a >= -3)", "a >= -3"),
    ("(name like 'ab%')", "name LIKE 'ab%'"),
    ("(upper(name) = 'AB')", "upper(name) = 'AB'"),
]

# SearchArgument strings (both forms), with the Spark SQL that means the same.
SARGS = [
    ("leaf-0 = (LESS_THAN x 10), expr = leaf-0", "x < 10"),
    ("leaf-0 = (LESS_THAN_EQUALS x 10), expr = leaf-0", "x <= 10"),
    ("leaf-0 = (EQUALS x 10), expr = leaf-0", "x = 10"),
    ("leaf-0 = (NULL_SAFE_EQUALS x 10), expr = leaf-0", "x <=> 10"),
    ("leaf-0 = (EQUALS name bob), expr = leaf-0", "name = 'bob'"),
    ("leaf-0 = (IN y a b), expr = leaf-0", "y IN ('a', 'b')"),
    ("leaf-0 = (IN y 1 2 3), expr = leaf-0", "y IN (1, 2, 3)"),
    ("leaf-0 = (BETWEEN x 1 5), expr = leaf-0", "x BETWEEN 1 AND 5"),
    ("leaf-0 = (IS_NULL x), expr = leaf-0", "x IS NULL"),
    ("leaf-0 = (IS_NULL x), expr = (not leaf-0)", "x IS NOT NULL"),
    ("leaf-0 = (LESS_THAN x 10), leaf-1 = (IN y a b), expr = (and leaf-0 (not leaf-1))", "x < 10 AND y NOT IN ('a', 'b')"),
    ("leaf-0 = (LESS_THAN x 10), leaf-1 = (EQUALS y 2), expr = (or leaf-0 leaf-1)", "x < 10 OR y = 2"),
    ("leaf-0 = (EQUALS a 1), leaf-1 = (EQUALS b 2), leaf-2 = (EQUALS c 3), expr = (and leaf-0 leaf-1 leaf-2)", "a = 1 AND b = 2 AND c = 3"),
    ("leaf-0 = (EQUALS a 1), leaf-1 = (EQUALS b 2), leaf-2 = (EQUALS c 3), expr = (or (and leaf-0 leaf-1) (not leaf-2))",
     "(a = 1 AND b = 2) OR c <> 3"),
    ("leaf-0 = (LESS_THAN x 10)\nleaf-1 = (IN y a b)\nexpr = (and leaf-0 (not leaf-1))", "x < 10 AND y NOT IN ('a', 'b')"),
    ("leaf-0 = (EQUALS d 2024-01-01), expr = leaf-0", "d = '2024-01-01'"),
    ("leaf-0 = (LESS_THAN amount 1.25), expr = leaf-0", "amount < 1.25"),
    ("leaf-0 = (EQUALS x -4), expr = (not leaf-0)", "x <> -4"),
    ("leaf-0 = (IN y a null), expr = leaf-0", "y IN ('a', NULL)"),
    ("leaf-0 = (EQUALS flag true), expr = leaf-0", "flag = TRUE"),
    ("leaf-0 = (EQUALS s.f 3), expr = leaf-0", "s.f = 3"),
    ("leaf-0 = (LESS_THAN x 10), expr = (not (not leaf-0))", "NOT (NOT x < 10)"),
    ("leaf-0 = (EQUALS a 1), leaf-1 = (EQUALS b 2), expr = (and (or leaf-0 leaf-1) (or (not leaf-0) leaf-1))",
     "(a = 1 OR b = 2) AND (a <> 1 OR b = 2)"),
    ("leaf-0 = (BETWEEN x 1 5), leaf-1 = (IS_NULL y), expr = (or leaf-0 leaf-1)", "x BETWEEN 1 AND 5 OR y IS NULL"),
    ("leaf-0 = (LESS_THAN_EQUALS x 0), expr = (not leaf-0)", "x > 0"),
    ("leaf-0 = (IN y 1), expr = (not leaf-0)", "y NOT IN (1)"),
]


def same(a: Expr, b: Expr) -> bool:
    return push_not_down(a) == push_not_down(b)


@pytest.mark.parametrize("text,sql", HIVE_FILTERS)
def test_hive_filter_text_is_the_same_tree_as_sql(text: str, sql: str) -> None:
    assert same(parse_hive_filter(text), parse_sql(sql, "spark"))


@pytest.mark.parametrize("text,sql", SARGS)
def test_search_argument_is_the_same_tree_as_sql(text: str, sql: str) -> None:
    assert same(parse_search_argument(text), parse_sql(sql, "spark"))


def test_search_argument_leaves_it_cannot_read_never_prune() -> None:
    assert isinstance(parse_search_argument("leaf-0 = (STARTS_WITH x a), expr = leaf-0"), Unknown)
    assert isinstance(parse_search_argument("leaf-0 = (EQUALS x 1), expr = YES_NO_NULL"), Unknown)


def test_chains_of_ten_thousand_leaves_parse_without_recursion() -> None:
    leaves = ", ".join(f"leaf-{i} = (EQUALS c{i % 7} {i})" for i in range(10_000))
    nested = "(and " * 2_000 + " ".join(f"leaf-{i}" for i in range(2_001)) + ")" * 2_000
    assert parse_search_argument(f"{leaves}, expr = (or {' '.join(f'leaf-{i}' for i in range(10_000))})") is not None
    assert parse_search_argument(f"{leaves}, expr = {nested}") is not None


@pytest.mark.parametrize("text,position", [
    ("leaf-0 = (EQUALS x 1)", (1, 22)),
    ("leaf-0 = EQUALS x 1, expr = leaf-0", (1, 10)),
    ("leaf-0 = (EQUALS x 1), expr = (xor leaf-0 leaf-0)", (1, 32)),
    ("leaf-0 = (EQUALS x 1), expr = (and leaf-0 leaf-3)", (1, 43)),
    ("leaf-0 = (EQUALS x 1), expr = (and leaf-0", (1, 42)),
    ("leaf-0 = (EQUALS x 1), expr = leaf-0 leaf-0", (1, 38)),
    ("leaf-0 = (EQUALS x 1),\nexpr = (not)", (2, 12)),
])
def test_malformed_search_arguments_say_where(text: str, position: tuple[int, int]) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_search_argument(text)
    assert caught.value.position == position


def test_malformed_hive_filter_text_says_where() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_hive_filter("((key >= 100) and (key <")
    assert caught.value.position is not None
