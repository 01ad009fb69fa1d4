"""HudiExpression: dialects, Spark filters, printing, binding errors, pruning power."""

from __future__ import annotations

import gc
from datetime import date, datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    GreaterThanOrEqual,
    LessThan,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from pyspark.sql.datasource import (
    In as SparkIn,
)
from pyspark.sql.datasource import (
    IsNotNull as SparkIsNotNull,
)
from pyspark.sql.datasource import (
    Not as SparkNot,
)

from expressions import (
    CoercionError,
    SqlSyntaxError,
    Unknown,
    UnknownColumnError,
    bind,
    eval_stats,
    evaluate_rows,
    from_spark_filters,
    parse_sql,
    prune_files,
    push_not_down,
    to_sql,
)
from expressions.eval_partitions import prune_partitions
from expressions.functions import StringToNumber
from expressions.tree import Comparison, Op
from metadata.formats.stats_table import mark_truncated

DIALECTS = ["hive", "spark", "trino", "presto"]


# Front ends --------------------------------------------------------------------------
SAME_PREDICATE = {
    "hive": "fare >= 10 AND city IN ('sf', 'la') AND rider IS NOT NULL AND name LIKE 'ab%' AND NOT (n < 3) AND m <=> 2",
    "spark": "Fare >= 10 and city in ('sf','la') and rider is not null and name like 'ab%' and not n < 3 and m <=> 2",
    "trino": "fare >= 10 AND city IN ('sf', 'la') AND rider IS NOT NULL AND name LIKE 'ab%' AND NOT (n < 3) AND m IS NOT DISTINCT FROM 2",
    "presto": "FARE >= 10 AND CITY IN ('sf', 'la') AND RIDER IS NOT NULL AND NAME LIKE 'ab%' AND NOT (N < 3) AND M IS NOT DISTINCT FROM 2",
}
SPARK_FILTERS = [
    GreaterThanOrEqual(("fare",), 10), SparkIn(("city",), ("sf", "la")), SparkIsNotNull(("rider",)),
    StringStartsWith(("name",), "ab"), SparkNot(LessThan(("n",), 3)), EqualNullSafe(("m",), 2),
]


def test_same_predicate_same_tree_in_every_dialect_and_from_spark_filters() -> None:
    trees = {d: push_not_down(parse_sql(text, d)) for d, text in SAME_PREDICATE.items()}
    expected = push_not_down(from_spark_filters(SPARK_FILTERS))
    for dialect, tree in trees.items():
        assert tree == expected, dialect


@pytest.mark.parametrize("dialect", DIALECTS)
def test_round_trip_through_sql(dialect: str) -> None:
    texts = [
        SAME_PREDICATE[dialect],
        "d BETWEEN DATE '2024-01-01' AND DATE '2024-02-01' OR ts > TIMESTAMP '2024-01-01 10:00:00'",
        "price = 12.50 OR x NOT IN (1, 2, 3) OR s NOT LIKE 'a%' OR s LIKE 'a!_b%' ESCAPE '!' OR y <> -4",
        "lower(s) = 'x' AND v IS NULL AND a.b.c < 1.5E0 AND w = CAST('2.5' AS DOUBLE) AND TRUE",
    ]
    for text in texts:
        expr = parse_sql(text, dialect)
        assert parse_sql(to_sql(expr, dialect), dialect) == expr, text
        for other in DIALECTS:
            assert parse_sql(to_sql(expr, other), other) == expr, (text, other)


def test_literals_are_typed() -> None:
    expr = push_not_down(parse_sql("d = DATE '2024-03-01' AND t < TIMESTAMP '2024-01-01 10:00:00' AND p = 1.25 AND f = 1e2 AND n = -3", "trino"))
    leaves = []
    while hasattr(expr, "left"):
        leaves.append(expr.right)
        expr = expr.left
    leaves.append(expr)
    values = {leaf.ref.name: leaf.literal for leaf in leaves}
    assert values["d"].value == date(2024, 3, 1)
    assert values["d"].kind == "date"
    assert values["t"].value == datetime(2024, 1, 1, 10)
    assert values["t"].kind == "timestamp"
    assert values["p"].value == Decimal("1.25")
    assert values["p"].kind == "decimal"
    assert values["f"].value == 100.0
    assert values["f"].kind == "float"
    assert values["n"].value == -3
    assert values["n"].kind == "integer"


def test_literal_on_left_is_flipped_and_like_without_wildcards_is_equality() -> None:
    assert parse_sql("10 < fare", "spark") == Comparison(Op.GT, parse_sql("fare > 1", "spark").ref, parse_sql("fare > 10", "spark").literal)
    exact = parse_sql("name LIKE 'abc'", "trino")
    assert isinstance(exact, Comparison)
    assert exact.op is Op.EQ
    assert exact.literal.value == "abc"
    assert isinstance(parse_sql("name LIKE '%abc'", "trino"), Unknown)
    assert isinstance(parse_sql("name LIKE 'a_c%'", "trino"), Unknown)


def test_bare_boolean_column() -> None:
    assert parse_sql("is_active", "trino") == parse_sql("is_active = TRUE", "spark")
    assert parse_sql("NOT is_active", "hive") == parse_sql("NOT (is_active = true)", "presto")
    table = pa.table({"is_active": [True, False, None]})
    assert evaluate_rows(parse_sql("is_active", "spark"), table).to_pylist() == [True, False, False]


def test_unsupported_things_become_unknown_never_errors() -> None:
    for text in ["concat(city, 'x') = 'sf'", "a = b", "a % 2 = 1", "x IN (SELECT y FROM t)", "substr(s, 2) LIKE 'A%'", "a + b > 3"]:
        expr = parse_sql(text, "spark")
        assert isinstance(expr, Unknown), text
    assert isinstance(from_spark_filters([StringEndsWith(("s",), "x")]), Unknown)
    assert isinstance(from_spark_filters([StringContains(("s",), "x")]), Unknown)


def test_negation_is_exact() -> None:
    ref_tree = push_not_down(parse_sql("NOT (a <=> 1)", "spark"))
    assert to_sql(ref_tree, "spark") == "a IS NULL OR a <> 1"
    assert push_not_down(parse_sql("NOT (a <=> NULL)", "spark")) == push_not_down(parse_sql("a IS NOT NULL", "spark"))
    assert push_not_down(parse_sql("NOT (a > 1 AND b IN (2))", "trino")) == push_not_down(parse_sql("a <= 1 OR b NOT IN (2)", "trino"))


# Errors --------------------------------------------------------------------------------
def test_syntax_error_says_line_and_column() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_sql("fare >\n  = 10", "trino")
    assert info.value.position is not None
    assert info.value.position[0] == 2
    assert "line 2" in str(info.value)
    with pytest.raises(SqlSyntaxError, match="line 1"):
        parse_sql("city = 'sf", "spark")


SCHEMA = pa.schema([("fare", pa.float64()), ("city", pa.string()), ("trip_date", pa.date32()), ("n", pa.int32())])


def test_unknown_column_names_it_and_suggests() -> None:
    with pytest.raises(UnknownColumnError) as info:
        bind(parse_sql("fair > 10", "trino"), SCHEMA)
    assert info.value.name == "fair"
    assert info.value.suggestion == "fare"
    assert info.value.position == (1, 1)
    assert "did you mean 'fare'" in str(info.value)
    with pytest.raises(UnknownColumnError, match="line 2, column 5"):
        bind(parse_sql("fare > 1 AND\n    citty = 'x'", "spark"), SCHEMA)


def test_impossible_coercion_names_the_literal() -> None:
    with pytest.raises(CoercionError, match=r"literal 'yesterday' cannot be compared with column trip_date"):
        bind(parse_sql("trip_date = 'yesterday'", "trino"), SCHEMA)
    with pytest.raises(CoercionError, match=r"literal 3000000000 .* column n .* out of range"):
        bind(parse_sql("n = 3000000000", "trino"), SCHEMA)
    with pytest.raises(CoercionError, match="city"):  # Trino refuses varchar = integer
        bind(parse_sql("city = 5", "trino"), SCHEMA)


def test_a_number_against_a_string_column_is_a_cast_in_spark_and_hive() -> None:
    spark, hive = (bind(parse_sql("city = 5", d), SCHEMA) for d in ("spark", "hive"))
    assert isinstance(spark, Comparison) and spark.ref.functions == (StringToNumber(integral=True),)
    assert isinstance(hive, Comparison) and hive.ref.functions == (StringToNumber(integral=False),)  # Hive compares as DOUBLE
    rows = pa.table({"city": ["5", " 5", "5.5", "05", "x", None]})
    assert evaluate_rows(parse_sql("city = 5", "spark"), rows).to_pylist() == [True, True, True, True, False, False]
    assert evaluate_rows(parse_sql("city = 5", "hive"), rows).to_pylist() == [True, True, False, True, False, False]


def test_coercion_to_column_types() -> None:
    bound = bind(parse_sql("trip_date >= '2024-01-05' AND n > 2.5 AND n = 2.5", "spark"), SCHEMA)
    # n = 2.5 can never hold: the whole AND is false.
    assert to_sql(bound, "spark") == "FALSE"
    bound = bind(parse_sql("trip_date >= '2024-01-05' AND n > 2.5", "spark"), SCHEMA)
    assert to_sql(bound, "spark") == "trip_date >= CAST('2024-01-05' AS DATE) AND n >= 3"
    assert isinstance(bind(parse_sql("CAST(n AS BIGINT) > 2", "spark"), SCHEMA), Comparison)
    assert isinstance(bind(parse_sql("CAST(fare AS INT) > 2", "spark"), SCHEMA), Unknown)


# Rows ---------------------------------------------------------------------------------
def test_rows_three_valued_logic_and_nan_per_dialect() -> None:
    table = pa.table({"x": pa.array([1.0, float("nan"), None, 5.0]), "s": pa.array(["ab", "b", None, "abc"])})
    assert evaluate_rows(parse_sql("x > 2", "trino"), table).to_pylist() == [False, False, False, True]
    assert evaluate_rows(parse_sql("x > 2", "spark"), table).to_pylist() == [False, True, False, True]
    assert evaluate_rows(parse_sql("x = CAST('NaN' AS DOUBLE)", "spark"), table).to_pylist() == [False, True, False, False]
    assert evaluate_rows(parse_sql("x = CAST('NaN' AS DOUBLE)", "trino"), table).to_pylist() == [False, False, False, False]
    assert evaluate_rows(parse_sql("NOT (x > 2)", "trino"), table).to_pylist() == [True, False, False, False]
    assert evaluate_rows(parse_sql("x NOT IN (1, NULL)", "trino"), table).to_pylist() == [False, False, False, False]
    assert evaluate_rows(parse_sql("x IN (1, NULL)", "trino"), table).to_pylist() == [True, False, False, False]
    assert evaluate_rows(parse_sql("s LIKE 'ab%' OR x IS NULL", "hive"), table).to_pylist() == [True, False, True, True]
    assert evaluate_rows(parse_sql("x <=> NULL", "spark"), table).to_pylist() == [False, False, True, False]


# Statistics -------------------------------------------------------------------------------
def sorted_stats(files: int = 10, per_file: int = 100) -> pa.Table:
    """Files of a table sorted by `k` (0..999) and by the string `s`."""
    return pa.table({
        "fileName": [f"f{i}" for i in range(files)],
        "valueCount": [per_file] * files,
        "k_minValue": pa.array([i * per_file for i in range(files)], pa.int64()),
        "k_maxValue": pa.array([i * per_file + per_file - 1 for i in range(files)], pa.int64()),
        "k_nullCount": pa.array([0] * files, pa.int64()),
        "s_minValue": [f"key{i:02d}a" for i in range(files)],
        "s_maxValue": [f"key{i:02d}z" for i in range(files)],
        "s_nullCount": pa.array([0] * files, pa.int64()),
    })


SORTED_DATA_CASES = [
    ("k >= 250 AND k < 420", ["f2", "f3", "f4"]),
    ("k = 700", ["f7"]),
    ("k IN (5, 950, 951)", ["f0", "f9"]),
    ("k IN (" + ", ".join(str(v) for v in range(300, 700, 7)) + ")", ["f3", "f4", "f5", "f6"]),
    ("s LIKE 'key05%'", ["f5"]),
    ("s LIKE 'key0%'", [f"f{i}" for i in range(10)]),
    ("k > 10000", []),
    ("k < 0 OR k = 199", ["f1"]),
    ("NOT (k < 800)", ["f8", "f9"]),
    ("k BETWEEN 100 AND 199 OR s = 'key09m'", ["f1", "f9"]),
    ("lower(s) = 'x' AND k = 5", []),
    # lower/upper: every string between min and max starts with their common prefix ('key0').
    ("lower(s) = 'x' OR k = 5", ["f0"]),
    ("upper(s) = 'KEY03M'", ["f3"]),
    # The image's upper end 'key05' (above every 'key04...') is inclusive: f4 stays.
    ("lower(s) LIKE 'key05%'", ["f4", "f5"]),
    ("k + 100 BETWEEN 300 AND 310", ["f2"]),
    ("k * -2 < -1990", ["f9"]),
    ("k / 100 = 4.5", ["f4"]),
    ("nostats = 1 AND k = 5", ["f0"]),
    ("nostats = 1 OR k = 5", [f"f{i}" for i in range(10)]),
]


@pytest.mark.parametrize("sql,expected", SORTED_DATA_CASES)
def test_pruning_power_on_sorted_data(sql: str, expected: list[str]) -> None:
    assert prune_files(parse_sql(sql, "spark"), sorted_stats()) == expected


def test_one_stats_table_answers_every_predicate_as_a_fresh_one_and_its_columns_go_with_it() -> None:
    """A warm planner evaluates each new predicate on the same cached stats table: the columns' masks computed for
    one predicate serve the next (eval_stats keeps them by table), and leave with the table."""
    stats = sorted_stats()
    for sql, expected in SORTED_DATA_CASES + SORTED_DATA_CASES[::-1]:
        assert prune_files(parse_sql(sql, "spark"), stats) == expected, sql
    assert id(stats) in eval_stats._COLUMNS_OF_TABLES
    held = eval_stats._COLUMNS_OF_TABLES[id(stats)]
    assert {ref.name for ref in held} == {"k", "s"}  # the columns with statistics the predicates named
    assert any(ref.functions for ref in held)  # and f(column)'s, derived once
    key = id(stats)
    del stats
    gc.collect()
    assert key not in eval_stats._COLUMNS_OF_TABLES


def test_stats_hard_cases() -> None:
    stats = pa.table({
        "fileName": ["all_null", "no_stats", "nan_bounds", "normal", "empty"],
        "valueCount": pa.array([10, 10, 10, 10, 0], pa.int64()),
        "x_minValue": pa.array([None, None, float("nan"), 1.0, None]),
        "x_maxValue": pa.array([None, None, 5.0, 2.0, None]),
        "x_nullCount": pa.array([10, None, 0, 0, 0], pa.int64()),
    })
    assert prune_files(parse_sql("x = 10", "trino"), stats) == ["no_stats", "nan_bounds"]
    assert prune_files(parse_sql("x IS NULL", "trino"), stats) == ["all_null", "no_stats"]
    assert prune_files(parse_sql("x IS NOT NULL", "trino"), stats) == ["no_stats", "nan_bounds", "normal"]
    # Spark orders NaN above every number and NaN is absent from max: x > 10 may hold.
    assert prune_files(parse_sql("x > 10", "spark"), stats) == ["no_stats", "nan_bounds", "normal"]
    assert prune_files(parse_sql("x > 10", "trino"), stats) == ["no_stats", "nan_bounds"]
    assert prune_files(parse_sql("x <> 1.5", "trino"), stats) == ["no_stats", "nan_bounds", "normal"]


def test_truncated_string_max_is_not_trusted() -> None:
    stats = mark_truncated(pa.table({
        "fileName": ["f"], "valueCount": pa.array([3], pa.int64()),
        "s_minValue": ["aaa"], "s_maxValue": ["abc"], "s_nullCount": pa.array([0], pa.int64()),
    }), ["s"])
    # A writer may have cut "abcz" to "abc": values above "abc" that start with it may exist.
    assert prune_files(parse_sql("s = 'abcz'", "spark"), stats) == ["f"]
    assert prune_files(parse_sql("s > 'abcd'", "spark"), stats) == ["f"]
    assert prune_files(parse_sql("s LIKE 'abcd%'", "spark"), stats) == ["f"]
    assert prune_files(parse_sql("s = 'abd'", "spark"), stats) == []
    assert prune_files(parse_sql("s LIKE 'b%'", "spark"), stats) == []
    # A file whose only value "aa" was cut to "a": min == max proves nothing.
    one = mark_truncated(pa.table({"fileName": ["f"], "valueCount": pa.array([1], pa.int64()), "s_minValue": ["a"], "s_maxValue": ["a"],
                    "s_nullCount": pa.array([0], pa.int64())}), ["s"])
    long_list = "(" + ", ".join(f"'{v}'" for v in ["aa"] + [f"x{i}" for i in range(40)]) + ")"
    assert prune_files(parse_sql(f"s IN {long_list}", "spark"), one) == ["f"]
    assert prune_files(parse_sql("s <> 'a'", "spark"), one) == ["f"]
    assert prune_files(parse_sql("s NOT IN ('a', 'b')", "spark"), one) == ["f"]


def test_exact_string_bounds_prune_as_hudi_does() -> None:
    """The metadata table's bounds are exact (not marked truncated): Hudi's
    data skipping excludes these files, and so does the plan."""
    stats = pa.table({
        "fileName": ["only_abc", "aaa_to_abc", "empty"], "valueCount": pa.array([4, 3, 0], pa.int64()),
        "s_minValue": ["abc", "aaa", None], "s_maxValue": ["abc", "abc", None], "s_nullCount": pa.array([0, 0, 0], pa.int64()),
    })
    assert prune_files(parse_sql("s <> 'abc'", "spark"), stats) == ["aaa_to_abc"]
    assert prune_files(parse_sql("s NOT IN ('abc')", "spark"), stats) == ["aaa_to_abc"]
    assert prune_files(parse_sql("s = 'abcd'", "spark"), stats) == []  # above every max
    assert prune_files(parse_sql("s > 'abc'", "spark"), stats) == []
    assert prune_files(parse_sql("s LIKE 'abcd%'", "spark"), stats) == []
    long_list = "(" + ", ".join(f"'x{i}'" for i in range(40)) + ", 'abc')"
    assert prune_files(parse_sql(f"s IN {long_list}", "spark"), stats) == ["only_abc", "aaa_to_abc"]
    # A file with no rows matches nothing, whatever the predicate.
    assert "empty" not in prune_files(parse_sql("s IS NULL OR s IS NOT NULL", "spark"), stats)
    truncated = mark_truncated(stats, ["s"])
    assert prune_files(parse_sql("s <> 'abc'", "spark"), truncated) == ["only_abc", "aaa_to_abc"]
    assert prune_files(parse_sql("s = 'abcd'", "spark"), truncated) == ["only_abc", "aaa_to_abc"]


# Partition values ------------------------------------------------------------------------
def test_partition_pruning_exact_with_default_partition() -> None:
    partitions = ["day=2024-01-01/hour=1", "day=2024-01-02/hour=2", "day=__HIVE_DEFAULT_PARTITION__/hour=3"]
    types = {"day": pa.date32(), "hour": pa.int32()}
    fields = ("day", "hour")
    assert prune_partitions(parse_sql("day = DATE '2024-01-02'", "trino"), partitions, fields, types, True) == [partitions[1]]
    assert prune_partitions(parse_sql("day IS NULL", "trino"), partitions, fields, types, True) == [partitions[2]]
    assert prune_partitions(parse_sql("day <> DATE '2024-01-02'", "trino"), partitions, fields, types, True) == [partitions[0]]
    assert prune_partitions(parse_sql("hour > 1 AND fare > 10", "trino"), partitions, fields, types, True) == partitions[1:]
    assert prune_partitions(parse_sql("hour = 1 OR fare > 10", "trino"), partitions, fields, types, True) == partitions
    assert prune_partitions(parse_sql("NOT (hour = 1 OR fare > 10)", "trino"), partitions, fields, types, True) == partitions[1:]


def test_bind_to_avro_schema() -> None:
    avro = {"type": "record", "name": "r", "fields": [
        {"name": "trip_date", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}]},
    ]}
    bound = bind(parse_sql("trip_date = '2024-01-02' AND amount > 1.234 AND _hoodie_commit_time > '2024'", "spark"), avro)
    assert to_sql(bound, "spark") == (
        "trip_date = CAST('2024-01-02' AS DATE) AND amount >= 1.24 AND _hoodie_commit_time > '2024'"
    )
