"""Partition pruning on the values partition paths hold (exact, no I/O)."""

from __future__ import annotations

import pyarrow as pa

from expressions import Expr
from expressions.bound import bound_as
from expressions.eval_partitions import map_to_path_values, prune_partitions
from listers.index_support.base import PartitionIndexSupport, PlanContext
from metadata import HudiFormatError, HudiTable
from metadata.table.key_generator import KeyGenerator


def transformed_partition_fields(table: HudiTable, types: dict[str, pa.DataType]) -> dict[str, str]:
    """Partition fields whose paths do not hold their values, with why."""
    key_generator = table.config.key_generator
    transformed = {}
    for name in table.config.partition_fields:
        reason = key_generator.why_path_is_not_the_value(name, pa.types.is_timestamp(types.get(name, pa.string())))
        if reason is not None:
            transformed[name] = reason
    return transformed


class PartitionValues(PartitionIndexSupport):
    name = "partition values"

    def __init__(self, types: dict[str, pa.DataType], transformed: dict[str, str]) -> None:
        self.types = types
        self.transformed = transformed

    def prune(self, ctx: PlanContext, partitions: list[str]) -> tuple[list[str], str] | None:
        config = ctx.table.config
        if not config.partition_fields:
            return None
        named = {c.casefold() for c in ctx.predicate.columns}
        if not any(f.casefold() in named for f in config.partition_fields):  # no path is parsed for a predicate that cannot prune one
            return list(partitions), "the predicate names no partition field"
        key_generator = config.key_generator
        partition_expr, path_types, notes = self._map_timestamp_fields(ctx, key_generator)
        prunable = [f for f in config.partition_fields if f not in self.transformed or f in notes]
        try:
            kept = prune_partitions(bound_as(partition_expr, pa.schema(list(path_types.items()))), partitions, config.partition_fields,
                                    path_types, config.hive_style_partitioning, config.url_encode_partitioning, prunable=prunable,
                                    segments_of=self._segments_of(key_generator))
        except HudiFormatError as exc:
            if not self.transformed:
                raise
            # Formatted values with slashes do not split back into fields.
            ctx.not_used.append(f"partition values: paths do not split into fields ({exc.problem}); partitions kept")
            kept = partitions
        return kept, "; ".join(notes.values())

    def _segments_of(self, key_generator: KeyGenerator) -> dict[str, int]:
        """Path segments of the fields written as formatted times."""
        spans = {}
        for name in self.transformed:
            partitioning = key_generator.timestamp_partitioning(name)
            if partitioning is not None and not isinstance(partitioning, str):
                spans[name] = partitioning.path_segments
        return spans

    def _map_timestamp_fields(self, ctx: PlanContext, key_generator: KeyGenerator) -> tuple[Expr, dict[str, pa.DataType], dict[str, str]]:
        """The predicate for partition pruning: leaves on TIMESTAMP key-generator
        fields mapped onto the formatted path text (`map_to_path_values`);
        other transformed fields of the predicate keep their partitions, and
        the explanation says why. Returns (predicate, types, {mapped field: note})."""
        expr = ctx.predicate.expr
        path_types = dict(self.types)
        notes = {}
        columns = ctx.predicate.columns
        for name in [f for f in self.transformed if f in columns]:
            partitioning = key_generator.timestamp_partitioning(name)
            if partitioning is None or isinstance(partitioning, str):
                unknown = f" (its transform is not known: {partitioning})" if partitioning else ""
                ctx.not_used.append(f"partition values of {name}: {self.transformed[name]}{unknown}; partitions kept")
                continue
            why = partitioning.why_not_monotone()
            expr = map_to_path_values(expr, name, partitioning.path_value, monotone=why is None)
            path_types[name] = pa.string()
            notes[name] = (f"{name} mapped through the TIMESTAMP key generator ({partitioning.timestamp_type} to "
                           f"'{partitioning.output.text}')" + ("" if why is None else f", equality only: {why}"))
        return expr, path_types, notes
