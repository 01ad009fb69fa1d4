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
from metadata.sample_tables.builder import TableBuilder
from metadata.table.key_generator import KeyGenerator, KeyGeneratorType

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
        if "ts" in predicate and key_generator == "CUSTOM" and version == 6:
            # Table version 6 does not record which CUSTOM fields are TIMESTAMP: partitions kept, and said.
            assert any(reason.startswith("partition values of ts:") for reason in planned.not_used), planned.not_used
        elif "ts" in predicate:  # mapped through the key generator, as the explanation says
            stage = next(s for s in planned.stages if s.name == "partition values")
            assert "ts mapped through the TIMESTAMP key generator (EPOCHMILLISECONDS to 'yyyy/MM/dd/HH')" in stage.note
            assert stage.kept < stage.total, predicate


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


# Several input types, output formats and zones. `ranges` says whether the
# transform keeps order (fixed-width year-first output, no offsets in the
# input text, a zone without daylight saving time): then ranges prune too.
LAYOUTS = [
    ("EPOCHMILLISECONDS", None, "yyyy/MM/dd/HH", "UTC", True),
    ("UNIX_TIMESTAMP", None, "yyyyMMdd", "+05:30", True),
    ("EPOCHMILLISECONDS", None, "yyyy-MM-dd", "America/New_York", False),
    ("EPOCHMILLISECONDS", None, "dd-MM-yyyy", "UTC", False),
    ("DATE_STRING", "yyyy-MM-dd HH:mm:ss", "yyyy/MM/dd", "UTC", True),
    ("DATE_STRING", "yyyy-MM-dd'T'HH:mm:ss.SSSZ", "yyyy/MM/dd/HH", "UTC", False),
]
STEP = 5 * HOUR + 7_000


def layout_rows(timestamp_type: str, input_format: str | None) -> list[dict[str, object]]:
    start = millis("2023-12-30T20:00:00")
    out = []
    for i in range(30):
        moment = start + i * STEP
        value: object = moment // 1000 if timestamp_type == "UNIX_TIMESTAMP" else moment
        if input_format is not None:
            when = datetime.fromtimestamp(moment / 1000, tz=timezone.utc)
            value = when.strftime("%Y-%m-%d %H:%M:%S") if "'T'" not in input_format else when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
        out.append({"id": i, "ts": value, "region": ("eu", "us")[i % 2], "amount": float(i)})
    return out


def layout_predicates(data: list[dict[str, object]]) -> list[str]:
    def lit(v: object) -> str:
        return f"'{v}'" if isinstance(v, str) else str(v)

    a, b, c = (lit(data[i]["ts"]) for i in (5, 12, 20))
    return [f"ts = {a}", f"ts IN ({a}, {c})", f"ts >= {a} AND ts < {b}", f"ts > {c}", f"ts <= {a}", f"ts BETWEEN {a} AND {b}",
            f"ts <> {a}", f"NOT ts IN ({a})", f"ts = {a} OR region = 'eu'", f"NOT (ts < {b})", "ts IS NOT NULL"]


@pytest.mark.parametrize("hive_style", [False, True])
@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: "-".join(str(x) for x in layout[:4]).replace("/", ""))
def test_timestamp_layouts_map_predicates_soundly(tmp_path: Path, layout: tuple, version: int, hive_style: bool) -> None:
    timestamp_type, input_format, output, zone, ranges = layout
    schema = SCHEMA if input_format is None else pa.schema([("id", pa.int64()), ("ts", pa.string()), ("region", pa.string()), ("amount", pa.float64())])
    path = tmp_path / "t"
    builder = TableBuilder(str(path), schema, version=version, partition_fields=["ts"], hive_style=hive_style, key_generator="TIMESTAMP",
                           timestamp_output_format=output, timestamp_type=timestamp_type, timestamp_zone=zone,
                           timestamp_input_format=input_format or "")
    data = layout_rows(timestamp_type, input_format)
    builder.write(data)
    for predicate in layout_predicates(data):
        planned = plan(str(path), predicate, dialect="spark")
        matching = slices_with_matches(path, predicate)
        assert matching, predicate
        assert matching <= {(s.partition, s.file_id) for s in planned.files}, predicate
        stage = next(s for s in planned.stages if s.name == "partition values")
        if predicate.startswith("ts = ") and "OR" not in predicate:
            assert stage.kept == 1, (predicate, stage)  # equality maps exactly, in every layout
        if predicate.startswith("ts >= ") or predicate.startswith("ts BETWEEN"):
            assert (stage.kept < stage.total) is ranges, (predicate, stage)
        if not ranges:
            assert "equality only" in stage.note, stage.note
