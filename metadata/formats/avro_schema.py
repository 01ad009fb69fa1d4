"""Avro <-> Arrow schema mapping, as Hudi's writers use it.

Hudi stores the table schema as Avro JSON (commit `extraMetadata.schema`,
`hoodie.table.create.schema`); Parquet files and planners speak Arrow.
Nullable fields are unions with "null".
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import fastavro
import pyarrow as pa

from metadata.errors import HudiError

META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def unwrap_nullable(avro_type: Any) -> tuple[Any, bool]:
    """(the type inside a ["null", T] union, whether null was allowed)."""
    if isinstance(avro_type, list):
        non_null = [t for t in avro_type if t != "null"]
        if len(non_null) == 1:
            return non_null[0], len(non_null) != len(avro_type)
        return avro_type, "null" in avro_type
    return avro_type, False


def avro_type_to_arrow(avro_type: Any, where: str = "") -> pa.DataType:
    """Arrow type of an Avro type (without its nullability)."""
    avro_type, _ = unwrap_nullable(avro_type)
    if isinstance(avro_type, list):
        raise HudiError(f"{where}: Avro union {avro_type} has no Arrow equivalent")
    if isinstance(avro_type, str):
        simple = {
            "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
            "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null(),
        }
        if avro_type in simple:
            return simple[avro_type]
        raise HudiError(f"{where}: named Avro type {avro_type!r} is not resolvable here")
    logical = avro_type.get("logicalType")
    base = avro_type.get("type")
    if logical == "decimal":
        return pa.decimal128(int(avro_type["precision"]), int(avro_type.get("scale", 0)))
    if logical == "date":
        return pa.date32()
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return pa.timestamp("us", tz="UTC" if logical == "timestamp-micros" else None)
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return pa.timestamp("ms", tz="UTC" if logical == "timestamp-millis" else None)
    if logical == "time-micros":
        return pa.time64("us")
    if logical == "time-millis":
        return pa.time32("ms")
    if logical == "uuid":
        return pa.string()
    if base == "record":
        return pa.struct([avro_field_to_arrow(f, where) for f in avro_type["fields"]])
    if base == "array":
        items = avro_type["items"]
        return pa.list_(pa.field("element", avro_type_to_arrow(items, where), nullable=unwrap_nullable(items)[1]))
    if base == "map":
        values = avro_type["values"]
        return pa.map_(pa.string(), pa.field("value", avro_type_to_arrow(values, where), nullable=unwrap_nullable(values)[1]))
    if base == "enum":
        return pa.string()
    if base == "fixed":
        return pa.binary(int(avro_type["size"]))
    if isinstance(base, (str, dict, list)):
        return avro_type_to_arrow(base, where)
    raise HudiError(f"{where}: unsupported Avro type {json.dumps(avro_type)[:200]}")


def avro_field_to_arrow(field: dict[str, Any], where: str = "") -> pa.Field:
    _, nullable = unwrap_nullable(field["type"])
    return pa.field(field["name"], avro_type_to_arrow(field["type"], f"{where}.{field['name']}" if where else field["name"]), nullable=nullable)


def avro_to_arrow_schema(avro: dict[str, Any] | str) -> pa.Schema:
    record = json.loads(avro) if isinstance(avro, str) else avro
    return pa.schema([avro_field_to_arrow(f) for f in record.get("fields", [])])


def arrow_type_to_avro(dtype: pa.DataType, name: str) -> Any:
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_int8(dtype) or pa.types.is_int16(dtype) or pa.types.is_int32(dtype):
        return "int"
    if pa.types.is_int64(dtype):
        return "long"
    if pa.types.is_float32(dtype):
        return "float"
    if pa.types.is_float64(dtype):
        return "double"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return "bytes"
    if pa.types.is_decimal(dtype):
        return {"type": "bytes", "logicalType": "decimal", "precision": dtype.precision, "scale": dtype.scale}
    if pa.types.is_date32(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        unit = {"us": "micros", "ms": "millis"}.get(dtype.unit)
        if unit is None:
            raise HudiError(f"field {name}: timestamp unit {dtype.unit} has no Avro logical type (use us or ms)")
        prefix = "" if dtype.tz else "local-"
        return {"type": "long", "logicalType": f"{prefix}timestamp-{unit}"}
    if pa.types.is_struct(dtype):
        return {
            "type": "record",
            "name": _avro_name(name),
            "fields": [arrow_field_to_avro(dtype.field(i), f"{name}_{dtype.field(i).name}") for i in range(dtype.num_fields)],
        }
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return {"type": "array", "items": ["null", arrow_type_to_avro(dtype.value_type, f"{name}_item")]}
    if pa.types.is_map(dtype):
        return {"type": "map", "values": ["null", arrow_type_to_avro(dtype.item_type, f"{name}_value")]}
    raise HudiError(f"field {name}: Arrow type {dtype} has no Avro mapping")


def arrow_field_to_avro(field: pa.Field, qualified: str | None = None) -> dict[str, Any]:
    avro = arrow_type_to_avro(field.type, qualified or field.name)
    if field.nullable:
        return {"name": field.name, "type": ["null", avro], "default": None}
    return {"name": field.name, "type": avro}


def arrow_to_avro_schema(schema: pa.Schema, record_name: str, namespace: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "record",
        "name": _avro_name(record_name),
        "fields": [arrow_field_to_avro(f) for f in schema],
    }
    if namespace:
        record["namespace"] = namespace
    return record


def _avro_name(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """The schema with Hudi's five meta columns in front."""
    present = set(schema.names)
    meta = [pa.field(name, pa.string()) for name in META_FIELDS if name not in present]
    return pa.schema(meta + list(schema))


def read_avro_record(payload: bytes, writer_schema: Any, reader_schema: Any = None, **options: Any) -> dict[str, Any]:
    """One schemaless Avro record (a record schema decodes to a dict).
    Raises what fastavro raises on bad bytes; callers name the file."""
    record = fastavro.schemaless_reader(io.BytesIO(payload), writer_schema, reader_schema, **options)
    if not isinstance(record, dict):
        raise ValueError(f"expected an Avro record, decoded {type(record).__name__}")
    return record
