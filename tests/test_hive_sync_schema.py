"""Hive sync schema mapping, Spark DataSource properties and evolution rules."""

from __future__ import annotations

import json

import pytest

from hive_sync.errors import SchemaEvolutionError
from hive_sync.schema import (
    HiveColumn,
    hive_columns,
    hive_type,
    schema_change,
    schema_from_properties,
    spark_table_properties,
)

AVRO = {
    "type": "record", "name": "r",
    "fields": [
        {"name": "id", "type": ["null", "int"]},
        {"name": "big", "type": "long"},
        {"name": "ratio", "type": ["null", "float"]},
        {"name": "name", "type": ["null", "string"]},
        {"name": "blob", "type": ["null", "bytes"]},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "amount", "type": ["null", {"type": "fixed", "name": "f", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}]},
        {"name": "tags", "type": ["null", {"type": "array", "items": "string"}]},
        {"name": "attrs", "type": ["null", {"type": "map", "values": ["null", "long"]}]},
        {"name": "inner", "type": ["null", {"type": "record", "name": "i", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"]}]}]},
        {"name": "region", "type": ["null", "string"]},
    ],
}


def test_hive_types() -> None:
    data, parts = hive_columns(AVRO, ("region",))
    types = {c.name: c.type for c in data}
    assert [c.name for c in data[:5]] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"]
    assert types["id"] == "int"
    assert types["big"] == "bigint"
    assert types["ratio"] == "float"
    assert types["blob"] == "binary"
    assert types["day"] == "date"
    assert types["ts"] == "bigint"
    assert types["amount"] == "decimal(10,2)"
    assert types["tags"] == "array<string>"
    assert types["attrs"] == "map<string,bigint>"
    assert types["inner"] == "struct<a:int,b:string>"
    assert "region" not in types
    assert parts == [HiveColumn("region", "string")]
    assert hive_type(AVRO["fields"][6]["type"], support_timestamp=True) == "timestamp"


def test_spark_schema_properties_round_trip_and_split() -> None:
    props = spark_table_properties(AVRO, ("region",))
    assert props["spark.sql.sources.provider"] == "hudi"
    assert props["spark.sql.sources.schema.numPartCols"] == "1"
    assert props["spark.sql.sources.schema.partCol.0"] == "region"
    schema = schema_from_properties(props)
    names = [f["name"] for f in schema["fields"]]
    assert names[-1] == "region"
    assert names[:2] == ["_hoodie_commit_time", "_hoodie_commit_seqno"]
    by_name = {f["name"]: f for f in schema["fields"]}
    assert by_name["amount"]["type"] == "decimal(10,2)"
    assert by_name["ts"]["type"] == "timestamp"
    assert by_name["big"]["nullable"] is False
    assert by_name["id"]["type"] == "integer"
    assert by_name["inner"]["type"]["fields"][0] == {"name": "a", "type": "integer", "nullable": False, "metadata": {}}
    wide = {"type": "record", "name": "w", "fields": [{"name": f"column_with_a_long_name_{i}", "type": ["null", "string"]} for i in range(200)]}
    big = spark_table_properties(wide, ())
    count = int(big["spark.sql.sources.schema.numParts"])
    assert count > 1
    assert all(len(big[f"spark.sql.sources.schema.part.{i}"]) <= 4000 for i in range(count))
    assert len(schema_from_properties(big)["fields"]) == 205
    assert json.loads(json.dumps(schema)) == schema  # plain JSON: no tuples, no Python-only values


def test_schema_evolution_rules() -> None:
    current = [HiveColumn("id", "int"), HiveColumn("r", "float"), HiveColumn("s", "struct<a:int>"), HiveColumn("name", "string")]
    change = schema_change(current, [HiveColumn("id", "bigint"), HiveColumn("r", "double"), HiveColumn("s", "struct<a:int,b:string>"),
                                     HiveColumn("name", "string"), HiveColumn("extra", "date")], "db.t")
    assert [c.name for c in change.added] == ["extra"]
    assert [(c.name, old) for c, old in change.changed] == [("id", "int"), ("r", "float"), ("s", "struct<a:int>")]
    assert schema_change(current, current, "db.t").is_empty
    with pytest.raises(SchemaEvolutionError, match="db.t: column name cannot change from string to int"):
        schema_change(current, [HiveColumn("name", "int")], "db.t")
    with pytest.raises(SchemaEvolutionError, match="bigint to int"):
        schema_change([HiveColumn("id", "bigint")], [HiveColumn("id", "int")], "db.t")


def test_a_spark_error_names_its_missing_class_and_hints_at_hudis_jars() -> None:
    """Spark's first line says the table cannot be created; the class it lacks is further down (as py4j words it)."""
    from hive_sync.errors import SyncError
    from hive_sync.hiveql import SqlClient

    def execute(sql: str) -> list[tuple[object, ...]]:
        raise RuntimeError("[CANNOT_CREATE_TABLE] Cannot create the table `db`.`t`.\n"
                           "\tat org.apache.spark.sql.hive.client.HiveClientImpl.createTable(HiveClientImpl.scala:571)\n"
                           "Caused by: java.lang.ClassNotFoundException: org.apache.hudi.hadoop.HoodieParquetInputFormat\n"
                           "\tat java.base/java.net.URLClassLoader.findClass(URLClassLoader.java:445)")

    client = SqlClient(execute, "SparkSession", spark_sql=True)
    with pytest.raises(SyncError) as caught:
        client.run("create_table", "CREATE TABLE db.t (a INT)")
    message = str(caught.value)
    assert message.startswith("SparkSession refused create_table (CREATE TABLE db.t (a INT)): [CANNOT_CREATE_TABLE] Cannot create the table")
    assert "(caused by ClassNotFoundException: org.apache.hudi.hadoop.HoodieParquetInputFormat)" in message
    assert "the server lacks Hudi's jars" in message and "\n" not in message


@pytest.mark.parametrize("name", ["a:int>) LOCATION 'file:/victim' TBLPROPERTIES ('x'='y') --", "a b", "a,b", "a`b", "1a", ""])
def test_a_struct_field_name_that_is_no_avro_name_never_reaches_ddl(name: str) -> None:
    """A hostile commit schema's nested field name (issue 64) is refused naming the column, before any statement:
    Hive's type strings hold struct field names unquoted, so such a name would rewrite the CREATE TABLE."""
    from hive_sync.errors import SyncError

    avro = {"type": "record", "name": "r", "fields": [{"name": "info", "type": {"type": "record", "name": "i", "fields": [
        {"name": "ok", "type": "int"}, {"name": "deep", "type": {"type": "record", "name": "d", "fields": [{"name": name, "type": "int"}]}}]}}]}
    with pytest.raises(SyncError, match=r"column info\.deep: struct field name .* is not an Avro name"):
        hive_columns(avro, ())
    fine = {"type": "record", "name": "r", "fields": [{"name": "info", "type": {"type": "record", "name": "i", "fields": [
        {"name": "_ok1", "type": "int"}]}}]}
    assert hive_columns(fine, ())[0][-1] == HiveColumn("info", "struct<_ok1:int>")
