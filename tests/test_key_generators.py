"""Partition pruning on tables whose key generator transforms the partition
value: never drops a file slice holding a matching row (checked by reading
the rows of every file), and says why it did not prune."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from expressions import evaluate_rows, parse_sql
from listers import plan
from metadata import HudiTable
from metadata.key_generator import KeyGenerator, KeyGeneratorType
from metadata.testing.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])
HOUR = 3_600_000


def millis(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def rows() -> list[dict[str, object]]:
    start = millis("2023-06-01T06:00:00")
    return [{"id": i, "ts": start + (i % 6) * HOUR + i * 1000, "region": ("eu", "us")[i % 2], "amount": float(i)} for i in range(24)]


def build(path: Path, version: int, key_generator: str, hive_style: bool) -> TableBuilder:
    fields = ["ts"] if key_generator == "TIMESTAMP" else ["ts:TIMESTAMP", "region:SIMPLE"]
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=fields, hive_style=hive_style,
                           key_generator=key_generator, timestamp_output_format="yyyy/MM/dd/HH")
    builder.write(rows())
    return builder


def slices_with_matches(path: Path, predicate: str) -> set[tuple[str, str]]:
    table = HudiTable.open(str(path))
    expr = parse_sql(predicate, "spark")
    found = set()
    for s in table.file_slices():
        assert s.base_file is not None
        data = pq.read_table(path / s.base_file)
        if any(evaluate_rows(expr, data).to_pylist()):
            found.add((s.partition, s.file_id))
    return found


PREDICATES = [
    f"ts = {rows()[7]['ts']}",
    f"ts >= {millis('2023-06-01T08:00:00')} AND ts < {millis('2023-06-01T09:30:00')}",
    f"ts > {millis('2023-06-01T10:00:00')}",
    f"ts IN ({rows()[1]['ts']}, {rows()[2]['ts']})",
    "region = 'eu' AND amount > 3",
]


@pytest.mark.parametrize("hive_style", [False, True])
@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("key_generator", ["TIMESTAMP", "CUSTOM"])
def test_transformed_partition_paths_never_lose_matching_files(tmp_path: Path, key_generator: str, version: int, hive_style: bool) -> None:
    path = tmp_path / "t"
    build(path, version, key_generator, hive_style)
    partitions = HudiTable.open(str(path)).partitions()
    assert any("2023/06/01/08" in p for p in partitions)  # the path holds a formatted hour, not the value
    for predicate in PREDICATES:
        if "region" in predicate and key_generator == "TIMESTAMP":
            continue
        planned = plan(str(path), predicate, dialect="spark")
        matching = slices_with_matches(path, predicate)
        assert matching, predicate  # each predicate matches some rows
        assert matching <= {(s.partition, s.file_id) for s in planned.files}, predicate
        if "ts" in predicate:
            assert any(reason.startswith("partition values of ts:") for reason in planned.not_used), planned.not_used


def test_custom_simple_fields_still_prune(tmp_path: Path) -> None:
    path = tmp_path / "t"
    build(path, 8, "CUSTOM", hive_style=True)
    planned = plan(str(path), "region = 'eu'", dialect="spark")
    stage = next(s for s in planned.stages if s.name == "partition values")
    assert stage.kept == stage.total // 2
    assert {s.partition.split("/")[-1] for s in planned.files} == {"region=eu"}


@pytest.mark.parametrize("props,field,prunable", [
    ({"hoodie.table.keygenerator.type": "SIMPLE"}, "p", True),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexAvroKeyGenerator"}, "p", True),
    ({}, "p", True),  # nothing recorded: Hudi's default writes values as they are
    ({"hoodie.table.keygenerator.type": "TIMESTAMP"}, "p", False),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator"}, "p", False),
    ({"hoodie.table.keygenerator.type": "CUSTOM", "hoodie.table.partition.fields": "p:SIMPLE,t:TIMESTAMP"}, "p", True),
    ({"hoodie.table.keygenerator.type": "CUSTOM", "hoodie.table.partition.fields": "p:SIMPLE,t:TIMESTAMP"}, "t", False),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator", "hoodie.table.partition.fields": "p"}, "p", False),
    ({"hoodie.table.keygenerator.class": "com.example.MyKeyGenerator"}, "p", False),
])
def test_which_paths_hold_values(props: dict[str, str], field: str, prunable: bool) -> None:
    reason = KeyGenerator.from_properties(props).why_path_is_not_the_value(field)
    assert (reason is None) is prunable, reason


def test_spark_sql_key_generator_formats_timestamp_columns_only() -> None:
    generator = KeyGenerator.from_properties({"hoodie.table.keygenerator.class": "org.apache.spark.sql.hudi.command.SqlKeyGenerator"})
    assert generator.type is KeyGeneratorType.SPARK_SQL
    assert generator.why_path_is_not_the_value("day") is None
    assert generator.why_path_is_not_the_value("ts", is_timestamp_column=True) is not None
