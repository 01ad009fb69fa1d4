"""The rules issue 63 settled, on small tables and statistics built here
(the slow tier checks each on a table Apache Hudi wrote,
`tests/test_hudi_round_two.py`): the default partition reads NULL, a float
range of [0.0, 0.0] is no range, what validate compares, the predicates
rows are evaluated for, and bounded reads."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from expressions import evaluate_rows, parse_sql, prune_files, to_sql
from listers import plan, scan
from metadata.errors import HudiFormatError
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.records import ColumnStats
from metadata.mdt.validate import _stat_differences
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage


def _stats(low: list[float | None], high: list[float | None], nulls: list[int], count: list[int]) -> pa.Table:
    return pa.table({"partition": ["p"] * len(low), "fileName": [f"f{i}" for i in range(len(low))], "valueCount": count,
                     "x_minValue": pa.array(low, pa.float64()), "x_maxValue": pa.array(high, pa.float64()), "x_nullCount": nulls})


def test_a_float_range_of_zeros_is_no_range_as_hudi_writes_it_for_a_nan_file() -> None:
    # f0: Hudi's record of a file holding -0.5 and NaN; f1: a true range; f2: -0.0 to 0.0 (either zero counts)
    stats = _stats([0.0, 1.0, -0.0], [0.0, 2.0, 0.0], [0, 0, 0], [2, 2, 2])
    assert prune_files(parse_sql("x < -0.1"), stats) == ["f0", "f2"]
    assert prune_files(parse_sql("x > 5", "trino"), stats) == ["f0", "f2"]  # Spark keeps f1 too: NaN is above every number
    assert prune_files(parse_sql("x < 1.5", "trino"), stats) == ["f0", "f1", "f2"]
    # an all-NULL file whose bounds Hudi recorded as 0.0 matches no comparison, but IS NULL
    all_null = _stats([0.0], [0.0], [2], [2])
    assert prune_files(parse_sql("x < -0.1"), all_null) == []
    assert prune_files(parse_sql("x IS NULL"), all_null) == ["f0"]


@pytest.mark.parametrize("hive_style", [True, False])
def test_rows_of_the_default_partition_read_null_in_their_partition_column(tmp_path: Path, hive_style: bool) -> None:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("city", pa.string())]), partition_fields=["city"], hive_style=hive_style)
    builder.write([{"id": 1, "city": "x"}, {"id": 2, "city": ""}, {"id": 3, "city": None}])
    rows = {r["id"]: r["city"] for r in scan(path, columns=["id", "city"]).to_table().to_pylist()}
    assert rows == {1: "x", 2: None, 3: None}  # '' is stored as the default partition, which reads NULL
    assert sorted(r["id"] for r in scan(path, "city IS NULL", columns=["id"]).to_table().to_pylist()) == [2, 3]
    assert scan(path, "city = ''", columns=["id"]).to_table().num_rows == 0
    assert len(plan(path, "city IS NULL").files) == 1


def test_spark_row_predicates_isnan_startswith_and_binary_literals() -> None:
    table = pa.table({"d": [1.0, math.nan, None], "s": ["xa1", "xb", None], "b": [b"\x01\x03\x00", b"\x01", None]})
    assert evaluate_rows(parse_sql("isnan(d)"), table).to_pylist() == [False, True, False]
    assert evaluate_rows(parse_sql("NOT isnan(d)"), table).to_pylist() == [True, False, True]  # isnan(NULL) is false, not NULL
    assert evaluate_rows(parse_sql("startswith(s, 'xa')"), table).to_pylist() == [True, False, False]
    assert evaluate_rows(parse_sql("b = X'010300'"), table).to_pylist() == [True, False, False]
    assert to_sql(parse_sql("b = X'010300'"), "spark") == "b = X'010300'"
    with pytest.raises(Exception, match="cannot evaluate rows: .* is not one hudi-bridge evaluates on rows"):
        evaluate_rows(parse_sql("is_nan(d)", "trino"), table)  # Trino's NaN equals nothing: no exact rewrite, so no answer


def test_validate_compares_timestamps_kept_as_longs_and_skips_bounds_of_all_null_columns() -> None:
    when = datetime(2024, 1, 1, 6, 42, 54, 666678, tzinfo=timezone.utc)
    micros = 1704091374666678
    stamp = pa.timestamp("us", "UTC")
    held = ColumnStats("f", "t", micros, micros, 2, 0, 0, 0, False, True)
    assert _stat_differences("f", "t", held, ColumnRange("f", "t", stamp, when, when, 0, 2)) == []
    wrong = ColumnStats("f", "t", micros + 1, micros, 2, 0, 0, 0, False, True)
    assert len(_stat_differences("f", "t", wrong, ColumnRange("f", "t", stamp, when, when, 0, 2))) == 1
    all_null = ColumnStats("f", "b", False, False, 2, 2, 0, 0, False, True)
    assert _stat_differences("f", "b", all_null, ColumnRange("f", "b", pa.bool_(), None, None, 2, 2)) == []
    nan = ColumnStats("f", "d", 0.0, 0.0, 2, 0, 0, 0, False, True)
    said = _stat_differences("f", "d", nan, ColumnRange("f", "d", pa.float64(), -0.5, math.nan, 0, 2))
    assert len(said) == 2 and all("a NaN" in line for line in said)


def test_a_bounded_read_refuses_a_longer_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    storage = Storage.open(str(tmp_path))
    assert storage.read_bytes("f", max_bytes=100) == b"x" * 100
    with pytest.raises(HudiFormatError, match="larger than the 99 bytes"):
        storage.read_bytes("f", max_bytes=99)


def test_the_spark_source_reads_the_default_partition_as_null_too() -> None:
    from engine_bridge.spark.scan import conform

    batch = pa.record_batch({"id": [2, 3], "city": ["", None]})
    target = pa.schema([("id", pa.int64()), ("city", pa.string())])
    assert conform(batch, target, {"city": None}, "f", ("city",)).column(1).to_pylist() == [None, None]
    # a field whose path holds a transformed value (a TIMESTAMP key generator's) keeps the file's value
    assert conform(batch, target, {"city": None}, "f", ()).column(1).to_pylist() == ["", None]
