"""Planning with column_stats read and evaluated on Spark executors.

The driver reads the timeline and the partition list and prunes partitions
(values, partition_stats). Then one Spark job, in two stages:

1. map tasks: each reads one shard of column_stats (a metadata file group's
   base HFile by ranges of data blocks, the first with the keys its logs
   changed: `metadata.mdt.stats_shards`), or lists a share of the kept
   partitions from the `files` partition, and cuts what it read into
   buckets by data file group;
2. reduce tasks: each gets one bucket's listing rows and stats records, so
   every file of a group meets its statistics there, evaluates the bound
   predicate on Arrow, and returns the files that may match and every
   listed file of their groups.

The driver gets those names only: it never holds the statistics nor the
whole listing, and builds slices for the groups left from the files the
tasks listed. Answers equal the local planner's (tests check it on every
fixture and on random tables and predicates).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from engine_bridge.spark.keys import KEY_LOOKUP_THRESHOLD, key_groups_of, spark_key_lookup
from expressions import Dialect, Expr
from listers import Plan, plan
from listers.directory_lister import DirectoryLister
from listers.index_support import Candidates, CandidatesRunner, PlanContext
from listers.index_support.shard_pipeline import Piece, bucket_verdict, listing_pieces, merged, shard_pieces, stats_types
from metadata import HudiTable
from metadata.mdt import keys
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.stats_shards import StatsShard, stats_shards

TASKS_PER_CORE = 2


def _stats_task(base_uri: str, storage_options: Mapping[str, str], shard: StatsShard, columns: list[str],
                types: dict[str, pa.DataType], partition_ids: frozenset[str], buckets: int) -> list[tuple[int, Piece]]:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    try:
        mdt = table.metadata_table
        assert mdt is not None
        return shard_pieces(mdt, shard, columns, types, partition_ids, buckets)  # only the kept partitions' records travel
    finally:
        table.close()


def _listing_task(base_uri: str, storage_options: Mapping[str, str], partitions: list[str], buckets: int) -> list[tuple[int, Piece]]:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    try:
        return listing_pieces(DirectoryLister(table).file_table(partitions), buckets)
    finally:
        table.close()


def spark_candidates_runner(spark: Any, parallelism: int | None = None) -> CandidatesRunner:
    """A column_stats runner that reads and evaluates on Spark executors (see the module)."""
    cores = parallelism or spark.sparkContext.defaultParallelism

    def run(ctx: PlanContext, partitions: list[str]) -> Candidates:
        table, mdt = ctx.table, ctx.mdt
        assert mdt is not None
        uri, options = table.base_uri, dict(table.storage.storage_options)
        predicate, columns = ctx.predicate, list(ctx.data_columns)
        types = stats_types(mdt, columns)
        shards = stats_shards(mdt, MdtPartition.COLUMN_STATS.value)
        tasks = max(1, cores * TASKS_PER_CORE)
        size = -(-len(partitions) // tasks) or 1
        chunks = [partitions[i:i + size] for i in range(0, len(partitions), size)] or [[]]
        partition_ids = frozenset(keys.partition_index_id(p) for p in partitions)
        context = spark.sparkContext
        stats_rdd = context.parallelize(shards, max(1, len(shards))).flatMap(
            lambda shard: _stats_task(uri, options, shard, columns, types, partition_ids, tasks))
        listing_rdd = context.parallelize(chunks, len(chunks)).flatMap(lambda chunk: _listing_task(uri, options, chunk, tasks))
        found = stats_rdd.union(listing_rdd).groupByKey(tasks).map(
            lambda bucket: bucket_verdict(bucket[1], predicate, columns, types)).collect()
        return merged(found, columns, f"evaluated on Spark executors: {len(shards)} column_stats shard(s) "
                                      f"({sum(s.size for s in shards) / 2**20:.1f} MiB) and {len(chunks)} listing task(s) into {tasks} "
                                      "bucket(s); the driver got candidate names only")

    return run


def plan_on_spark(spark: Any, path_or_uri: str, predicate: str | Expr, dialect: Dialect | str = Dialect.SPARK,
                  parallelism: int | None = None, keys: Any = None, key_column: str | None = None,
                  key_lookup_threshold: int = KEY_LOOKUP_THRESHOLD, **options: Any) -> Plan:
    """`listers.plan` with column_stats read and evaluated on the executors
    (options as `plan` takes them: as_of, use_metadata, storage_options, ...).
    Record keys the predicate pins (an IN list, or what a secondary index
    gives) are looked up on the executors too once there are more than
    `key_lookup_threshold` of them.
    `keys`: a DataFrame of record keys (its `key_column`, or its only
    column): only the file groups the record index gives for them stay (a
    semi-join, looked up on the executors as `lookup_keys` does; the driver gets
    the distinct groups only)."""
    storage_options = options.get("storage_options")
    key_groups = None if keys is None else key_groups_of(path_or_uri, keys, key_column, storage_options)
    return plan(path_or_uri, predicate, dialect, column_stats_runner=spark_candidates_runner(spark, parallelism),
                key_groups=key_groups, key_lookup=spark_key_lookup(spark, path_or_uri, storage_options, key_lookup_threshold),
                **options)
