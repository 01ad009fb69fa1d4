"""SQL conditions added to engines' queries (sqlglot nodes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import pyarrow as pa
from sqlglot import exp

from metadata import HudiTable
from metadata.formats.avro_schema import avro_to_arrow_schema
from metadata.table.partition_path import parse_partition_values


def _literal(value: str, dtype: pa.DataType) -> Any:
    if pa.types.is_string(dtype):
        return exp.Literal.string(value)
    if pa.types.is_integer(dtype):
        return exp.Literal.number(int(value))
    if pa.types.is_date32(dtype):
        return exp.cast(exp.Literal.string(date.fromisoformat(value).isoformat()), exp.DataType.build("date"))
    return None


def partition_condition(table: HudiTable, partitions: Sequence[str], alias: str | None) -> Any:
    """The kept partitions as a predicate on partition columns (None when a
    column's path text is not its value, or its type is not one we spell)."""
    config = table.config
    fields = config.partition_fields
    if not fields or not partitions:
        return None
    types = {f.name: f.type for f in avro_to_arrow_schema(table.avro_schema())}
    if any(config.key_generator.why_path_is_not_the_value(f, pa.types.is_timestamp(types.get(f, pa.string()))) for f in fields):
        return None
    alternatives: list[Any] = []  # sqlglot nodes (its base class name differs across versions)
    for partition in partitions:
        values = parse_partition_values(partition, fields, config.hive_style_partitioning, config.url_encode_partitioning)
        terms: list[Any] = []
        for name in fields:
            column = exp.column(name, table=alias)
            value = values[name]
            if value is None:
                terms.append(exp.Is(this=column, expression=exp.Null()))
                continue
            literal = _literal(value, types.get(name, pa.string()))
            if literal is None:
                return None
            terms.append(exp.EQ(this=column, expression=literal))
        alternatives.append(exp.and_(*terms) if len(terms) > 1 else terms[0])
    return exp.or_(*alternatives) if len(alternatives) > 1 else alternatives[0]
