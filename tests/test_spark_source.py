# Over 400 lines: the Spark data source's cases share one SparkSession and its fixtures.
"""The `hudi` Spark data source on a real local[2] SparkSession, checked
against hudi-rs on every fixture table and on builder tables."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine_bridge.spark import describe, read, register, register_views, table
from engine_bridge.spark.options import BEGIN, END, PRUNE_PUSHED, QUERY_TYPE, SPLIT_BYTES
from engine_bridge.spark.register import pushdown_state_is_scoped
from engine_bridge.spark.scan import conform
from engine_bridge.spark.schema import spark_arrow_schema, spark_schema, table_arrow_schema
from engine_bridge.spark.stream import MAX_COMMITS, START_OFFSET
from hive_sync import EmbeddedMetastore, SyncOptions, sync
from hive_sync.hms import HmsClient
from metadata import HudiTable
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import FIXTURE_ZIPS, requires_fixtures

pytestmark = [pytest.mark.services, pytest.mark.slow]
READ_FIXTURES = [z.stem for z in FIXTURE_ZIPS if "empty" not in z.stem] or ["no-fixtures"]


@pytest.fixture(scope="module")
def source(spark: Any) -> str:
    return register(spark).name


def _target(path: str) -> pa.Schema:
    return spark_arrow_schema(spark_schema(table_arrow_schema(HudiTable.open(path))))


def _rows(batches: Any, target: pa.Schema) -> list[str]:
    rows = [r for b in batches for r in conform(b, target, {}, "compared").to_pylist()]
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def spark_rows(frame: Any, target: pa.Schema) -> list[str]:
    return _rows(frame.toArrow().to_batches(), target)


def hudi_rs_rows(path: str, target: pa.Schema, options: Any = None) -> list[str]:
    rs = hudi.HudiTableBuilder.from_base_uri(path).build()
    return _rows(rs.read(options) if options is not None else rs.read(), target)


# Acceptance: every fixture, every read, against hudi-rs ----------------------------------------
@requires_fixtures
@pytest.mark.parametrize("fixture_table", READ_FIXTURES, indirect=True)
def test_fixture_reads_equal_hudi_rs(fixture_table: str, spark: Any, source: str) -> None:
    target = _target(fixture_table)
    load = spark.read.format(source)
    snapshot = spark_rows(load.load(fixture_table), target)
    assert snapshot and snapshot == hudi_rs_rows(fixture_table, target)
    read_optimized = hudi.HudiReadOptions().with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    assert spark_rows(load.option(QUERY_TYPE, "read_optimized").load(fixture_table), target) == hudi_rs_rows(fixture_table, target, read_optimized)
    commits = HudiTable.open(fixture_table).timeline.commits()
    for commit in commits:
        as_of = hudi.HudiReadOptions().with_as_of_timestamp(commit.requested_time)
        frame = spark.read.format(source).option("as.of.instant", commit.requested_time).load(fixture_table)
        assert spark_rows(frame, target) == hudi_rs_rows(fixture_table, target, as_of), commit
    keys = ["00000000000000000"] + [c.completion_time or c.requested_time for c in commits]
    for begin, end in itertools.combinations(keys, 2):  # every pair of instants
        frame = (spark.read.format(source).option(QUERY_TYPE, "incremental").option(BEGIN, begin).option(END, end)
                 .load(fixture_table))
        incremental = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin).with_end_timestamp(end)
        assert spark_rows(frame, target) == hudi_rs_rows(fixture_table, target, incremental), (begin, end)


def _predicates(path: str) -> list[str]:
    """Three or four predicates on the fixture's own values: a partition
    value, a record key, a numeric range, and a conjunction."""
    table = HudiTable.open(path)
    data = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    # Deterministic, and the most repeated key first: a key inserted twice must find both rows.
    keys = data.column("_hoodie_record_key").to_pylist()
    chosen = min(set(keys), key=lambda k: (-keys.count(k), k))
    first = data.slice(keys.index(chosen), 1).to_pylist()[0]
    predicates = [f"_hoodie_record_key = '{first['_hoodie_record_key']}'"]
    for field in table.config.partition_fields:
        value = first.get(field)
        if isinstance(value, str):
            predicates.append(f"{field} = '{value}'")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            predicates.append(f"{field} = {value}")
    numeric = [f.name for f in data.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    if numeric:
        column = numeric[0]
        values = sorted(v for v in data.column(column).to_pylist() if v is not None)
        if values:
            predicates.append(f"{column} > {values[len(values) // 2]}")
            predicates.append(f"{column} <= {values[len(values) // 2]} AND _hoodie_commit_time IS NOT NULL")
    return predicates


@requires_fixtures
@pytest.mark.parametrize("fixture_table", READ_FIXTURES, indirect=True)
def test_fixture_predicates_prune_and_return_the_filtered_rows(fixture_table: str, spark: Any, source: str) -> None:
    target = _target(fixture_table)
    full = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(fixture_table).build().read())
    full = pa.Table.from_batches([conform(b, target, {}, "hudi-rs") for b in full.to_batches()], schema=target)
    everything = spark.createDataFrame(full)
    total = len(HudiTable.open(fixture_table).file_slices())
    pruned_somewhere = False
    for predicate in _predicates(fixture_table):
        # A fresh DataFrame per query: the one case where this Spark may prune on pushed filters.
        frame = (spark.read.format(source).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1")
                 .load(fixture_table).where(predicate))
        assert spark_rows(frame, target) == spark_rows(everything.where(predicate), target), predicate
        read = frame.rdd.getNumPartitions()
        assert read <= total
        pruned_somewhere |= read < total
    if total > 1 and HudiTable.open(fixture_table).config.is_partitioned:
        assert pruned_somewhere, "no predicate pruned a file slice"


# Reuse of one DataFrame / temporary view ----------------------------------------------------------
def _partitioned_table(path: Path) -> str:
    schema = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
    builder = TableBuilder(str(path), schema, partition_fields=["a"], version=8)
    builder.write([{"id": i, "a": i % 8 + 1, "b": "x" if i == 0 else f"v{i}"} for i in range(32)])
    return str(path)


def test_reused_dataframe_and_view_return_each_querys_rows(tmp_path: Path, spark: Any, source: str) -> None:
    path = _partitioned_table(tmp_path / "reuse")
    same = spark.read.format(source).load(path)
    assert same.where("a > 5").count() == 12
    assert same.where("a > 2 OR b = 'x'").count() == 25
    assert same.count() == 32
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW reuse_view USING {source} OPTIONS (path '{path}')")
    assert spark.sql("SELECT count(*) FROM reuse_view WHERE a > 5").first()[0] == 12
    assert spark.sql("SELECT count(*) FROM reuse_view WHERE a > 2 OR b = 'x'").first()[0] == 25
    assert spark.sql("SELECT count(*) FROM reuse_view").first()[0] == 32


def test_pruning_default_follows_whether_spark_leaks_pushdown_state(tmp_path: Path, spark: Any, source: str) -> None:
    """Forced pruning on a reused DataFrame is wrong exactly when register()
    says this Spark leaks one query's pushdown plan into the next; that is
    why pruning is off by default there."""
    path = _partitioned_table(tmp_path / "forced")
    forced = spark.read.format(source).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1").load(path)
    assert forced.where("a > 5").count() == 12
    later = forced.where("a > 2 OR b = 'x'").count()
    assert (later == 25) == pushdown_state_is_scoped(spark)
    assert register(spark).prunes_pushed_filters == pushdown_state_is_scoped(spark)


def test_catalog_paths_and_bad_options_are_clear_errors(tmp_path: Path, spark: Any, source: str) -> None:
    path = _partitioned_table(tmp_path / "errors")
    with pytest.raises(Exception, match="got no path.*engine_bridge.spark.table"):
        spark.read.format(source).load().count()
    with pytest.raises(Exception, match="hoodie.datasource.query.type='sideways'"):
        spark.read.format(source).option(QUERY_TYPE, "sideways").load(path).count()
    with pytest.raises(Exception, match="incremental query needs hoodie.datasource.read.begin.instanttime"):
        spark.read.format(source).option(QUERY_TYPE, "incremental").load(path).count()
    first = HudiTable.open(path).timeline.commits()[0].requested_time
    dashed = f"{first[:4]}-{first[4:6]}-{first[6:8]} {first[8:10]}:{first[10:12]}:{first[12:14]}.{first[14:]}"
    assert spark.read.format(source).option("as.of.instant", dashed).load(path).count() == 32


# Catalog tables ---------------------------------------------------------------------------------------
@requires_fixtures
@pytest.mark.parametrize("fixture_table", ["quickstart_trips_table__mor__avro__v8_trips_8i3u1d"], indirect=True)
def test_synced_catalog_tables_read_through_helpers(fixture_table: str, metastore: EmbeddedMetastore, spark: Any, source: str) -> None:
    database = "spark_catalog_" + re.sub(r"[^a-z0-9_]", "_", Path(fixture_table).name.lower())[:30]
    hudi_table = HudiTable.open(fixture_table)
    with HmsClient(metastore.uri) as client:
        sync(hudi_table, client, SyncOptions(database=database))
    target = _target(fixture_table)
    name = hudi_table.name
    assert describe(spark, f"{database}.{name}_rt").path == fixture_table
    snapshot = spark_rows(table(spark, f"{database}.{name}_rt"), target)
    assert snapshot == hudi_rs_rows(fixture_table, target)
    read_optimized = hudi.HudiReadOptions().with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    assert spark_rows(table(spark, f"{database}.{name}_ro"), target) == hudi_rs_rows(fixture_table, target, read_optimized)
    with pytest.raises(Exception, match="engine_bridge.spark.table"):
        spark.table(f"{database}.{name}_rt").count()
    views = register_views(spark, database)
    assert sorted(views) == [f"{name}_ro", f"{name}_rt"]
    assert spark.sql(f"SELECT count(*) FROM {name}_rt").first()[0] == len(snapshot)


# The parquet fast path ------------------------------------------------------------------------------
def test_fast_path_reads_parquet_of_candidate_files(tmp_path: Path, spark: Any, source: str) -> None:
    path = _partitioned_table(tmp_path / "fast")
    frame = read(spark, path, where="a > 5")
    assert sorted(r.id for r in frame.collect()) == sorted(i for i in range(32) if i % 8 + 1 > 5)
    assert len(frame.inputFiles()) == 3  # partitions a=6, 7, 8 only
    assert "parquet" in frame._jdf.queryExecution().executedPlan().toString().lower()
    everything = read(spark, path)
    assert everything.count() == 32 and len(everything.inputFiles()) == 8
    commits = HudiTable.open(path).timeline.commits()
    assert read(spark, path, query_type="incremental", begin="00000000000000000", end=commits[0].completion_time).count() == 32


def test_fast_path_falls_back_to_the_source_for_log_files(tmp_path: Path, spark: Any, source: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    builder = TableBuilder(str(tmp_path / "mor"), schema, table_type="MERGE_ON_READ", version=8)
    builder.write([{"id": i, "v": "old"} for i in range(10)])
    builder.write([{"id": 3, "v": "new"}])
    builder.delete(["4"])
    rows = {r.id: r.v for r in read(spark, str(tmp_path / "mor")).collect()}
    assert len(rows) == 9 and rows[3] == "new" and 4 not in rows
    base_only = {r.id: r.v for r in read(spark, str(tmp_path / "mor"), query_type="read_optimized").collect()}
    assert len(base_only) == 10 and base_only[3] == "old"


# Streaming --------------------------------------------------------------------------------------------
def _run_stream(spark: Any, source: str, path: str, out: Path, checkpoint: Path, **options: str) -> list[dict[str, Any]]:
    """An availableNow stream of the table into Parquet at `out` (a commit a
    batch unless `options` say otherwise); the batches that delivered rows."""
    stream = (spark.readStream.format(source).options(**{MAX_COMMITS: "1", START_OFFSET: "earliest", **options}).load(path)
              .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
              .trigger(availableNow=True).start())
    stream.awaitTermination(300)
    progress = [p for p in stream.recentProgress if p["numInputRows"] > 0]
    stream.stop()
    return progress


def _ends(progress: list[dict[str, Any]]) -> list[str]:
    return [json.loads(p["sources"][0]["endOffset"])["instant"] if isinstance(p["sources"][0]["endOffset"], str)
            else p["sources"][0]["endOffset"]["instant"] for p in progress]


def test_stream_delivers_one_commit_per_batch_and_resumes_without_gap(tmp_path: Path, spark: Any, source: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("round", pa.int64())])
    path = str(tmp_path / "stream")
    builder = TableBuilder(path, schema, version=8)
    for r in range(5):
        builder.write([{"id": r * 10 + i, "round": r} for i in range(3)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = _run_stream(spark, source, path, out, checkpoint)
    completions = [c.completion_time for c in HudiTable.open(path).timeline.commits()]
    assert _ends(first) == completions and [p["numInputRows"] for p in first] == [3] * 5
    for r in range(5, 7):
        builder.write([{"id": r * 10 + i, "round": r} for i in range(3)])
    second = _run_stream(spark, source, path, out, checkpoint)
    completions = [c.completion_time for c in HudiTable.open(path).timeline.commits()]
    assert _ends(second) == completions[5:]
    written = spark.read.parquet(str(out))
    assert sorted(r.id for r in written.collect()) == sorted(r * 10 + i for r in range(7) for i in range(3))


def test_stream_on_v8_takes_a_commit_that_completes_after_a_later_one(tmp_path: Path, spark: Any, source: str) -> None:
    schema = pa.schema([("id", pa.int64())])
    path = str(tmp_path / "late")
    builder = TableBuilder(path, schema, version=8)
    slow = builder.write([{"id": 1}], complete=False)
    builder.write([{"id": 2}])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    assert [p["numInputRows"] for p in _run_stream(spark, source, path, out, checkpoint)] == [1]
    builder.complete(slow)
    assert [p["numInputRows"] for p in _run_stream(spark, source, path, out, checkpoint)] == [1]
    assert sorted(r.id for r in spark.read.parquet(str(out)).collect()) == [1, 2]


def test_metadata_table_pruning_on_a_fresh_dataframe(tmp_path: Path, spark: Any, source: str) -> None:
    """column_stats prune file slices when pruning is on (fresh DataFrame)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    path = str(tmp_path / "stats")
    builder = TableBuilder(path, schema, version=8, metadata_table=True, max_rows_per_file=10)
    builder.write([{"id": i, "v": i} for i in range(100)])
    MetadataTableWriter(path).build()
    frame = spark.read.format(source).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1").load(path).where("v >= 95")
    assert sorted(r.id for r in frame.collect()) == [95, 96, 97, 98, 99]
    assert frame.rdd.getNumPartitions() == 1


def _pulled_once(spark: Any, tmp_path: Path, rows: int) -> tuple[TableBuilder, str, Path, str, Any]:
    """A MOR table of `rows` rows pulled once with a checkpoint: (builder, path, output folder, checkpoint, first result)."""
    import engine_bridge.spark.pull as pull_module

    path = str(tmp_path / "pulled")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("v", pa.string())]), table_type="MERGE_ON_READ", version=8)
    builder.write([{"id": i, "v": "a"} for i in range(rows)])
    out, checkpoint = tmp_path / "out", str(tmp_path / "checkpoint.json")
    return builder, path, out, checkpoint, pull_module.pull(spark, path, str(out), checkpoint=checkpoint)


# The pull job --------------------------------------------------------------------------------------
def test_pull_three_runs_with_a_crash_before_the_checkpoint(tmp_path: Path, spark: Any, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import engine_bridge.spark.pull as pull_module
    from engine_bridge.cli import main

    builder, path, out, checkpoint, first = _pulled_once(spark, tmp_path, 10)
    assert first.rows == 10
    builder.write([{"id": i, "v": "b"} for i in (0, 1, 2, 10)])

    def crash(*args: Any) -> None:
        raise RuntimeError("killed before the checkpoint moved")

    with monkeypatch.context() as patched:
        patched.setattr(pull_module, "write_checkpoint", crash)
        with pytest.raises(RuntimeError, match="killed"):
            pull_module.pull(spark, path, str(out), checkpoint=checkpoint)
    assert pull_module.read_checkpoint(checkpoint) == first.end
    second = pull_module.pull(spark, path, str(out), checkpoint=checkpoint)  # redoes the same range
    assert second.begin == first.end and second.rows == 4
    builder.write([{"id": 11, "v": "c"}])
    result = CliRunner().invoke(main, ["pull", path, "--to", str(out), "--checkpoint", checkpoint, "--json"])
    assert result.exit_code == 0, result.output
    third = json.loads(result.stdout)
    assert third["begin"] == second.end and third["rows"] == 1
    ranges = sorted(p.name for p in out.iterdir())
    assert ranges == sorted(Path(r).name for r in (first.output, second.output, third["output"]))
    per_range = {name: sorted((r.id, r.v) for r in spark.read.parquet(str(out / name)).collect()) for name in ranges}
    assert sorted(per_range.values()) == sorted([
        [(i, "a") for i in range(10)], [(0, "b"), (1, "b"), (2, "b"), (10, "b")], [(11, "c")],
    ])
    nothing = pull_module.pull(spark, path, str(out), checkpoint=checkpoint)
    assert nothing.instants == [] and nothing.rows == 0


def test_a_taken_name_falls_back_and_says_so(tmp_path: Path, spark: Any, source: str) -> None:
    """Spark refuses a Python source under a name a JVM source has (here the
    built-in parquet, as Apache Hudi's bundle would hold `hudi`)."""
    path = _partitioned_table(tmp_path / "fallback")
    try:
        taken = register(spark, name="parquet", fallback="hudi_bridge_fallback")
        assert taken.name == "hudi_bridge_fallback"
        assert any("JVM data source named 'parquet'" in note for note in taken.notes)
        assert spark.read.format("hudi_bridge_fallback").load(path).count() == 32
        assert read(spark, path, query_type="read_optimized").count() == 32
    finally:
        assert register(spark).name == source


def test_dropped_partition_columns_come_from_the_path(tmp_path: Path, spark: Any, source: str) -> None:
    """A writer with hoodie.datasource.write.drop.partition.columns=true keeps
    `p` out of the files and the schema; the source appends it as a string
    taken from each slice's partition path, as Hudi's TableSchemaResolver does."""
    import pyarrow.parquet as pq

    path = tmp_path / "dropped"
    builder = TableBuilder(str(path), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_fields=["p"], version=6)
    builder.write([{"id": i, "p": f"x{i % 2}"} for i in range(6)])
    for file in path.rglob("*.parquet"):
        pq.write_table(pq.read_table(file).drop_columns(["p"]), file)
    commit = next((path / ".hoodie").glob("*.commit"))
    meta = json.loads(commit.read_text())
    schema = json.loads(meta["extraMetadata"]["schema"])
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "p"]
    meta["extraMetadata"]["schema"] = json.dumps(schema)
    commit.write_text(json.dumps(meta))
    frame = spark.read.format(source).load(str(path))
    assert frame.schema.names[-2:] == ["id", "p"] and frame.schema["p"].dataType.simpleString() == "string"
    assert sorted((r.id, r.p) for r in frame.collect()) == [(i, f"x{i % 2}") for i in range(6)]
    assert sorted(r.id for r in read(spark, str(path), where="p = 'x1'").collect()) == [1, 3, 5]


PULL_STEPS = ["after staging", "after earlier ranges removed", "after rename", "checkpoint"]


@pytest.mark.parametrize("step", PULL_STEPS)
def test_pull_killed_at_any_step_with_commits_arriving_writes_each_row_once(tmp_path: Path, spark: Any, source: str,
                                                                           step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine_bridge.spark.pull as pull_module

    builder, path, out, checkpoint, first = _pulled_once(spark, tmp_path, 5)
    builder.write([{"id": i, "v": "b"} for i in (0, 1, 7)])

    def kill(at: str) -> None:
        if at == step:
            raise KeyboardInterrupt(f"killed {at}")

    with monkeypatch.context() as patched:
        if step == "checkpoint":
            patched.setattr(pull_module, "write_checkpoint", lambda *args: kill("checkpoint"))
        with pytest.raises(KeyboardInterrupt):
            pull_module.pull(spark, path, str(out), checkpoint=checkpoint, fault=kill)
    assert pull_module.read_checkpoint(checkpoint) == first.end
    (out / "_staging_left_by_kill_9").mkdir()  # what a killed process leaves (no finally runs)
    builder.write([{"id": 8, "v": "c"}])  # a commit arrives before the rerun
    rerun = pull_module.pull(spark, path, str(out), checkpoint=checkpoint)
    assert rerun.begin == first.end and rerun.rows == 4
    assert not list(out.glob("_staging_*"))
    pulled = sorted((r.id, r.v) for r in spark.read.parquet(*(str(p) for p in sorted(out.glob("range_*")))).collect())
    assert pulled == sorted([(i, "a") for i in range(5)] + [(0, "b"), (1, "b"), (7, "b"), (8, "c")])


@requires_fixtures
@pytest.mark.parametrize("fixture_table", ["quickstart_trips_table__mor__avro__v8_trips_8i3u1d"], indirect=True)
def test_relative_paths_to_a_mor_table_with_logs(fixture_table: str, spark: Any, source: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative table path is made absolute at the boundary: the workers and hudi-rs get a location they can open."""
    import os

    from click.testing import CliRunner

    from engine_bridge.cli import main
    from engine_bridge.trino import candidate_query

    target = _target(fixture_table)
    table = Path(fixture_table)
    # Spark's Python workers resolve a path from the directory Spark started in (this one, here)
    from_start = os.path.relpath(fixture_table)
    assert not from_start.startswith("/")
    assert spark_rows(spark.read.format(source).load(from_start), target) == hudi_rs_rows(fixture_table, target)
    monkeypatch.chdir(table.parent.parent)
    relative = f"{table.parent.name}/{table.name}"
    rewritten = candidate_query("SELECT * FROM trips WHERE fare > 0", relative)
    assert rewritten.files and all(p.startswith(f"file:{table}/") for p in rewritten.files)  # as Hadoop names a local file
    pulled = CliRunner().invoke(main, ["pull", relative, "--to", "out", "--json"])
    assert pulled.exit_code == 0, pulled.output
    output = json.loads(pulled.stdout)["output"]
    assert output == str(table.parent.parent / "out" / Path(output).name)
    assert spark.read.parquet(output).count() == len(hudi_rs_rows(fixture_table, target, None))


def test_register_makes_local_workers_run_an_interpreter_with_hudi_bridge(tmp_path: Path, spark: Any) -> None:
    """`.venv/bin/python script.py` without the virtualenv activated: Spark would start workers with `python3`
    from PATH, which lacks hudi-bridge; register() points them at this interpreter (and says so)."""
    import shutil
    import subprocess
    import sys

    system_python = shutil.which("python3", path="/usr/bin:/bin")
    assert system_python and subprocess.run([system_python, "-c", "import engine_bridge"], cwd="/", capture_output=True).returncode != 0
    context = spark.sparkContext
    before = context.pythonExec
    try:
        context.pythonExec = system_python
        registration = register(spark)
        assert context.pythonExec == sys.executable
        assert any(f"would run {system_python!r}, which cannot import hudi-bridge" in note for note in registration.notes)
        path = _partitioned_table(tmp_path / "workers")
        assert spark.read.format(registration.name).load(path).count() == 32
    finally:
        context.pythonExec = before
        register(spark)


def test_empty_results_are_zero_rows_with_the_schema(tmp_path: Path, spark: Any, source: str) -> None:
    """A table never written, a time-travel read before the first commit, an incremental range with no commit
    and a plan that keeps no file: zero rows with the table's schema, never an error in a worker."""
    schema = pa.schema([("id", pa.int64()), ("city", pa.string())])
    empty = str(tmp_path / "empty")
    TableBuilder(empty, schema, partition_fields=["city"], version=8)
    written = str(tmp_path / "written")
    builder = TableBuilder(written, schema, partition_fields=["city"], version=8)
    first = builder.write([{"id": 1, "city": "sf"}, {"id": 2, "city": "la"}])
    last = HudiTable.open(written).timeline.commits()[-1]
    frames = {
        "never written": spark.read.format(source).load(empty),
        "before the first commit": spark.read.format(source).option("as.of.instant", "20000101000000000").load(written),
        "a range with no commit": spark.read.format(source).options(**{QUERY_TYPE: "incremental", BEGIN: last.completion_time or first})
        .load(written),
        "a plan keeping no file": read(spark, written, where="city = 'nowhere'"),
    }
    expected = spark_schema(table_arrow_schema(HudiTable.open(written))).names
    for n, (what, frame) in enumerate(frames.items()):
        assert frame.count() == 0, what
        assert frame.collect() == [], what
        assert frame.schema.names == (expected if what != "never written" else frame.schema.names), what
        frame.createOrReplaceTempView(f"empty_result_{n}")  # SQL over a view of each
        assert spark.sql(f"SELECT count(*) AS n, max(id) AS top FROM empty_result_{n} WHERE id > 0").collect()[0].asDict() == \
            {"n": 0, "top": None}, what
    # a stream over a table never written delivers nothing, and fails nowhere
    assert _run_stream(spark, source, empty, tmp_path / "out", tmp_path / "checkpoint") == []
    assert sum(pq.read_metadata(f).num_rows for f in (tmp_path / "out").glob("*.parquet")) == 0


def test_a_throttled_stream_splits_commits_by_file_group_and_delivers_each_row_once(tmp_path: Path, spark: Any, source: str) -> None:
    """20 commits of 1 to 5 files each, read with at most 3 files a batch:
    commits larger than what a batch has left are split by file group (the
    offset names the commit and the group reached); across a restart every
    row comes once."""
    from engine_bridge.spark.stream import MAX_FILES

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("round", pa.int64())])
    path = str(tmp_path / "throttled")
    builder = TableBuilder(path, schema, version=8, partition_fields=["city"], max_rows_per_file=2)

    def commit(r: int) -> None:  # 1, 5 or 9 rows: 1, 3 or 5 new file groups
        builder.write([{"id": r * 10 + i, "city": ("sf", "la")[i % 2], "round": r} for i in range(1 + 4 * (r % 3))])

    for r in range(12):
        commit(r)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[dict[str, Any]]:
        return _run_stream(spark, source, path, out, checkpoint, **{MAX_FILES: "3", MAX_COMMITS: "1000"})

    first = run()
    ends = [p["sources"][0]["endOffset"] for p in first]
    ends = [json.loads(e) if isinstance(e, str) else e for e in ends]
    assert any("commit" in e for e in ends), ends  # some commit was split across batches
    assert max(p["numInputRows"] for p in first) <= 6  # 3 files of at most 2 rows
    for r in range(12, 20):
        commit(r)
    run()
    written = sorted(r.id for r in spark.read.parquet(str(out)).collect())
    assert written == sorted(r * 10 + i for r in range(20) for i in range(1 + 4 * (r % 3)))  # each row once


def test_a_file_a_cleaner_removes_while_the_pull_reads_is_planned_again(tmp_path: Path, spark: Any, source: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull planned its files; then, before Spark read them, a writer beside it rewrote every row and its cleaner
    removed the planned file (Spark: FAILED_READ_FILE.FILE_NOT_EXIST). The pull plans again as of the newer commit,
    writes each row once in its latest version, and says so; the first attempt's staging folder is gone."""
    import engine_bridge.spark.pull as pull_module

    path = str(tmp_path / "cleaned")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("v", pa.string())]), version=8)
    builder.write([{"id": i, "v": "a"} for i in range(6)])
    real_read, said, cleaned = pull_module.read, [], []

    def read_after_a_clean(*args: Any, **kwargs: Any) -> Any:
        if not cleaned:
            cleaned.append(builder.write([{"id": i, "v": "b"} for i in range(6)]))  # a new slice of the file group...
            builder.clean()  # ...and the planned one removed
        return real_read(*args, **kwargs)

    monkeypatch.setattr(pull_module, "read", read_after_a_clean)
    out = tmp_path / "out"
    result = pull_module.pull(spark, path, str(out), checkpoint=str(tmp_path / "checkpoint.json"), progress=said.append)
    assert any(line.endswith("was removed while it was read (a cleaner ran beside): planning again") for line in said), said
    assert result.rows == 6 and len(result.instants) == 2
    assert sorted((r.id, r.v) for r in spark.read.parquet(result.output).collect()) == [(i, "b") for i in range(6)]
    assert [p.name for p in out.iterdir()] == [Path(result.output).name]  # no staging folder left


def test_a_file_removed_under_every_read_refuses_in_one_line(tmp_path: Path) -> None:
    """Spark's error texts for a file removed under a read name the file; the pull's refusal is one line."""
    from engine_bridge.spark.pull import FileRemovedWhileRead, removed_file

    spark_text = ("An error occurred while calling o69.save.\n: org.apache.spark.SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] "
                  "Encountered error while reading file file:///t/region=in/0b1b-0_0-60-103_20261129104157895.parquet. File does not "
                  "exist. It is possible the underlying files have been updated.\n\tat org.apache.spark.rdd.RDD.iterator(RDD.scala:338)")
    assert removed_file(RuntimeError(spark_text)) == "file:///t/region=in/0b1b-0_0-60-103_20261129104157895.parquet"
    assert removed_file(RuntimeError("java.io.FileNotFoundException: File file:/t/a.parquet does not exist\n\tat x")) == "file:/t/a.parquet"
    assert removed_file(RuntimeError("[PATH_NOT_FOUND] Path does not exist: file:/t/a.parquet. SQLSTATE: 42K03")) == "file:/t/a.parquet"
    assert removed_file(RuntimeError("java.lang.OutOfMemoryError: Java heap space")) is None
    assert len(str(FileRemovedWhileRead("file:/t/a.parquet")).splitlines()) == 1


@requires_fixtures
def test_a_read_planned_by_the_service_equals_a_read_planned_here(fixture_root: Path, spark: Any, source: str) -> None:
    """`hoodie.bridge.service`: the driver asks a `hudi-bridge serve` for the slices (the path is the table's name
    there), executors read them; rows and partitions equal the read planned on the driver itself."""
    from engine_bridge.service import ServiceConfig, TableEntry
    from engine_bridge.spark.options import SERVICE
    from tests.conftest import table_path
    from tests.test_service import serving

    names = [stem for stem in READ_FIXTURES if stem != "no-fixtures"]
    paths = {stem: table_path(fixture_root, stem) for stem in names}
    with serving(ServiceConfig(tuple(TableEntry(stem, path) for stem, path in paths.items()))) as (url, app):
        for stem, path in paths.items():
            target = _target(path)
            for predicate in _predicates(path):
                here = spark.read.format(source).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1").load(path).where(predicate)
                served = (spark.read.format(source).option(PRUNE_PUSHED, "true").option(SPLIT_BYTES, "1").option(SERVICE, url)
                          .load(stem).where(predicate))
                assert spark_rows(served, target) == spark_rows(here, target), (stem, predicate)
                assert served.rdd.getNumPartitions() == here.rdd.getNumPartitions(), (stem, predicate)
        assert app.state.service.metrics.plan_count >= len(paths)


@pytest.mark.parametrize("name", ["cow_v9_lance_txns_simple", "mor_v9_lance_nonhivestyle", "mor_v9_trips_lance"])
def test_lance_base_files_read_through_the_source_as_hudi_rs_reads_them(name: str, tmp_path: Path, spark: Any, source: str) -> None:
    import zipfile

    with zipfile.ZipFile(Path(__file__).parent / "data" / "hudi_rs_lance" / f"{name}.zip") as zf:
        zf.extractall(tmp_path)
    [path] = [str(p) for p in tmp_path.iterdir() if p.is_dir()]
    target = _target(path)
    assert spark_rows(spark.read.format(source).load(path), target) == hudi_rs_rows(path, target)
