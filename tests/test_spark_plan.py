"""Planning with column_stats read and evaluated on Spark executors: the
same candidates as the local planner, on every fixture and on builder
tables, with the stage saying where it ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine_bridge.spark import plan_on_spark
from listers import plan
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures
from tests.test_listers import PREDICATES

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _same_plan(spark: Any, path: str, where: str) -> None:
    local = plan(path, where)
    spread = plan_on_spark(spark, path, where)
    assert [s.to_dict() for s in spread.files] == [s.to_dict() for s in local.files], (where, spread.explain())
    if any(s.name == "column_stats" for s in local.stages):
        stage = next(s for s in spread.stages if s.name == "column_stats")
        assert "evaluated on Spark executors" in stage.note, spread.explain()


@requires_fixtures
@pytest.mark.parametrize("fixture_table", [f for f in fixture_ids() if f in PREDICATES] or ["no-fixtures"], indirect=True)
def test_every_fixture_plans_the_same_on_executors(fixture_table: str, spark: Any) -> None:
    for where in PREDICATES[Path(fixture_table).parent.name]:
        _same_plan(spark, fixture_table, where)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_builder_tables_plan_the_same_on_executors(tmp_path: Path, spark: Any, table_type: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    builder = TableBuilder(path, schema, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=4)
    builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(60)])
    MetadataTableWriter(path).build()
    builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i) + 100} for i in range(0, 60, 7)])
    MetadataTableWriter(path).sync()
    for where in ("fare > 150", "fare < 5 OR fare BETWEEN 30 AND 33", "city = 'sf' AND fare >= 40", "id IN (3, 44)", "fare IS NULL"):
        _same_plan(spark, path, where)


def test_cli_plan_engine_spark(tmp_path: Path, spark: Any) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=4, metadata_table=True).write(
        [{"id": i, "city": ("sf", "la")[i % 2], "fare": float(i)} for i in range(20)])
    MetadataTableWriter(path).build()
    shown = CliRunner().invoke(main, ["plan", path, "--where", "fare > 15", "--engine", "spark", "--json"])
    assert shown.exit_code == 0, shown.output
    planned = json.loads(shown.output)
    stage = next(s for s in planned["stages"] if s["stage"] == "column_stats")
    assert "evaluated on Spark executors" in stage["note"]
    assert [f["base_file"] for f in planned["files"]] == [s.base_file for s in plan(path, "fare > 15").files]
