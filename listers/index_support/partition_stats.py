"""Partition pruning on the metadata table's partition_stats (one small MDT partition)."""

from __future__ import annotations

import pyarrow as pa

from expressions import may_match
from listers.index_support.base import PartitionIndexSupport, PlanContext
from metadata import MetadataTableUnavailable
from metadata.formats.stats_table import NULL_COUNT_SUFFIX, PARTITION, max_field, min_field, stats_columns
from metadata.mdt.file_groups import MdtPartition


class PartitionStats(PartitionIndexSupport):
    name = "partition_stats"

    def prune(self, ctx: PlanContext, partitions: list[str]) -> tuple[list[str], str] | None:
        if ctx.mdt is None or not ctx.data_columns or not partitions:
            return None
        if MdtPartition.PARTITION_STATS not in ctx.table.config.metadata_partitions:
            ctx.not_used.append("partition_stats: not built for this table")
            return None
        if not ctx.table.config.partition_fields:
            return None
        try:
            stats = ctx.mdt.partition_stats(ctx.data_columns, partitions, ordered=False)
        except MetadataTableUnavailable as exc:
            ctx.unusable(self.name, exc, None)
            return None
        # A partition's null counts leave out the files written before a column was added (Hudi rolls up only the
        # files that have it, apache/hudi#19645): IS NULL cannot be decided here, so the counts are not used.
        stats = stats.drop_columns([c for c in stats.column_names if c.endswith(NULL_COUNT_SUFFIX)])
        stats, floats = _without_float_bounds(stats)
        keep = may_match(ctx.predicate, stats).to_pylist()
        # A pending compaction's file groups: Hudi rolls up only the slice written since it was planned, not the
        # base file and logs it compacts, so the bounds leave rows out (Hudi 1.0.2 drops them).
        compacting = ctx.lister.view.pending_compaction_partitions()
        excluded = {p for p, k in zip(stats.column(PARTITION).to_pylist(), keep) if not k and p not in compacting}
        notes = [f"{len(compacting)} partition(s) with a pending compaction kept (their statistics leave out the slice it compacts)"
                 if compacting else "", f"float bounds not used ({', '.join(floats)})" if floats else ""]
        return [p for p in partitions if p not in excluded], "; ".join(n for n in notes if n)  # no stats row: kept


def _without_float_bounds(stats: pa.Table) -> tuple[pa.Table, list[str]]:
    """Float and double bounds left out: Hudi rolls up its files' column ranges, and a file whose footer lost its
    bounds to a NaN counts as [0.0, 0.0] there (see expressions.eval_stats), which no longer shows in the sum."""
    floats = [f.name for f in stats_columns(stats) if pa.types.is_floating(f.type)]
    for column in [bound(f) for f in floats for bound in (min_field, max_field)]:
        index = stats.schema.get_field_index(column)
        stats = stats.set_column(index, stats.schema.field(index), pa.nulls(stats.num_rows, stats.schema.field(index).type))
    return stats, floats
