"""Plain predicates are read and printed without sqlglot
(`expressions.sql_plain`); what that reader accepts must give the tree
sqlglot's front end gives, positions and origins included, in every
dialect, and what sqlglot refuses it must leave to sqlglot (whose errors
say where); what that printer prints must be sqlglot's print."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from expressions import And, Comparison, Dialect, In, IsNotNull, IsNull, Literal, Not, Op, Or, Ref, SqlSyntaxError, parse_sql, to_sql
from expressions.sql_glot import parse_with_sqlglot
from expressions.sql_keywords import SQL_KEYWORDS
from expressions.sql_plain import parse_plain, print_plain
from expressions.sql_print import to_sql as to_sql_with_sqlglot
from expressions.tree import AlwaysFalse, AlwaysTrue, Expr, and_
from metadata.sample_tables.builder import TableBuilder

DIALECTS = list(Dialect)


def _glot(text: str, dialect: Dialect) -> str:
    """sqlglot's front end's tree, printed with every field (positions and origins too), or its refusal."""
    try:
        return repr(parse_with_sqlglot(text, dialect))
    except SqlSyntaxError as exc:
        return f"refused: {exc}"


def _same_or_left(text: str, dialect: Dialect) -> bool:
    """Whether the plain reader read `text` (then checked equal to sqlglot's tree)."""
    plain = parse_plain(text, dialect)
    expected = _glot(text, dialect)
    if plain is None:
        return False
    assert repr(plain) == expected, (text, dialect)
    return True


def test_the_keyword_list_holds_every_keyword_of_the_installed_sqlglot() -> None:
    from sqlglot.dialects.dialect import Dialect as GlotDialect

    words = {word.upper() for d in DIALECTS for word in GlotDialect.get_or_raise(d.value).tokenizer_class.KEYWORDS
             if re.fullmatch(r"[A-Za-z_]\w*", word)}
    assert words - SQL_KEYWORDS == set(), "sqlglot reads new keywords: regenerate expressions/sql_keywords.py"


PLAIN = [
    "a > 490000 AND b < 250000.0",
    "ts BETWEEN 500000 AND 509999",
    "city = 'sf' AND fare > 1",
    "id IN (1, 4) OR city <> 'la'",
    "id >= 2 AND city IN ('sf', 'la')",
    "NOT (a = 1 OR b != -2.50) AND c IS NOT NULL",
    "x NOT IN (1, 2) AND y NOT BETWEEN -1 AND 1",
    "1 < a",
    "'sf' = city",
    "flag",
    "NOT flag AND TRUE",
    "(a = 1)",
    "nested.field.leaf = 'x'",
    "Upper_Case = 007",
    "a = NULL OR b IS NULL",
    "a = 1\n  AND\tb = 2",
    "_hoodie_commit_time > '20240101000000000'",
    "a = 'it is ünïcode'",
    "a = 1 AND b = 2 AND c = 3 OR d = 4 AND (e = 5 OR f = 6 OR g = 7)",
]

NOT_PLAIN = [
    "upper(city) = 'SF'", "id % 2 = 1", "a = b", "1 = 1", "a LIKE 'x%'", "CAST(a AS INT) = 1", "a = DATE '2024-01-01'",
    "date = 1", "`a` = 1", '"a" = 1', "a = \"x\"", "a = 'it''s'", "a = 'back\\slash'", "a = 1e5", "a = 10L", "a = .5", "a = 1.",
    "a == 1", "a <=> 1", "a = 1 -- comment", "a = 1 /* c */", "a = 1;", "a >", "a = 1 AND", "(a = 1", "a = 1)", "a IN ()",
    "a IN (b)", "a BETWEEN b AND 1", "a IS TRUE", "5", "'x'", "NULL", "a - 1 > 2", "a > 1 - 2", "(a) = 1", "a = 1 = TRUE",
    "a.b. = 1", "é = 1", "a\u00a0= 1", "current_date > a", "a = 'x' 'y'", "select = 1", "a = 1 OR", "NOT", "",
    "(" * 40 + "a = 1" + ")" * 40, "NOT " * 40 + "a",
]


@pytest.mark.parametrize("dialect", DIALECTS, ids=str)
def test_plain_predicates_read_as_sqlglot_reads_them(dialect: Dialect) -> None:
    for text in PLAIN:
        assert _same_or_left(text, dialect), f"{text!r} is plain in {dialect}"


@pytest.mark.parametrize("dialect", DIALECTS, ids=str)
def test_the_rest_is_left_to_sqlglot(dialect: Dialect) -> None:
    for text in NOT_PLAIN:
        assert parse_plain(text, dialect) is None, f"{text!r} is not plain"
        _glot(text, dialect)  # and sqlglot's front end answers it (a tree or one refusal), never a traceback


def test_a_plain_parse_and_the_sqlglot_parse_agree_through_the_public_entry() -> None:
    tree = parse_sql("a > 490000 AND b < 250000.0", "trino")
    assert repr(tree) == _glot("a > 490000 AND b < 250000.0", Dialect.TRINO)
    with pytest.raises(SqlSyntaxError, match=r"incomplete '>': its right-hand side is missing \(line 1, column"):
        parse_sql("a >", "spark")


# A seeded random corpus of predicates, plain and not: every one the plain reader takes must be sqlglot's tree.
_NAMES = ["a", "b", "City", "x1", "_c", "n.f", "t.c.d", "year", "month", "key", "value", "user", "position", "ts", "p",
          "date", "timestamp", "interval", "end", "left", "select", "not", "and", "null", "true", "is", "in", "between"]
_LITERALS = ["0", "1", "-1", "- 7", "42", "007", "1.5", "-0.25", "10.000", "1e3", "3L", "'x'", "'sf'", "''", "'a b'", "'it''s'",
             "\"q\"", "TRUE", "false", "NULL", "DATE '2024-01-01'", "CAST('1' AS INT)"]
_OPS = ["=", "<>", "!=", "<", "<=", ">", ">=", "==", "<=>"]


def _random_predicate(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        joiner = rng.choice([" AND ", " OR ", " and ", " Or "])
        return joiner.join(_random_predicate(rng, depth + 1) for _ in range(rng.randint(2, 4)))
    if depth < 3 and roll < 0.4:
        return "(" + _random_predicate(rng, depth + 1) + ")"
    if depth < 3 and roll < 0.48:
        return rng.choice(["NOT ", "not ", "NOT("]) + _random_predicate(rng, depth + 1) + ("" if roll < 0.46 else ")")
    name, literal = rng.choice(_NAMES), rng.choice(_LITERALS)
    shape = rng.randrange(9)
    if shape == 0:
        return f"{name} {rng.choice(_OPS)} {literal}"
    if shape == 1:
        return f"{literal} {rng.choice(_OPS)} {name}"
    if shape == 2:
        return f"{name}{rng.choice(['', ' NOT'])} BETWEEN {literal} AND {rng.choice(_LITERALS)}"
    if shape == 3:
        return f"{name}{rng.choice(['', ' NOT'])} IN ({', '.join(rng.choice(_LITERALS) for _ in range(rng.randint(1, 3)))})"
    if shape == 4:
        return f"{name} IS{rng.choice(['', ' NOT'])} NULL"
    if shape == 5:
        return rng.choice([name, "TRUE", "FALSE", literal])
    if shape == 6:
        return f"{name} {rng.choice(_OPS)} {rng.choice(_NAMES)}"
    if shape == 7:
        return f"lower({name}) = {literal}"
    return f"{name} LIKE 'x%'"


@pytest.mark.parametrize("dialect", DIALECTS, ids=str)
def test_a_seeded_random_corpus_reads_alike(dialect: Dialect) -> None:
    rng = random.Random(39)
    read = 0
    for _ in range(600):
        read += _same_or_left(_random_predicate(rng), dialect)
    assert read >= 60, read  # the plain reader takes a good share of the corpus, not none


def _printed_alike(tree: Expr) -> bool:
    """Whether the plain printer printed `tree` (then checked equal to sqlglot's print in every dialect)."""
    plain = print_plain(tree)
    if plain is None:
        return False
    for dialect in DIALECTS:
        assert plain == to_sql_with_sqlglot(tree, dialect), (tree, dialect)
        assert to_sql(tree, dialect) == plain
    return True


def test_plain_trees_print_as_sqlglot_prints_them() -> None:
    rng = random.Random(52)
    printed = 0
    for text in PLAIN + [_random_predicate(rng) for _ in range(600)]:
        try:
            tree = parse_with_sqlglot(text, Dialect.SPARK)
        except SqlSyntaxError:
            continue
        printed += _printed_alike(tree)
    assert printed >= 100, printed


A = Ref(("a",))
EITHER = Or(IsNull(A), IsNull(A))


@pytest.mark.parametrize("tree", [
    Comparison(Op.EQ, A, Literal(Decimal("1E+2"), "decimal")), Comparison(Op.LT, A, Literal(Decimal("-0.0"), "decimal")),
    Comparison(Op.GE, A, Literal(Decimal("0.000001"), "decimal")), Comparison(Op.NE, A, Literal(-5, "integer")),
    Comparison(Op.EQ, A, Literal(1.5, "float")), Comparison(Op.EQ, A, Literal(1e20, "float")), Comparison(Op.EQ, A, Literal(-math.inf, "float")),
    Comparison(Op.EQ, A, Literal(math.nan, "float")), Comparison(Op.EQ, A, Literal("ünïcode ok", "string")),
    Comparison(Op.EQ, A, Literal(None, "null")), Comparison(Op.EQ, Ref(("n", "f", "g")), Literal(False, "boolean")),
    IsNotNull(A), Not(IsNull(A)), In(A, (Literal(1, "integer"), Literal("x", "string")), True), In(A, (), False),
    AlwaysTrue(), Not(AlwaysFalse()), And(EITHER, And(IsNull(A), EITHER)), Or(Or(IsNull(A), IsNull(A)), Not(And(IsNull(A), IsNull(A)))),
    and_(*[Comparison(Op.EQ, A, Literal(i, "integer")) for i in range(300)]),  # a long chain: balanced, not left-deep
], ids=repr)
def test_hand_built_plain_trees_print_as_sqlglot_prints_them(tree: Expr) -> None:
    assert _printed_alike(tree)


@pytest.mark.parametrize("tree", [
    Comparison(Op.EQ, Ref(("A",)), Literal(1, "integer")), Comparison(Op.EQ, Ref(("select",)), Literal(1, "integer")),
    Comparison(Op.EQ, Ref(("a b",)), Literal(1, "integer")), Comparison(Op.EQ, A, Literal("it's", "string")),
    Comparison(Op.EQ, A, Literal("back\\slash", "string")), Comparison(Op.EQ, A, Literal("line\nbreak", "string")),
    Comparison(Op.EQ, A, Literal(Decimal("NaN"), "decimal")), Comparison(Op.NULL_SAFE_EQ, A, Literal(1, "integer")),
    Comparison(Op.EQ, Ref(("a",), cast="BIGINT"), Literal(1, "integer")), Comparison(Op.EQ, A, Literal(b"x", "binary")),
], ids=repr)
def test_the_rest_is_printed_by_sqlglot(tree: Expr) -> None:
    assert print_plain(tree) is None
    assert to_sql(tree, "trino") == to_sql_with_sqlglot(tree, "trino")


@pytest.mark.parametrize("dialect", list(Dialect), ids=str)
@pytest.mark.parametrize("name", ["a\n", "a\nb", "\na", "a "])
def test_a_name_with_a_line_break_or_space_is_quoted_and_reads_back(dialect: Dialect, name: str) -> None:
    """A column name that is plain but for a line break (trailing too) or a space is printed quoted, so the print
    reads back as the same column, not as its plain part."""
    tree = Comparison(Op.EQ, Ref((name,)), Literal(1, "integer"))
    assert print_plain(tree) is None
    printed = to_sql(tree, dialect)
    read = parse_sql(printed, dialect)
    assert isinstance(read, Comparison) and read.ref.path == (name,), printed


def test_a_plain_scan_and_plan_leave_sqlglot_out(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    TableBuilder(path, pa.schema([("id", pa.int64()), ("city", pa.string())]), version=8, partition_fields=["city"]).write(
        [{"id": i, "city": ("sf", "la")[i % 2]} for i in range(6)])
    probe = """
import json, sys
from listers import plan, scan
rows = scan(sys.argv[1], where="id >= 2 AND city IN ('sf', 'la')", columns=["id"]).to_table().num_rows
kept = len(plan(sys.argv[1], "id BETWEEN 1 AND 3").files)
before = "sqlglot" in sys.modules
print(json.dumps({"rows": rows, "kept": kept, "before": before, "residual": plan(sys.argv[1], "id = 1").residual,
                  "after": "sqlglot" in sys.modules}))
"""
    out = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(out.stdout)
    assert found["rows"] == 4 and found["kept"] == 2
    assert found["before"] is False  # the plain predicates were read, planned and scanned without it
    assert found["residual"] == "id = 1" and found["after"] is False  # and the residual printed without it
