"""One writer per metadata partition, as the read side has one index support per index."""

from __future__ import annotations

from metadata.mdt.expression_index import ExpressionIndexPartition
from metadata.mdt.file_groups import MdtPartition, MetadataPartition, SecondaryIndexPartition
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.partitions.base import PartitionWriter
from metadata.mdt.write.partitions.bloom_filters import BloomFiltersWriter
from metadata.mdt.write.partitions.column_stats import ColumnStatsWriter
from metadata.mdt.write.partitions.expression_index import ExpressionIndexWriter
from metadata.mdt.write.partitions.files import FilesWriter
from metadata.mdt.write.partitions.partition_stats import PartitionStatsWriter
from metadata.mdt.write.partitions.record_index import RecordIndexWriter
from metadata.mdt.write.partitions.secondary_index import SecondaryIndexWriter

_WRITERS: dict[MdtPartition, type[PartitionWriter]] = {
    MdtPartition.FILES: FilesWriter,
    MdtPartition.COLUMN_STATS: ColumnStatsWriter,
    MdtPartition.PARTITION_STATS: PartitionStatsWriter,
    MdtPartition.RECORD_INDEX: RecordIndexWriter,
    MdtPartition.BLOOM_FILTERS: BloomFiltersWriter,
}


def partition_writer(partition: MetadataPartition, ctx: WriteContext) -> PartitionWriter:
    """The writer of one metadata partition."""
    if isinstance(partition, SecondaryIndexPartition):
        return SecondaryIndexWriter(partition, ctx)
    if isinstance(partition, ExpressionIndexPartition):
        return ExpressionIndexWriter(partition, ctx)
    return _WRITERS[partition](partition, ctx)


__all__ = ["PartitionWriter", "partition_writer"]
