"""The index supports a plan runs, in order (Apache Hudi's HoodieFileIndex chain).

The order is by cost, cheapest and most selective first, so that each stage
reads only what the ones before left:

1. partition values: exact, in memory;
2. partition_stats: one small metadata partition, a row per partition and column;
3. record_index: point lookups of the keys the predicate pins (a few HFile
   blocks), and a key lands in one file group: the most selective stage;
4. secondary indexes: prefix lookups of pinned values, then the record index;
5. column_stats: a row per file and column of the partitions still in play,
   the largest read, so it comes after the key stages narrowed the partitions;
6. expression indexes: column_stats of f(column), one partition per index,
   read for what column_stats left (they answer leaves on f(column), and
   equalities on the column itself, that column_stats cannot);
7. bloom_filters: a point lookup per remaining base file, so after
   column_stats has left fewer (it rules out keys inside a file's min/max);
8. bloom filters in base-file footers: a read per remaining base file, only on request.

Stages 3-6 first rule file groups out by file name, so only the groups left
are built into slices (on the latest view; a past view builds every group).
"""

from listers.index_support.base import FileIndexSupport, FileListing, Groups, KeyLookup, PartitionIndexSupport, PlanContext
from listers.index_support.bloom_filters import FooterBloomFilters, MetadataBloomFilters
from listers.index_support.column_stats import Candidates, CandidatesRunner, ColumnStats
from listers.index_support.expression_index import ExpressionIndexes
from listers.index_support.keys import MAX_KEYS
from listers.index_support.partition_stats import PartitionStats
from listers.index_support.partition_values import PartitionValues, transformed_partition_fields
from listers.index_support.record_index import RecordIndex, SecondaryIndexes
from listers.index_support.stats_runs import runs_of_partitions


def file_index_chain(column_stats_runner: CandidatesRunner | None = None, processes: int | None = 1) -> list[FileIndexSupport]:
    """A new chain of file-level supports (they keep per-plan state);
    `column_stats_runner` evaluates column_stats away from the driver (Spark
    executors); `processes` evaluate a streamed column_stats read (None: one per core)."""
    return [RecordIndex(), SecondaryIndexes(), ColumnStats(column_stats_runner, runs_of_partitions(processes=processes)), ExpressionIndexes(),
            MetadataBloomFilters(), FooterBloomFilters()]


__all__ = [
    "MAX_KEYS", "Candidates", "CandidatesRunner", "ColumnStats", "ExpressionIndexes", "FileIndexSupport", "FileListing", "FooterBloomFilters", "Groups", "KeyLookup", "MetadataBloomFilters", "PartitionIndexSupport", "PartitionStats",
    "PartitionValues", "PlanContext", "RecordIndex", "SecondaryIndexes", "file_index_chain", "transformed_partition_fields",
]
