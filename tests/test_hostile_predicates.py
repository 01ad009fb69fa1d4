"""Predicates as a hostile or careless user writes them: one boolean
expression only, positioned errors, no RecursionError at any size, and SQL
handed on is always printed from the tree."""

from __future__ import annotations

import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from expressions import And, Comparison, Literal, Op, Or, Ref, SqlSyntaxError, evaluate_rows, parse_sql, prune_files, to_sql
from expressions.sql import MAX_NESTING
from listers import plan
from metadata.sample_tables.sample import build_sample_table

HOSTILE_STRINGS = ["it's", 'say "hi"', "back`tick", "semi;colon", "-- not a comment", "/* nor this */", "ünï©ødé 東京", "back\\slash", "50%_"]


@pytest.mark.parametrize("text,position", [
    ("a = 1; DROP TABLE x", (1, 6)),
    ("a = 1;", (1, 6)),
    ("DROP TABLE trips", (1, 1)),
    ("INSERT INTO t VALUES (1)", (1, 1)),
    ("SELECT * FROM t", (1, 1)),
    ("(SELECT 1)", (1, 2)),
    ("1 + 2", (1, 1)),
    ("'just a string'", (1, 1)),
    ("fare * 2", (1, 1)),
    ("a = 1 AND\n  b = 2;\nDELETE FROM t", (2, 8)),
])
def test_only_one_boolean_expression_is_accepted(text: str, position: tuple[int, int]) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_sql(text, "spark")
    assert caught.value.position == position


def test_separators_inside_literals_and_comments_are_not_statements() -> None:
    assert to_sql(parse_sql("name = 'a;b' -- trailing; comment", "spark"), "spark") == "name = 'a;b'"
    assert to_sql(parse_sql("name = 'x' /* DROP TABLE t; */ AND n > 1", "trino"), "trino") == "name = 'x' AND n > 1"


@pytest.mark.parametrize("value", HOSTILE_STRINGS)
@pytest.mark.parametrize("dialect", ["hive", "spark", "trino", "presto"])
def test_hostile_literals_print_back_to_the_same_tree(value: str, dialect: str) -> None:
    tree = Comparison(Op.EQ, Ref(("city",)), Literal(value, "string"))
    printed = to_sql(tree, dialect)
    assert printed.startswith("city = ")
    parsed = parse_sql(printed, dialect)
    assert parsed == tree
    assert isinstance(parsed, Comparison)
    assert parsed.literal.value == value


def test_ten_thousand_term_chains_parse_evaluate_and_print() -> None:
    values = list(range(10_000))
    column = pa.table({"c": pa.array([5, 9_999, 10_000, -1, None], pa.int64())})
    any_of = parse_sql(" OR ".join(f"c = {v}" for v in values), "spark")
    assert isinstance(any_of, Or)
    assert evaluate_rows(any_of, column).to_pylist() == [True, True, False, False, False]
    all_of = parse_sql(" AND ".join(f"c <> {v}" for v in values), "trino")
    assert isinstance(all_of, And)
    assert evaluate_rows(all_of, column).to_pylist() == [False, False, True, True, False]
    assert parse_sql(to_sql(all_of, "trino"), "trino") == all_of
    nested = parse_sql(" OR ".join(f"(c > {v} AND c < {v + 2})" for v in values), "spark")  # 1 <= c <= 10,000
    assert evaluate_rows(nested, column).to_pylist() == [True, True, True, False, False]
    stats = pa.table({"fileName": ["low", "high"], "valueCount": [10, 10], "c_minValue": [-100, 20_000], "c_maxValue": [-50, 30_000],
                      "c_nullCount": [0, 0]})
    assert prune_files(any_of, stats) == []
    assert prune_files(all_of, stats) == ["low", "high"]


def test_nesting_beyond_the_limit_is_a_positioned_error_not_a_recursion_error() -> None:
    deepest = "(" * MAX_NESTING + "a = 1" + ")" * MAX_NESTING
    assert to_sql(parse_sql(deepest, "spark"), "spark") == "a = 1"
    for depth in (MAX_NESTING + 1, 10_000):
        with pytest.raises(SqlSyntaxError, match="nested too deeply") as caught:
            parse_sql("(" * depth + "a = 1" + ")" * depth, "spark")
        assert caught.value.position == (1, MAX_NESTING + 1)
    with pytest.raises(SqlSyntaxError, match="nested too deeply"):
        parse_sql("NOT " * 10_000 + "a = 1", "trino")


def test_plan_residual_is_printed_from_the_tree(tmp_path) -> None:
    path = str(tmp_path / "trips")
    build_sample_table(path)
    planned = plan(path, "city = 'chennai' /* ; DROP TABLE trips */ AND fare > 1 -- tail", dialect="spark")
    assert planned.residual == "city = 'chennai' AND fare > 1"


def test_cli_refuses_statements_and_bad_instants_in_one_line(tmp_path) -> None:
    path = str(tmp_path / "trips")
    build_sample_table(path)
    runner = CliRunner()
    refused = runner.invoke(main, ["plan", path, "--where", "city = 'x'; DROP TABLE trips"])
    assert refused.exit_code == 2
    assert refused.stderr.strip() == "error: only one boolean expression is accepted; ';' ends a statement (line 1, column 11)"
    as_of_plan = runner.invoke(main, ["plan", path, "--where", "fare > 1", "--as-of", "abc"])
    as_of_files = runner.invoke(main, ["table", "files", path, "--as-of", "abc"])
    assert as_of_plan.exit_code == 2
    assert as_of_files.exit_code == 2
    assert as_of_plan.stderr == as_of_files.stderr == "error: as-of instant 'abc' is not an instant time (yyyyMMddHHmmssSSS, digits only)\n"
    assert "Traceback" not in as_of_plan.output + refused.output


@pytest.mark.parametrize("begin", ["1' OR '1'='1", "20240101000000000; DROP TABLE t", "2024-01-01", ""])
def test_incremental_bounds_are_instant_times_only(tmp_path, begin: str) -> None:
    from listers import incremental
    from metadata import InvalidInstantTime

    path = str(tmp_path / "trips")
    build_sample_table(path)
    with pytest.raises(InvalidInstantTime, match="is not an instant time"):
        incremental(path, begin)
    with pytest.raises(InvalidInstantTime):
        incremental(path, "00000000000000000", end=begin or "x")
    row_filter = incremental(path, "00000000000000000").row_filter
    assert set(row_filter) <= set("_hoodie_commit_time AND NOT IN (),'<=>0123456789 ")


def test_an_unexpected_error_is_one_line_without_debug(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import listers

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(listers, "plan", broken)
    result = CliRunner().invoke(main, ["plan", str(tmp_path), "--where", "a = 1"])
    assert result.exit_code == 2
    assert result.stderr == "error: unexpected KeyError: 'a bug' (run with --debug for the traceback)\n"
    debug = CliRunner().invoke(main, ["--debug", "plan", str(tmp_path), "--where", "a = 1"])
    assert debug.exit_code == 2  # the same exit code, with the traceback before the line
    assert "Traceback (most recent call last)" in debug.stderr and 'raise KeyError("a bug")' in debug.stderr
    assert debug.stderr.splitlines()[-1] == "error: unexpected KeyError: 'a bug'"
