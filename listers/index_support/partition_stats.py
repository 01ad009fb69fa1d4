"""Partition pruning on the metadata table's partition_stats (one small MDT partition)."""

from __future__ import annotations

from expressions import may_match
from listers.index_support.base import PartitionIndexSupport, PlanContext
from metadata import MetadataTableUnavailable
from metadata.mdt.file_groups import MdtPartition
from metadata.stats_table import NULL_COUNT_SUFFIX, PARTITION


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
        keep = may_match(ctx.predicate, stats).to_pylist()
        excluded = {p for p, k in zip(stats.column(PARTITION).to_pylist(), keep) if not k}
        return [p for p in partitions if p not in excluded], ""  # no stats row: kept
