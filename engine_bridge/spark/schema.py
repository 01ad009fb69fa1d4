"""The schema a Hudi table shows to Spark: Hudi's meta columns, then the data
columns in the table schema's order. Partition columns the writer dropped
from the data files (`hoodie.datasource.write.drop.partition.columns`) are
appended as strings, as Hudi's `TableSchemaResolver` does; their values come
from the partition path. Every field is nullable, as Spark's scans are."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from metadata import HudiTable
from metadata.formats.avro_schema import avro_to_arrow_schema, with_meta_fields


def _nullable(field: pa.Field) -> pa.Field:
    dtype = field.type
    if pa.types.is_struct(dtype):
        dtype = pa.struct([_nullable(dtype.field(i)) for i in range(dtype.num_fields)])
    elif pa.types.is_list(dtype):
        dtype = pa.list_(_nullable(dtype.value_field))
    elif pa.types.is_map(dtype):
        dtype = pa.map_(dtype.key_type, _nullable(dtype.item_field))
    return pa.field(field.name, dtype, nullable=True)


def table_arrow_schema(table: HudiTable) -> pa.Schema:
    schema = with_meta_fields(avro_to_arrow_schema(table.avro_schema()))
    present = {name.lower() for name in schema.names}
    dropped = [pa.field(p, pa.string()) for p in table.config.partition_fields if p.lower() not in present]
    return pa.schema([_nullable(f) for f in list(schema) + dropped])


def spark_schema(arrow: pa.Schema) -> Any:
    """Spark's StructType of an Arrow schema (tz-aware timestamps as TIMESTAMP)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow, prefer_timestamp_ntz=True)


def spark_arrow_schema(struct: Any) -> pa.Schema:
    """The Arrow schema Spark expects batches in for a StructType."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")
