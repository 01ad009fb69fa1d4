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


LOCAL_CLUSTER = """
import json, sys
import pyarrow as pa
from pyspark.sql import SparkSession
from engine_bridge.spark import lookup_keys, plan_on_spark
from engine_bridge.spark.index_engine import SparkStatsEngine
from listers import plan
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.write.writer import MetadataTableWriter

path = sys.argv[1]
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
out = {}
for where in ("fare > 40", "city = 'la' AND fare < 10", "id IN (4, 50)"):
    spread = plan_on_spark(spark, path, where)
    out[where] = [[s.partition, s.file_id] for s in spread.files] == [[s.partition, s.file_id] for s in plan(path, where).files]
out["note"] = next(s.note for s in plan_on_spark(spark, path, "fare > 40").stages if s.name == "column_stats")
joined = plan_on_spark(spark, path, "id IN (4, 50)", key_lookup_threshold=1)
out["joined"] = [[s.partition, s.file_id] for s in joined.files] == [[s.partition, s.file_id] for s in plan(path, "id IN (4, 50)").files]
out["joined_note"] = joined.explain()
keys_df = spark.createDataFrame([("4",), ("50",), ("999",)], "key string")
out["tagged"] = sorted(r["record_key"] for r in lookup_keys(spark, path, keys_df).collect())
# the build's records encoded on the executors (their Python workers get the encoder pickled)
MetadataTableWriter(sys.argv[2], engine=SparkStatsEngine(spark)).build(
    [MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS])
print(json.dumps(out))
spark.stop()
"""


def test_a_local_cluster_plans_the_same(tmp_path: Path) -> None:
    """Executors as separate JVMs with their own Python workers
    (`local-cluster[2,1,1024]`, in a process of its own): the predicate and
    the candidates travel pickled, and the plans equal the local planner's;
    keys are looked up as a join, and an index build on the executors gives
    the local build's statistics."""
    import os
    import shutil
    import subprocess
    import sys

    from metadata.mdt.file_groups import MdtPartition
    from tests.test_index_writer import _live

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    path, copy = str(tmp_path / "t"), str(tmp_path / "copy")
    TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=4).write(
        [{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(60)])
    shutil.copytree(path, copy)
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS, MdtPartition.RECORD_INDEX])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    ran = subprocess.run([sys.executable, "-c", LOCAL_CLUSTER, path, copy], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[1], env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert all(result[w] for w in ("fare > 40", "city = 'la' AND fare < 10", "id IN (4, 50)", "joined")), result
    assert "evaluated on Spark executors: 2 column_stats shard(s)" in result["note"], result["note"]
    assert "looked up as a Spark join" in result["joined_note"], result["joined_note"]
    assert result["tagged"] == ["4", "50"]
    built_there = _live(copy)
    assert built_there == _live(path) and len(built_there[1]) > 15, "column_stats built on the executors differ"


def test_random_tables_and_predicates_plan_the_same(spark: Any) -> None:
    """Property (seeded): random histories and predicates, the same plan either way."""
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    leaves = st.one_of(
        st.builds(lambda v: f"fare > {v}", st.integers(0, 60)),
        st.builds(lambda v: f"fare <= {v}", st.integers(0, 60)),
        st.builds(lambda c: f"city = '{c}'", st.sampled_from(["sf", "la", "nyc"])),
        st.builds(lambda a, b: f"id IN ({a}, {b})", st.integers(0, 60), st.integers(0, 60)),
        st.just("fare IS NULL"),
    )
    predicates = st.builds(lambda a, op, b: f"({a}) {op} ({b})", leaves, st.sampled_from(["AND", "OR"]), leaves)

    @settings(max_examples=8, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]), st.integers(5, 40), st.lists(st.integers(0, 39), max_size=6),
           st.lists(predicates, min_size=3, max_size=3))
    def check(table_type: str, rows: int, updated: list[int], wheres: list[str]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "t")
            builder = TableBuilder(path, schema, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=3)
            builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(rows)])
            MetadataTableWriter(path).build()
            if updated:
                builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i) + 20} for i in sorted(set(updated))])
                MetadataTableWriter(path).sync()
            for where in wheres:
                _same_plan(spark, path, where)

    check()


def test_the_driver_does_not_list_the_files_the_executors_evaluate(tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key stage, the kept partitions' listing is read by the
    tasks only: the driver gets candidate names and the files of their
    groups, and builds slices from those."""
    from listers import DirectoryLister
    from metadata.mdt.listing import MetadataListing

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=4).write(
        [{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(60)])
    MetadataTableWriter(path).build()
    expected = [s.to_dict() for s in plan(path, "fare > 40").files]

    def refuse(self: Any, partitions: list[str]) -> None:
        raise AssertionError("the driver listed the files")

    monkeypatch.setattr(DirectoryLister, "file_table", refuse)  # the executors' own processes are not patched
    monkeypatch.setattr(MetadataListing, "file_names_for", refuse)  # nor are the groups left listed again here
    spread = plan_on_spark(spark, path, "fare > 40")
    assert [s.to_dict() for s in spread.files] == expected
    stage = next(s for s in spread.stages if s.name == "column_stats")
    assert stage.total == 15 and stage.kept == len(expected)  # all 15 files evaluated, on the executors


def test_lookup_keys_tags_a_dataframe_of_keys_through_the_record_index(tmp_path: Path, spark: Any) -> None:
    """Keys routed to the record index's file groups as Hudi routes them, one
    task per group: the same locations as the driver's lookup, keys the index
    does not hold left out; a partitioned record index gives every partition's entry."""
    from engine_bridge.spark import lookup_keys
    from metadata import MetadataTable
    from metadata.mdt.file_groups import MdtPartition
    from metadata.mdt.indexes import record_locations

    schema = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    builder = TableBuilder(path, schema, table_type="MERGE_ON_READ", version=8, partition_fields=["city"], max_rows_per_file=7)
    builder.write([{"id": f"k{i:04d}", "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(500)])
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.RECORD_INDEX])
    builder.write([{"id": f"k{i:04d}", "city": ("sf", "la", "nyc")[i % 3], "fare": 1.0} for i in range(400, 520)])
    MetadataTableWriter(path).sync()  # locations changed and added in the metadata table's logs
    wanted = [f"k{i:04d}" for i in range(0, 600, 3)]
    keys_df = spark.createDataFrame([(k,) for k in wanted], "key string")
    tagged = lookup_keys(spark, path, keys_df)
    found = {r["record_key"]: (r["partition"], r["file_id"]) for r in tagged.collect()}
    expected = record_locations(MetadataTable.open(path), wanted)
    assert found == expected and len(found) == len([k for k in wanted if k < "k0520"])
    assert tagged.rdd.getNumPartitions() == 10  # one task per record-index file group


def test_a_plan_keeps_the_groups_of_a_dataframe_of_keys(tmp_path: Path, spark: Any) -> None:
    """plan_on_spark(keys=DataFrame): a semi-join through the record index,
    the same slices as a plan pinning those keys in its predicate."""
    from metadata.mdt.file_groups import MdtPartition

    schema = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    builder = TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=5)
    builder.write([{"id": f"k{i:03d}", "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(120)])
    builder.write([{"id": f"k{i:03d}", "city": ("sf", "la", "nyc")[i % 3], "fare": float(i) + 1} for i in range(0, 120, 9)])
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.RECORD_INDEX])
    wanted = ["k007", "k050", "k051", "k999"]
    keys_df = spark.createDataFrame([(k,) for k in wanted], "key string")
    joined = plan_on_spark(spark, path, "fare > 10", keys=keys_df)
    pinned = plan(path, "fare > 10 AND id IN ('k007', 'k050', 'k051', 'k999')")
    assert [s.to_dict() for s in joined.files] == [s.to_dict() for s in pinned.files], joined.explain()
    assert 0 < len(joined.files) < len(plan(path, "fare > 10").files)
    assert any("DataFrame" in s.note for s in joined.stages if s.name == "record_index"), joined.explain()


def test_large_key_sets_are_looked_up_on_the_executors(tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys a predicate pins, over the threshold, are looked up as a Spark
    join (the driver's record-index reader is never called): the same slices
    as the local planner, through an IN list and through a secondary index;
    at or under the threshold, the driver looks them up."""
    from listers.index_support import record_index
    from metadata.mdt.file_groups import MdtPartition
    from metadata.mdt.secondary_index import SecondaryIndexPartition

    schema = pa.schema([("id", pa.string()), ("city", pa.string()), ("rider", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    builder = TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=5)
    builder.write([{"id": f"k{i:03d}", "city": ("sf", "la", "nyc")[i % 3], "rider": f"r{i % 40}", "fare": float(i)}
                   for i in range(150)])
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.RECORD_INDEX,
                                     SecondaryIndexPartition("secondary_index_rider", "rider")])
    by_key = "id IN ('k007', 'k050', 'k051', 'k121', 'k999') AND fare > 10"
    by_rider = "rider IN ('r3', 'r17')"
    expected = {where: [s.to_dict() for s in plan(path, where).files] for where in (by_key, by_rider)}
    assert 0 < len(expected[by_key]) < len(expected[by_rider]) < len(plan(path, "fare > 0").files)

    def refuse(*args: Any) -> None:
        raise AssertionError("the driver looked the keys up")

    with monkeypatch.context() as patched:
        patched.setattr(record_index, "record_locations", refuse)  # the executors' own processes are not patched
        for where in (by_key, by_rider):
            spread = plan_on_spark(spark, path, where, key_lookup_threshold=3)
            assert [s.to_dict() for s in spread.files] == expected[where], spread.explain()
            assert "looked up as a Spark join" in spread.explain(), spread.explain()
    under = plan_on_spark(spark, path, by_key, key_lookup_threshold=5)  # 5 keys: not over the threshold
    assert [s.to_dict() for s in under.files] == expected[by_key] and "Spark join" not in under.explain()


def test_read_plans_on_the_executors_above_the_threshold(tmp_path: Path, spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    """engine_bridge.spark.read: a table whose column_stats hold at least
    hoodie.metadata.index.column.stats.inMemory.projection.threshold records
    is planned on the executors (and says why); below it, on the driver."""
    import logging

    from engine_bridge.spark import read

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
    path = str(tmp_path / "t")
    TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=4).write(
        [{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(60)])
    MetadataTableWriter(path).build()
    expected = sorted(r["id"] for r in read(spark, path, "fare > 40").collect())
    assert expected == list(range(41, 60))
    with caplog.at_level(logging.INFO, logger="engine_bridge.spark.fast_read"):
        rows = read(spark, path, "fare > 40", **{"hoodie.metadata.index.column.stats.inMemory.projection.threshold": "10"})
        assert sorted(r["id"] for r in rows.collect()) == expected
    assert "evaluated on Spark executors" in caplog.text and "records (files x columns)" in caplog.text
