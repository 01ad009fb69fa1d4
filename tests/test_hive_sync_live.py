# Over 400 lines: the live Hive sync cases share one metastore, Thrift server and SparkSession.
"""Hive sync against a real metastore, Spark's Thrift server and a SparkSession."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest

from hive_sync import EmbeddedMetastore, SchemaEvolutionError, SyncError, SyncOptions, plan_sync, sync
from hive_sync.hiveql import SqlClient, hiveserver2_client, spark_session_client
from hive_sync.hms import HmsClient
from hive_sync.model import LAST_COMMIT_TIME_SYNC, PARQUET_OUTPUT_FORMAT, HivePartition, TableDefinition
from hive_sync.names import partition_name
from hive_sync.partition_events import partition_location, partition_values
from hive_sync.schema import HiveColumn, schema_from_properties, spark_schema_json
from hive_sync.target import table_definitions
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures

pytestmark = [pytest.mark.services, pytest.mark.slow]

PARQUET_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
HOSTILE_VALUES = ["it's", 'say "hi"', "a/b", "k=v", "with space", "ünï©ødé 東京", "back\\slash", "semi;colon -- x", "50%", "x`y"]


def _database(stem: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", stem.lower())[:60]


def _catalog_table(spark: Any, database: str, name: str) -> Any:
    """The table as Spark's catalog restores it from the metastore."""
    return spark._jsparkSession.sharedState().externalCatalog().getTable(database, name)


def _spark_partitions(spark: Any, database: str, name: str) -> dict[tuple[str, ...], str]:
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    table = catalog.getTable(database, name)
    keys = [table.partitionColumnNames().apply(i) for i in range(table.partitionColumnNames().size())]
    parts = catalog.listPartitions(database, name, spark._jvm.scala.Option.empty())
    found = {}
    for i in range(parts.size()):
        part = parts.apply(i)
        found[tuple(part.spec().apply(k) for k in keys)] = part.location().toString()
    return found


def _expected_partitions(table: HudiTable) -> dict[tuple[str, ...], str]:
    if not table.config.is_partitioned:
        return {}
    return {partition_values(table, p): partition_location(table, p) for p in table.partitions()}


def _same_locations(got: dict[tuple[str, ...], str], want: dict[tuple[str, ...], str]) -> None:
    assert set(got) == set(want)
    for values, location in want.items():
        # Spark hands back java.net.URIs: percent-encoded, maybe with file:///.
        assert unquote(got[values]).replace("file:///", "file:/") == location, values


# Acceptance 1: every fixture through hms, read back by Spark ---------------------------------
@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_fixture_synced_with_hms_reads_back_in_spark(fixture_table: str, metastore: EmbeddedMetastore, spark: Any) -> None:
    table = HudiTable.open(fixture_table)
    database = _database(Path(fixture_table).parent.name)
    with HmsClient(metastore.uri) as client:
        result = sync(table, client, SyncOptions(database=database))
    assert result.applied
    avro = table.avro_schema()
    fields = table.config.partition_fields
    expected_schema = json.loads(spark_schema_json(avro, fields))
    definitions = table_definitions(table, SyncOptions(database=database))
    assert [d.name for d in definitions] == (
        [f"{table.name}_ro", f"{table.name}_rt"] if table.config.is_mor else [table.name]
    )
    for definition in definitions:
        restored = _catalog_table(spark, database, definition.name)
        assert restored.provider().get() == "hudi"
        assert json.loads(restored.schema().json()) == expected_schema
        assert [restored.partitionColumnNames().apply(i) for i in range(restored.partitionColumnNames().size())] == list(fields)
        if fields:
            _same_locations(_spark_partitions(spark, database, definition.name), _expected_partitions(table))
        with HmsClient(metastore.uri) as client:
            registered = client.get_table(database, definition.name)
        assert registered is not None
        assert schema_from_properties(registered.params) == expected_schema
        assert registered.params["EXTERNAL"] == "TRUE"
        assert registered.serde_params["hoodie.query.as.ro.table"] == str(definition.name.endswith("_ro")).lower()
        latest = table.timeline.latest_commit()
        assert registered.last_synced == (latest.requested_time if latest else None)
        if table.timeline.uses_completion_time and latest:
            assert registered.params["last_commit_completion_time_sync"] == latest.completion_time
    # A second sync changes nothing and writes nothing.
    with HmsClient(metastore.uri) as client:
        again = sync(HudiTable.open(fixture_table), client, SyncOptions(database=database))
    assert again.plan.is_noop
    assert not again.applied
    assert set(again.calls) <= {"open", "get_database", "get_table", "get_partitions_by_names", "get_partitions"}


@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_fixture_plain_tables_read_back_through_hiveserver2(fixture_table: str, metastore: EmbeddedMetastore, hiveserver2: str) -> None:
    """Spark's Thrift server cannot load Hudi's classes here, so it cannot
    write Hudi tables; it can read them back, and a hiveql sync plans no-op."""
    table = HudiTable.open(fixture_table)
    database = "plain_" + _database(Path(fixture_table).parent.name)
    options = SyncOptions(database=database, datasource_properties=False)
    with HmsClient(metastore.uri) as client:
        sync(table, client, options)
    from pyhive import hive

    host, port = hiveserver2.split(":")
    connection = hive.connect(host=host, port=int(port), username="tests")
    try:
        cursor = connection.cursor()
        for definition in table_definitions(table, options):
            if table.config.is_partitioned:
                cursor.execute(f"SHOW PARTITIONS `{database}`.`{definition.name}`")
                names = sorted(row[0] for row in cursor.fetchall())
                fields = table.config.partition_fields
                assert names == sorted(partition_name(fields, values) for values in _expected_partitions(table))
            cursor.execute(f"DESCRIBE `{database}`.`{definition.name}`")
            described = [row[0] for row in cursor.fetchall()]
            assert [c.name.lower() for c in definition.columns] == described[: len(definition.columns)]  # Hive lower-cases names
    finally:
        connection.close()
    sql_client = hiveserver2_client(hiveserver2)
    try:
        plan = plan_sync(HudiTable.open(fixture_table), sql_client, options)
    finally:
        sql_client.close()
    assert plan.is_noop, plan.to_dict()


# hiveql: what the server refuses is said, not dropped ------------------------------------------
def _sample(tmp_path: Path, name: str = "trips", **kwargs: Any) -> TableBuilder:
    from metadata.sample_tables.sample import build_sample_table

    return build_sample_table(str(tmp_path / name), **kwargs)


def test_hiveql_without_metastore_refuses_datasource_properties_before_writing(tmp_path: Path, metastore: EmbeddedMetastore, hiveserver2: str) -> None:
    table = HudiTable.open(_sample(tmp_path).storage.uri)
    client = hiveserver2_client(hiveserver2)
    try:
        with pytest.raises(SyncError, match=r"refuses table properties starting with 'spark\.sql\.'.*--metastore-uri"):
            sync(table, client, SyncOptions(database="hiveql_refused"))
    finally:
        client.close()
    with HmsClient(metastore.uri) as hms:
        assert not hms.database_exists("hiveql_refused")


def test_hiveql_with_metastore_sets_properties_via_thrift_and_names_server_errors(
    tmp_path: Path, metastore: EmbeddedMetastore, hiveserver2: str
) -> None:
    table = HudiTable.open(_sample(tmp_path, table_type="COPY_ON_WRITE").storage.uri)
    client = hiveserver2_client(hiveserver2, HmsClient(metastore.uri))
    try:
        with pytest.raises(SyncError, match=r"HiveServer2 .* refused add_partitions .*(hudi|Hoodie)") as caught:
            sync(table, client, SyncOptions(database="hiveql_hybrid"))
    finally:
        client.close()
    assert "ALTER TABLE `hiveql_hybrid`.`trips` ADD IF NOT EXISTS PARTITION" in str(caught.value)
    with HmsClient(metastore.uri) as hms:
        registered = hms.get_table("hiveql_hybrid", "trips")
        assert registered is not None
        assert registered.params["spark.sql.sources.provider"] == "hudi"
        assert registered.last_synced is None  # the marker waits for the partitions
        # The next run (here through the metastore) completes the sync.
        result = sync(HudiTable.open(table.base_uri), hms, SyncOptions(database="hiveql_hybrid"))
        assert result.plan.tables[0].full_diff
        assert len(result.plan.tables[0].events) == 4
        assert set(hms.list_partitions("hiveql_hybrid", "trips")) == set(_expected_partitions(table))
        assert hms.get_table("hiveql_hybrid", "trips").last_synced == table.timeline.latest_commit().requested_time


def _plain_definition(database: str, name: str, location: Path) -> TableDefinition:
    return TableDefinition(
        database=database,
        name=name,
        columns=(HiveColumn("id", "bigint"),),
        partition_columns=(HiveColumn("region", "string"), HiveColumn("day", "string")),
        location="file:" + str(location),
        input_format=PARQUET_INPUT_FORMAT,
        output_format=PARQUET_OUTPUT_FORMAT,
        serde_params={"serialization.format": "1"},
        table_params={"comment.note": "it's a 'test' \\ with ; and --"},
    )


def _hostile_round_trip(client: SqlClient, metastore: EmbeddedMetastore, database: str, tmp_path: Path) -> None:
    definition = _plain_definition(database, "hostile", tmp_path / "hostile")
    client.create_database(database)
    client.create_table(definition)
    partitions = [HivePartition((value, "2024-01-01"), f"file:{tmp_path}/hostile/{i}") for i, value in enumerate(HOSTILE_VALUES)]
    client.add_partitions(definition, partitions)
    with HmsClient(metastore.uri) as hms:
        stored = hms.list_partitions(database, "hostile")
        assert stored == {p.values: p.location for p in partitions}
        assert hms.get_table(database, "hostile").params["comment.note"] == definition.table_params["comment.note"]
    assert set(client.list_partitions(database, "hostile")) == {p.values for p in partitions}
    client.drop_partitions(definition, [p.values for p in partitions[:5]])
    with HmsClient(metastore.uri) as hms:
        assert set(hms.list_partitions(database, "hostile")) == {p.values for p in partitions[5:]}
        # The metastore's batch drop by name finds hostile values too.
        hms.drop_partitions(definition, [p.values for p in partitions[5:]])
        assert hms.list_partitions(database, "hostile") == {}


def test_hiveql_quotes_hostile_values_verbatim(tmp_path: Path, metastore: EmbeddedMetastore, hiveserver2: str) -> None:
    client = hiveserver2_client(hiveserver2)
    try:
        assert client.spark_sql
        assert not client.accepts_spark_properties
        _hostile_round_trip(client, metastore, "hostile_hiveql", tmp_path)
    finally:
        client.close()


def test_spark_mode_quotes_hostile_values_and_plans_like_hms(tmp_path: Path, metastore: EmbeddedMetastore, spark: Any) -> None:
    client = spark_session_client(spark)
    assert client.metastore is not None  # the session's own metastore URI carries spark.sql.* properties
    try:
        _hostile_round_trip(client, metastore, "hostile_spark", tmp_path)
        table = HudiTable.open(_sample(tmp_path).storage.uri)
        with HmsClient(metastore.uri) as hms:
            sync(table, hms, SyncOptions(database="spark_mode"))
        assert plan_sync(table, client, SyncOptions(database="spark_mode")).is_noop
    finally:
        client.close()


# Acceptance 2: incremental sync touches only what changed -------------------------------------
class RecordingHms(HmsClient):
    """Counts calls (the base class does) and records which partitions were asked for."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.asked: list[tuple[str, ...]] = []
        self.written: list[tuple[str, ...]] = []

    def get_partitions(self, table: TableDefinition, values: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
        self.asked.extend(values)
        return super().get_partitions(table, values)

    def add_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None:
        self.written.extend(p.values for p in partitions)
        super().add_partitions(table, partitions)

    def drop_partitions(self, table: TableDefinition, values: Sequence[tuple[str, ...]]) -> None:
        self.written.extend(values)
        super().drop_partitions(table, values)


def _region_rows(regions: list[str], start: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": start + i, "region": r, "amount": i, **extra} for i, r in enumerate(regions)]


def test_builder_table_incremental_sync_touches_only_changed_partitions(tmp_path: Path, hms: Any, request: pytest.FixtureRequest) -> None:
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.int32())])
    builder = TableBuilder(str(tmp_path / "orders"), schema, name="orders", version=8, partition_fields=["region"], metadata_table=True)
    builder.write(_region_rows([f"r{i:02d}" for i in range(20)], 0))
    options = SyncOptions(database="incremental", batch_size=7)
    with RecordingHms(hms.uri) as client:
        first = sync(HudiTable.open(builder.storage.uri), client, options)
    assert first.calls["add_partitions"] == math.ceil(20 / 7)

    builder.write(_region_rows(["new_a", "new_b", "r03"], 100))
    builder.delete_partitions(["region=r05", "region=r06"])
    builder.add_columns(pa.field("note", pa.string()))
    builder.write(_region_rows(["r07"], 200, note="added later"))
    table = HudiTable.open(builder.storage.uri)
    with RecordingHms(hms.uri) as client:
        second = sync(table, client, options)
        asked, written, calls = set(client.asked), set(client.written), client.calls
    changed = {("new_a",), ("new_b",), ("r03",), ("r05",), ("r06",), ("r07",)}
    assert asked == changed
    assert written == {("new_a",), ("new_b",), ("r05",), ("r06",)}
    assert calls["get_partitions"] == 0  # no full listing
    assert calls["add_partitions"] == 1
    assert calls["drop_partitions"] == 1
    assert calls["alter_table"] == 2  # schema (cascading) and then the marker
    plan = second.plan.tables[0]
    assert [c.name for c in plan.schema.added] == ["note"]
    assert not plan.full_diff

    with HmsClient(hms.uri) as client:
        assert set(client.list_partitions("incremental", "orders")) == set(_expected_partitions(table))
        registered = client.get_table("incremental", "orders")
        assert [c.name for c in registered.columns][-1] == "note"
        assert registered.last_synced == table.timeline.latest_commit().requested_time
        # CASCADE carried the new column into every partition's own schema.
        raw = client._client.get_partitions("incremental", "orders", -1)
        assert all(p.sd.cols[-1].name == "note" for p in raw)
    if request.node.callspec.params["hms"] != "hive-2.3":
        return  # Spark's catalog speaks Hive 2.3's client: it reads the table back from that metastore only
    spark_fields = json.loads(_catalog_table(request.getfixturevalue("spark"), "incremental", "orders").schema().json())["fields"]
    assert [f["name"] for f in spark_fields[-3:]] == ["amount", "note", "region"]


def _register_with_types(client: HmsClient, table: HudiTable, options: SyncOptions, types: dict[str, str]) -> None:
    """Register the table as an older sync would have, with other column types."""
    from dataclasses import replace

    definition = table_definitions(table, options)[0]
    columns = tuple(HiveColumn(c.name, types.get(c.name, c.type)) for c in definition.columns)
    client.create_database(options.database)
    client.create_table(replace(definition, columns=columns))


def test_refused_schema_change_leaves_table_as_it_was(tmp_path: Path, hms: Any) -> None:
    table = HudiTable.open(_sample(tmp_path, table_type="COPY_ON_WRITE").storage.uri)
    refused = SyncOptions(database="evolution_refused")
    with HmsClient(hms.uri) as client:
        # string -> double is not a widening the metastore can follow.
        _register_with_types(client, table, refused, {"fare": "string", "ts": "int"})
        before = client.get_table("evolution_refused", "trips")
        client.calls.clear()
        with pytest.raises(SchemaEvolutionError, match=r"evolution_refused\.trips: column fare cannot change from string to double"):
            sync(table, client, refused)
        assert client.get_table("evolution_refused", "trips") == before
        writes = {"alter_table", "add_partitions", "drop_partitions", "alter_partitions", "create_table", "create_database"}
        assert not writes & set(client.calls)
        assert client.list_partitions("evolution_refused", "trips") == {}

    widened = SyncOptions(database="evolution_widened")
    with HmsClient(hms.uri) as client:
        _register_with_types(client, table, widened, {"ts": "int"})
        result = sync(table, client, widened)
        assert [(c.name, old) for c, old in result.plan.tables[0].schema.changed] == [("ts", "int")]
        assert {c.name: c.type for c in client.get_table("evolution_widened", "trips").columns}["ts"] == "bigint"
        assert set(client.list_partitions("evolution_widened", "trips")) == set(_expected_partitions(table))


# Acceptance 3: batching ---------------------------------------------------------------------
def test_ten_thousand_partitions_sync_in_batches(tmp_path: Path, hms: Any) -> None:
    count, batch = 10_000, 1_000
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    builder = TableBuilder(str(tmp_path / "wide"), schema, name="wide", version=8, partition_fields=["day"], metadata_table=True)
    builder.write([{"id": i, "day": f"d{i:05d}"} for i in range(count)])
    table = HudiTable.open(builder.storage.uri)
    with HmsClient(hms.uri) as client:
        result = sync(table, client, SyncOptions(database="wide", batch_size=batch))
        partition_calls = sum(v for k, v in result.calls.items() if "partition" in k)
        assert partition_calls <= math.ceil(count / batch)
        assert len(client.list_partitions("wide", "wide")) == count
    with HmsClient(hms.uri) as client:
        again = sync(HudiTable.open(builder.storage.uri), client, SyncOptions(database="wide", batch_size=batch))
    assert again.plan.is_noop
    assert not any("partition" in k for k in again.calls)


# Acceptance 4: hostile names and values, interrupted syncs --------------------------------------
def test_hostile_partition_values_stored_and_dropped_verbatim(tmp_path: Path, metastore: EmbeddedMetastore, spark: Any) -> None:
    schema = pa.schema([("id", pa.int64()), ("place", pa.string())])
    builder = TableBuilder(
        str(tmp_path / "hostile"), schema, name="hostile", version=8, partition_fields=["place"], url_encode=True, metadata_table=True
    )
    builder.write([{"id": i, "place": v} for i, v in enumerate(HOSTILE_VALUES)])
    table = HudiTable.open(builder.storage.uri)
    assert {partition_values(table, p) for p in table.partitions()} == {(v,) for v in HOSTILE_VALUES}
    with HmsClient(metastore.uri) as client:
        sync(table, client, SyncOptions(database="hostile_values"))
    _same_locations(_spark_partitions(spark, "hostile_values", "hostile"), _expected_partitions(table))

    builder.delete_partitions([p for p in table.partitions() if partition_values(table, p)[0] in ("a/b", "it's", "k=v")])
    with HmsClient(metastore.uri) as client:
        result = sync(HudiTable.open(builder.storage.uri), client, SyncOptions(database="hostile_values"))
        assert len(result.plan.tables[0].events) == 3
        assert set(client.list_partitions("hostile_values", "hostile")) == {
            (v,) for v in HOSTILE_VALUES if v not in ("a/b", "it's", "k=v")
        }


@pytest.mark.parametrize("name", ["t`; DROP TABLE x; --", "tab le", "t'x", "ünï"])
def test_hostile_table_names_are_refused_before_any_write(name: str, tmp_path: Path, hms: Any) -> None:
    table = HudiTable.open(_sample(tmp_path, table_type="COPY_ON_WRITE").storage.uri)
    database = f"hostile_names_{sum(map(ord, name))}"
    with HmsClient(hms.uri) as client:
        with pytest.raises(SyncError, match=r"is not a valid Hive table name"):
            sync(table, client, SyncOptions(database=database, table=name))
        with pytest.raises(SyncError, match=r"is not a valid Hive database name"):
            sync(table, client, SyncOptions(database=name, table="fine"))
        assert not client.database_exists(database)  # nothing half-created
        # What the check lets through, the metastore takes (the rule is Hive's own).
        sync(table, client, SyncOptions(database=database, table="Fine_Name_2"))
        assert client._client.get_all_tables(database) == ["fine_name_2"]


def test_sync_interrupted_by_a_stopped_metastore_is_completed_by_the_next_run(tmp_path: Path) -> None:
    table = HudiTable.open(_sample(tmp_path).storage.uri)  # MOR: two tables, four partitions each
    options = SyncOptions(database="interrupted", batch_size=1)
    folder = tmp_path / "metastore"
    ms = EmbeddedMetastore(folder).start()
    batches = 0

    def stop_midway(what: str, count: int) -> None:
        nonlocal batches
        if count:
            batches += 1
            if batches == 2:
                ms.stop()

    try:
        with pytest.raises(SyncError, match=r"metastore thrift://127\.0\.0\.1:\d+: add_partitions failed"):
            sync(table, HmsClient(ms.uri), options, progress=stop_midway)
    finally:
        ms.stop()
    with EmbeddedMetastore(folder) as restarted, HmsClient(restarted.uri) as client:
        half = client.get_table("interrupted", "trips_ro")
        assert half is not None
        assert half.last_synced is None
        assert len(client.list_partitions("interrupted", "trips_ro")) == 2
        result = sync(table, client, options)
        assert result.applied
        for name in ("trips_ro", "trips_rt"):
            assert set(client.list_partitions("interrupted", name)) == set(_expected_partitions(table))
            assert client.get_table("interrupted", name).params[LAST_COMMIT_TIME_SYNC] == table.timeline.latest_commit().requested_time
        assert sync(table, client, options).plan.is_noop


def test_cli_sync_dry_run_then_apply_on_an_embedded_metastore(tmp_path: Path, hms: Any) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main

    path = _sample(tmp_path).storage.uri
    folder = str(tmp_path / "ms")
    runner = CliRunner()
    dry = runner.invoke(main, ["sync", path, "--database", "cli", "--metastore-uri", hms.uri, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)
    assert not planned["applied"]
    assert planned["create_database"]
    assert [t["table"] for t in planned["tables"]] == ["cli.trips_ro", "cli.trips_rt"]
    applied = runner.invoke(main, ["sync", path, "--database", "cli", "--embedded-metastore", folder, "--json"])
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.output)
    assert report["applied"]
    assert sorted(report["tables"][0]["partitions"]["ADD"]) == sorted(HudiTable.open(path).partitions())
    with EmbeddedMetastore(folder) as restarted, HmsClient(restarted.uri) as client:  # its Derby files persist
        assert set(client.list_partitions("cli", "trips_rt")) == {(p.split("=")[1],) for p in HudiTable.open(path).partitions()}
    with HmsClient(hms.uri) as client:
        assert not client.database_exists("cli")  # the dry run wrote nothing
    bad = runner.invoke(main, ["sync", path, "--database", "cli", "--mode", "hms"])
    assert bad.exit_code == 2
    assert "needs a metastore URI" in bad.output


def test_sync_on_a_damaged_metadata_table_lists_storage_and_ends_holding_every_partition(tmp_path: Path, hms: Any) -> None:
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.int32())])
    builder = TableBuilder(str(tmp_path / "damaged"), schema, name="damaged", version=8, partition_fields=["region"], metadata_table=True)
    builder.write(_region_rows(["a", "b"], 0))
    options = SyncOptions(database="damaged_mdt")
    with HmsClient(hms.uri) as client:
        sync(HudiTable.open(builder.storage.uri), client, options)
    builder.write(_region_rows(["c", "d"], 10))
    newest = sorted((tmp_path / "damaged" / ".hoodie" / "metadata" / "files").glob(".files-*.log.*"))[-1]
    intact = newest.read_bytes()
    newest.write_bytes(intact[: len(intact) // 3])  # the MDT no longer records partitions c and d

    table = HudiTable.open(builder.storage.uri)
    with HmsClient(hms.uri) as client:
        damaged_sync = sync(table, client, options)
        assert "metadata table damaged" in table.listing_note
        assert set(client.list_partitions("damaged_mdt", "damaged")) == {("a",), ("b",), ("c",), ("d",)}
        assert client.get_table("damaged_mdt", "damaged").last_synced == table.timeline.latest_commit().requested_time
    assert damaged_sync.applied

    newest.write_bytes(intact)  # repaired: the MDT is used again and agrees
    repaired = HudiTable.open(builder.storage.uri)
    with HmsClient(hms.uri) as client:
        again = sync(repaired, client, options)
        assert set(client.list_partitions("damaged_mdt", "damaged")) == {("a",), ("b",), ("c",), ("d",)}
    assert repaired.metadata_table is not None
    assert again.plan.is_noop


def _without_ddl_time(table: Any) -> Any:
    from dataclasses import replace

    return replace(table, params={k: v for k, v in table.params.items() if k != "transient_lastDdlTime"})  # the server's clock


def test_hive_2_and_hive_4_hold_the_same_tables_after_the_same_syncs(tmp_path: Path, metastore: Any, hive4_metastore: Any) -> None:
    import getpass

    from hmsclient.genthrift.hive_metastore import ttypes

    """A MERGE_ON_READ table synced into Hive 2.3 and into Hive 4 (PostgreSQL), then written again and synced
    again: both metastores hold the same `_ro`/`_rt` pair, columns, formats, serde, parameters and partition
    locations; a sync with nothing new writes nothing to either."""
    builder = _sample(tmp_path)
    options = SyncOptions(database="both")
    held = {}
    for uri in (metastore.uri, hive4_metastore.uri):
        with HmsClient(uri) as client:
            sync(HudiTable.open(builder.storage.uri), client, options)
    from metadata.sample_tables.sample import trip_rows

    builder.write([{**row, "city": "oslo"} for row in trip_rows(500, 3)])  # a new partition
    for uri in (metastore.uri, hive4_metastore.uri):
        with HmsClient(uri) as client:
            assert sync(HudiTable.open(builder.storage.uri), client, options).applied
            client.calls.clear()
            sync(HudiTable.open(builder.storage.uri), client, options)  # nothing new: reads only
            assert not {"alter_table", "add_partitions", "drop_partitions", "alter_partitions", "create_table"} & set(client.calls)
            held[uri] = {name: (_without_ddl_time(client.get_table("both", name)), client.list_partitions("both", name))
                         for name in ("trips_ro", "trips_rt")}
            raw = client._client.get_table_req(ttypes.GetTableRequest(dbName="both", tblName="trips_rt")).table
            # As Hudi's HiveSyncTool registers a table: owned by the running user, not bucketed (0), comments ''.
            assert (raw.owner, raw.sd.numBuckets) == (getpass.getuser(), 0)
            assert {c.comment for c in [*raw.sd.cols, *raw.partitionKeys]} <= {"", None}, uri
    hive2, hive4 = held[metastore.uri], held[hive4_metastore.uri]
    assert hive2 == hive4
    assert set(hive4["trips_rt"][1]) == {(p.split("=")[1],) for p in HudiTable.open(builder.storage.uri).partitions()}
    assert ("oslo",) in hive4["trips_rt"][1]
