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
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hive_sync.errors import SchemaEvolutionError, SyncError
from metadata.formats.avro_schema import META_FIELDS, avro_field_to_arrow, avro_type_to_arrow

SCHEMA_PART_SIZE = 4000


@dataclass(frozen=True)
class HiveColumn:
    name: str
    type: str
    comment: str = ""


def hive_type(avro_type: Any, support_timestamp: bool = False, where: str = "") -> str:
    """Hive type of an Avro type, through the one Avro -> Arrow mapping."""
    return _hive(avro_type_to_arrow(avro_type, where), support_timestamp, where)


# Avro's names (and what Hive's type strings hold unquoted): a struct field named otherwise would be spliced into
# DDL and the metastore's type string, where `a:int>) LOCATION '...' --` rewrites the statement.
_NESTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _field_name(name: str, where: str) -> str:
    if not _NESTED_NAME.fullmatch(name):
        raise SyncError(f"column {where}: struct field name {name[:80]!r} is not an Avro name (letters, digits, underscores): "
                        "Hive's type strings cannot hold it, and it is not written into DDL")
    return name


# Arrow type test -> (Hive type, Spark type) for types without parameters.
_PRIMITIVES: list[tuple[Callable[[pa.DataType], bool], str, str]] = [
    (pa.types.is_boolean, "boolean", "boolean"),
    (pa.types.is_int64, "bigint", "long"),
    (pa.types.is_time64, "bigint", "long"),
    (pa.types.is_integer, "int", "integer"),
    (pa.types.is_time32, "int", "integer"),
    (pa.types.is_float32, "float", "float"),
    (pa.types.is_float64, "double", "double"),
    (pa.types.is_string, "string", "string"),
    (pa.types.is_binary, "binary", "binary"),
    (pa.types.is_fixed_size_binary, "binary", "binary"),
    (pa.types.is_null, "void", "null"),
    (pa.types.is_date, "date", "date"),
]


def _primitive(t: pa.DataType, spark: bool) -> str | None:
    for test, hive_name, spark_name in _PRIMITIVES:
        if test(t):
            return spark_name if spark else hive_name
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return None


def _hive(t: pa.DataType, support_timestamp: bool, where: str = "") -> str:
    primitive = _primitive(t, spark=False)
    if primitive is not None:
        return primitive
    if pa.types.is_timestamp(t):
        return "timestamp" if support_timestamp else "bigint"
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return "struct<" + ",".join(f"{_field_name(f.name, where)}:{_hive(f.type, support_timestamp, f'{where}.{f.name}')}"
                                    for f in fields) + ">"
    if pa.types.is_list(t):
        return f"array<{_hive(t.value_type, support_timestamp, where)}>"
    if pa.types.is_map(t):
        return f"map<string,{_hive(t.item_type, support_timestamp, where)}>"
    raise SyncError(f"Arrow type {t} has no Hive type")


def _spark(t: pa.DataType) -> Any:
    """Spark's StructType JSON of an Arrow type."""
    primitive = _primitive(t, spark=True)
    if primitive is not None:
        return primitive
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_spark_field(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_list(t):
        return {"type": "array", "elementType": _spark(t.value_type), "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": "string", "valueType": _spark(t.item_type), "valueContainsNull": t.item_field.nullable}
    raise SyncError(f"Arrow type {t} has no Spark type")


def _spark_field(field: pa.Field) -> dict[str, Any]:
    return {"name": field.name, "type": _spark(field.type), "nullable": field.nullable, "metadata": {}}


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
    data = [_spark_field(avro_field_to_arrow(f)) for f in fields if f["name"] not in partition_fields]
    by_name = {f["name"]: f for f in fields}
    parts = [_spark_field(avro_field_to_arrow(by_name[p])) if p in by_name else {"name": p, "type": "string", "nullable": True, "metadata": {}}
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
