"""What a Hive sync registers about columns (reference section 10).

- Hive column types from the table's Avro schema (Hudi's HiveSchemaUtil
  mapping: long is bigint, timestamps are bigint unless timestamps are
  supported, decimals keep precision and scale...).
- The Spark DataSource schema properties (`spark.sql.sources.schema.*`):
  Spark's StructType JSON, data columns first then partition columns, split
  into chunks of 4000 characters.
- Which column changes a sync may apply: added columns, int to bigint,
  float to double, and struct changes; anything else is refused with the
  column and both types named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from metadata.avro_schema import META_FIELDS, unwrap_nullable
from metadata.errors import HudiError

SCHEMA_PART_SIZE = 4000


class SchemaEvolutionError(HudiError):
    """A column changed in a way the metastore cannot follow."""


@dataclass(frozen=True)
class HiveColumn:
    name: str
    type: str
    comment: str = ""


def hive_type(avro_type: Any, support_timestamp: bool = False, where: str = "") -> str:
    t, _ = unwrap_nullable(avro_type)
    if isinstance(t, list):
        raise HudiError(f"column {where}: a union of {t} has no Hive type")
    if isinstance(t, str):
        simple = {"int": "int", "long": "bigint", "float": "float", "double": "double", "boolean": "boolean",
                  "string": "string", "bytes": "binary", "null": "void"}
        if t in simple:
            return simple[t]
        raise HudiError(f"column {where}: Avro type {t!r} has no Hive type")
    logical = t.get("logicalType")
    base = t.get("type")
    if logical == "decimal":
        return f"decimal({int(t['precision'])},{int(t.get('scale', 0))})"
    if logical == "date":
        return "date"
    if logical in ("timestamp-micros", "timestamp-millis", "local-timestamp-micros", "local-timestamp-millis"):
        return "timestamp" if support_timestamp else "bigint"
    if logical in ("time-micros", "time-millis"):
        return "bigint" if logical == "time-micros" else "int"
    if base == "record":
        members = []
        for f in t["fields"]:
            name = f["name"]
            members.append(f"{name}:{hive_type(f['type'], support_timestamp, f'{where}.{name}')}")
        return f"struct<{','.join(members)}>"
    if base == "array":
        return f"array<{hive_type(t['items'], support_timestamp, where + '[]')}>"
    if base == "map":
        return f"map<string,{hive_type(t['values'], support_timestamp, where + '{}')}>"
    if base == "enum":
        return "string"
    if base == "fixed":
        return "binary"
    return hive_type(base, support_timestamp, where)


def _spark_type(avro_type: Any) -> Any:
    t, _ = unwrap_nullable(avro_type)
    if isinstance(t, str):
        return {"int": "integer", "long": "long", "float": "float", "double": "double", "boolean": "boolean",
                "string": "string", "bytes": "binary", "null": "null"}[t]
    logical = t.get("logicalType")
    base = t.get("type")
    if logical == "decimal":
        return f"decimal({int(t['precision'])},{int(t.get('scale', 0))})"
    if logical == "date":
        return "date"
    if logical in ("timestamp-micros", "timestamp-millis"):
        return "timestamp"
    if logical in ("local-timestamp-micros", "local-timestamp-millis"):
        return "timestamp_ntz"
    if base == "record":
        return {"type": "struct", "fields": [_spark_field(f) for f in t["fields"]]}
    if base == "array":
        return {"type": "array", "elementType": _spark_type(t["items"]), "containsNull": _nullable(t["items"])}
    if base == "map":
        return {"type": "map", "keyType": "string", "valueType": _spark_type(t["values"]), "valueContainsNull": _nullable(t["values"])}
    if base == "enum":
        return "string"
    if base == "fixed":
        return "binary"
    return _spark_type(base)


def _nullable(avro_type: Any) -> bool:
    return unwrap_nullable(avro_type)[1]


def _spark_field(field: dict[str, Any]) -> dict[str, Any]:
    return {"name": field["name"], "type": _spark_type(field["type"]), "nullable": _nullable(field["type"]), "metadata": {}}


def _with_meta(avro: dict[str, Any]) -> list[dict[str, Any]]:
    present = {f["name"] for f in avro.get("fields", [])}
    meta = [{"name": n, "type": ["null", "string"]} for n in META_FIELDS if n not in present]
    return meta + list(avro.get("fields", []))


def hive_columns(avro: dict[str, Any], partition_fields: tuple[str, ...], support_timestamp: bool = False) -> tuple[list[HiveColumn], list[HiveColumn]]:
    """(data columns with Hudi's meta columns first, partition columns)."""
    fields = {f["name"]: f for f in _with_meta(avro)}
    data = [HiveColumn(name, hive_type(f["type"], support_timestamp, name)) for name, f in fields.items() if name not in partition_fields]
    partitions = [HiveColumn(p, hive_type(fields[p]["type"], support_timestamp, p) if p in fields else "string") for p in partition_fields]
    return data, partitions


def spark_schema_json(avro: dict[str, Any], partition_fields: tuple[str, ...]) -> str:
    fields = _with_meta(avro)
    data = [_spark_field(f) for f in fields if f["name"] not in partition_fields]
    by_name = {f["name"]: f for f in fields}
    parts = [_spark_field(by_name[p]) if p in by_name else {"name": p, "type": "string", "nullable": True, "metadata": {}}
             for p in partition_fields]
    return json.dumps({"type": "struct", "fields": data + parts}, separators=(",", ":"))


def spark_table_properties(avro: dict[str, Any], partition_fields: tuple[str, ...]) -> dict[str, str]:
    """The `spark.sql.sources.*` table parameters of a Hudi DataSource table."""
    schema = spark_schema_json(avro, partition_fields)
    parts = [schema[i : i + SCHEMA_PART_SIZE] for i in range(0, len(schema), SCHEMA_PART_SIZE)]
    props = {"spark.sql.sources.provider": "hudi", "spark.sql.sources.schema.numParts": str(len(parts))}
    props.update({f"spark.sql.sources.schema.part.{i}": part for i, part in enumerate(parts)})
    if partition_fields:
        props["spark.sql.sources.schema.numPartCols"] = str(len(partition_fields))
        props.update({f"spark.sql.sources.schema.partCol.{i}": p for i, p in enumerate(partition_fields)})
    return props


def schema_from_properties(props: dict[str, str]) -> dict[str, Any]:
    """Spark's StructType JSON reassembled from the table parameters."""
    count = int(props["spark.sql.sources.schema.numParts"])
    return json.loads("".join(props[f"spark.sql.sources.schema.part.{i}"] for i in range(count)))


_WIDENINGS = {("int", "bigint"), ("float", "double")}


@dataclass(frozen=True)
class SchemaChange:
    added: list[HiveColumn]
    changed: list[tuple[HiveColumn, str]]  # (new column, old type)

    @property
    def is_empty(self) -> bool:
        return not self.added and not self.changed


def schema_change(current: list[HiveColumn], wanted: list[HiveColumn], table: str) -> SchemaChange:
    """What to apply to bring `current` to `wanted`; refuses unsafe changes."""
    existing = {c.name.lower(): c for c in current}
    added, changed = [], []
    for column in wanted:
        old = existing.get(column.name.lower())
        if old is None:
            added.append(column)
        elif old.type.lower() != column.type.lower():
            old_type, new_type = old.type.lower(), column.type.lower()
            if (old_type, new_type) in _WIDENINGS or (old_type.startswith("struct<") and new_type.startswith("struct<")):
                changed.append((column, old.type))
            else:
                raise SchemaEvolutionError(
                    f"{table}: column {column.name} cannot change from {old.type} to {column.type} "
                    "(allowed: int to bigint, float to double, struct to struct, new columns)"
                )
    return SchemaChange(added, changed)
