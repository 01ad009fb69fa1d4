"""Pruning next to Hudi's own data-skipping rules.

Hudi's Spark reader (`DataSkippingUtils.translateIntoColumnStatsIndexFilterExpr`)
rewrites each predicate into one on the column_stats index. Where that
rewrite is sound, the plan must drop the same file; where it is not, a file
Hudi drops holds a matching row, and the plan keeps it. Each case writes
Hudi's rule beside it and the rows of the file, so both claims are checked
on real values.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa
import pytest

from expressions import evaluate_rows, parse_sql, prune_files


def one_file(column: str, values: list[Any], dtype: pa.DataType, stats: bool = True) -> tuple[pa.Table, pa.Table]:
    """(rows, stats) of one file holding `values`."""
    rows = pa.table({column: pa.array(values, dtype)})
    present = [v for v in values if v is not None]
    low, high = (min(present), max(present)) if stats and present else (None, None)
    table = pa.table({
        "fileName": ["f"],
        "valueCount": [len(values)],
        f"{column}_minValue": pa.array([low], dtype),
        f"{column}_maxValue": pa.array([high], dtype),
        f"{column}_nullCount": pa.array([len(values) - len(present)], pa.int64()),
    })
    return rows, table


TS = pa.timestamp("us", tz="UTC")


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# (predicate, column, values in the file, type, Hudi's rule on the stats)
SOUND = [
    ("c = 5", "c", [10, 20], pa.int32(), "minValue <= 5 AND maxValue >= 5"),
    ("c < 5", "c", [10, 20], pa.int32(), "minValue < 5"),
    ("c > 30", "c", [10, 20], pa.int32(), "maxValue > 30"),
    ("c IN (1, 2)", "c", [10, 20], pa.int32(), "OR of (minValue <= v AND maxValue >= v)"),
    ("c IS NULL", "c", [10, 20], pa.int32(), "nullCount > 0"),
    ("c IS NOT NULL", "c", [None, None], pa.int32(), "valueCount - nullCount > 0"),
    ("c <> 5", "c", [5, 5], pa.int32(), "NOT (minValue = 5 AND maxValue = 5)"),
    ("NOT c IN (5)", "c", [5, 5], pa.int32(), "NOT (minValue = 5 AND maxValue = 5)"),
    ("c + 1 = 5", "c", [10, 20], pa.int32(), "order-preserving +: minValue + 1 <= 5 AND maxValue + 1 >= 5"),
    ("c * 2 > 100", "c", [10, 20], pa.int32(), "order-preserving *: maxValue * 2 > 100"),
    ("date_add(d, 1) = DATE '2021-01-01'", "d", [date(2021, 2, 1), date(2021, 3, 1)], pa.date32(), "date_add(minValue, 1) <= v AND date_add(maxValue, 1) >= v"),
    ("year(t) = 2020", "t", [ts("2021-03-01T00:00:00"), ts("2021-09-01T00:00:00")], TS, "year(minValue) <= 2020 AND year(maxValue) >= 2020"),
    ("to_date(t) < DATE '2021-01-01'", "t", [ts("2021-03-01T00:00:00"), ts("2021-09-01T00:00:00")], TS, "to_date(minValue) < v"),
    ("date_format(t, 'yyyy-MM') = '2020-12'", "t", [ts("2021-03-01T00:00:00"), ts("2021-09-01T00:00:00")], TS,
     "date_format(minValue, p) <= v AND date_format(maxValue, p) >= v"),
    ("s LIKE 'abc%'", "s", ["b", "c"], pa.string(), "StartsWith: minValue <= 'abc' ... prefix range"),
    ("lower(s) = 'xyz'", "s", ["abc", "abd"], pa.string(), "lower(minValue) <= v AND lower(maxValue) >= v"),
    ("CAST(c AS DOUBLE) > 100.0D", "c", [10, 20], pa.int64(), "a widening cast keeps order: CAST(maxValue AS DOUBLE) > 100.0"),
    ("CAST(c AS DOUBLE) IN (31.0, 30.0)", "c", [10, 20], pa.int64(), "CAST(minValue) <= v AND CAST(maxValue) >= v for each v"),
    ("CAST(c AS FLOAT) < 5", "c", [10, 20], pa.int64(), "CAST(minValue AS FLOAT) < 5"),
    ("CAST(c AS DOUBLE) <> 10.0", "c", [10, 10], pa.int64(), "NOT (CAST(minValue) = 10.0 AND CAST(maxValue) = 10.0)"),
]


@pytest.mark.parametrize("predicate,column,values,dtype,hudi_rule", SOUND)
def test_where_hudi_prunes_soundly_the_plan_prunes_too(predicate: str, column: str, values: list[Any], dtype: pa.DataType, hudi_rule: str) -> None:
    rows, stats = one_file(column, values, dtype)
    expr = parse_sql(predicate, "spark")
    assert not any(evaluate_rows(expr, rows).to_pylist())  # Hudi's drop is right: no row matches
    assert prune_files(expr, stats) == [], f"Hudi drops this file by {hudi_rule}"


# (predicate, column, values in the file, type, Hudi's rule, why it is wrong)
UNSOUND = [
    ("date_format(t, 'MM/dd/yyyy') = '12/31/2021'", "t", [ts("2021-12-31T10:00:00"), ts("2022-01-01T10:00:00")], TS,
     "date_format(minValue) <= v AND date_format(maxValue) >= v: '01/01/2022' < '12/31/2021'",
     "MM/dd/yyyy does not keep order across years"),
    ("month(t) = 12", "t", [ts("2021-12-15T00:00:00"), ts("2022-01-15T00:00:00")], TS,
     "month(minValue) <= 12 AND month(maxValue) >= 12: month(max) = 1", "month() is not monotone across a year"),
    ("lower(s) = 'b'", "s", ["B", "a"], pa.string(), "lower(minValue) <= 'b' AND lower(maxValue) >= 'b': lower('a') < 'b'",
     "'B' < 'a' but lower('B') > 'a': lower is not monotone"),
    ("c = 5", "c", [5, 7], pa.int32(), "a column without statistics: Hudi's filter on null bounds is false", "no statistics say nothing"),
]


@pytest.mark.parametrize("predicate,column,values,dtype,hudi_rule,why", UNSOUND)
def test_where_hudi_prunes_unsoundly_the_plan_keeps_the_file(predicate: str, column: str, values: list[Any], dtype: pa.DataType,
                                                              hudi_rule: str, why: str) -> None:
    rows, stats = one_file(column, values, dtype, stats="without statistics" not in hudi_rule)
    expr = parse_sql(predicate, "spark")
    assert any(evaluate_rows(expr, rows).to_pylist()), "the file holds a matching row"
    assert prune_files(expr, stats) == ["f"], f"kept: {why} (Hudi: {hudi_rule})"


# Apache Hudi's open bugs that drop rows: the column_stats record each one writes, and the plan keeping the file.
def _stats(column: str, dtype: pa.DataType, low: Any, high: Any, nulls: int, count: int) -> pa.Table:
    return pa.table({"fileName": ["f"], "valueCount": [count], f"{column}_minValue": pa.array([low], dtype),
                     f"{column}_maxValue": pa.array([high], dtype), f"{column}_nullCount": pa.array([nulls], pa.int64())})


@pytest.mark.parametrize("predicate", ["c > 5.0", "c >= 2.0", "NOT c < 5.0", "c <> 1.0"])
def test_hudi_18754_a_nan_left_out_of_float_bounds_keeps_the_file(predicate: str) -> None:
    """Parquet leaves NaN out of a float column's min and max, and Hudi records
    [1.0, 1.0] for a file holding 1.0 and NaN; Spark orders NaN above every
    number, so `c > 5.0` selects the NaN row that Hudi's `maxValue > 5.0` drops."""
    rows = pa.table({"c": pa.array([1.0, float("nan")], pa.float64())})
    expr = parse_sql(predicate, "spark")
    assert any(evaluate_rows(expr, rows).to_pylist())
    assert prune_files(expr, _stats("c", pa.float64(), 1.0, 1.0, 0, 2)) == ["f"]


@pytest.mark.parametrize("predicate,values", [("s LIKE 'ab%'", ["abc", "abd"]), ("s LIKE 'ab%'", ["ab", "ab\uffff"]),
                                              ("s LIKE 'a\\_%'", ["a_1", "a_2"])])
def test_hudi_18791_a_like_prefix_keeps_files_whose_values_extend_the_prefix(predicate: str, values: list[str]) -> None:
    """A prefix bound taken for the value itself (`minValue <= 'ab' AND
    maxValue >= 'ab'`) drops ['abc', 'abd'], which match `LIKE 'ab%'`; the
    prefix range ['ab', next prefix) keeps them, escapes included."""
    rows = pa.table({"s": values})
    expr = parse_sql(predicate, "spark")
    assert all(evaluate_rows(expr, rows).to_pylist())
    assert prune_files(expr, _stats("s", pa.string(), min(values), max(values), 0, len(values))) == ["f"]


def test_hudi_18755_an_all_null_record_cannot_be_told_from_a_true_one() -> None:
    """A file whose footer had no statistics, recorded as all null: it looks
    exactly like a file of nulls, so pruning drops it as Hudi does; `plan
    --verify` and `table validate` (against the footers) are what catch it."""
    rows = pa.table({"c": pa.array([5, 7], pa.int32())})
    expr = parse_sql("c = 5", "spark")
    assert any(evaluate_rows(expr, rows).to_pylist())
    assert prune_files(expr, _stats("c", pa.int32(), None, None, 2, 2)) == []


def test_hudi_20296_a_file_written_before_its_column_was_indexed_keeps_the_file() -> None:
    """No column_stats record for the column in a file written before the
    column joined the index: no bounds, no null count; nothing is known."""
    rows = pa.table({"c": pa.array([5, 7], pa.int32())})
    expr = parse_sql("c = 5", "spark")
    assert any(evaluate_rows(expr, rows).to_pylist())
    assert prune_files(expr, _stats("c", pa.int32(), None, None, None, 2)) == ["f"]


@pytest.mark.parametrize("predicate,values", [
    ("CAST(c AS DOUBLE) = 9007199254740993.0", [9007199254740992, 9007199254740992]),  # 2^53 + 1 rounds to 2^53
    ("CAST(c AS DOUBLE) > 9223372036854775000", [9223372036854775806, 9223372036854775806]),
    ("CAST(c AS DOUBLE) > 15.0", [10, 20]),
])
def test_a_rounding_cast_keeps_every_file_a_rounded_value_matches_in(predicate: str, values: list[int]) -> None:
    """BIGINT to DOUBLE keeps order but not equality: bounds are compared
    after the cast, as the rows are, so a file whose values round onto the
    literal stays."""
    rows, stats = one_file("c", values, pa.int64())
    expr = parse_sql(predicate, "spark")
    assert any(evaluate_rows(expr, rows).to_pylist())
    assert prune_files(expr, stats) == ["f"]
