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

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from engine_bridge.spark.keys import KEY_LOOKUP_THRESHOLD, key_groups_of, spark_key_lookup
from expressions import BoundPredicate, Dialect, Expr
from listers import Plan, plan
from listers.directory_lister import DirectoryLister
from listers.index_support import Candidates, CandidatesRunner, PlanContext
from listers.index_support.column_stats import bucket_candidates
from metadata import HudiTable
from metadata.arrow_memory import empty_table
from metadata.listing import FILE_TABLE_SCHEMA
from metadata.mdt import keys
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.stats_shards import StatsShard, listing_buckets, read_shard, stats_buckets, stats_shards
from metadata.stats_table import FILE_NAME, PARTITION

TASKS_PER_CORE = 2
Piece = tuple[str, Any]  # ("stats", {column: records}) or ("files", listing rows)


def _stats_task(base_uri: str, storage_options: Mapping[str, str], shard: StatsShard, columns: list[str],
                types: dict[str, pa.DataType], partition_ids: frozenset[str], buckets: int) -> list[tuple[int, Piece]]:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    try:
        mdt = table.metadata_table
        assert mdt is not None
        read = read_shard(mdt, shard, columns, types)
    finally:
        table.close()
    # only the kept partitions' records travel
    return [(bucket, ("stats", pieces)) for bucket, pieces in stats_buckets(read, buckets, partition_ids).items()]


def _listing_task(base_uri: str, storage_options: Mapping[str, str], partitions: list[str], buckets: int) -> list[tuple[int, Piece]]:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    try:
        files = DirectoryLister(table).file_table(partitions)
    finally:
        table.close()
    return [(bucket, ("files", rows)) for bucket, rows in listing_buckets(files, buckets, PARTITION, FILE_NAME).items()]


def _bucket_task(pieces: Iterable[Piece], predicate: BoundPredicate, columns: list[str], types: dict[str, pa.DataType]) -> Candidates:
    listed: list[pa.Table] = []
    stats: dict[str, list[pa.Table]] = {}
    for kind, value in pieces:
        if kind == "files":
            listed.append(value)
        else:
            for column, records in value.items():
                stats.setdefault(column, []).append(records)
    files = pa.concat_tables(listed) if listed else empty_table(FILE_TABLE_SCHEMA)
    if not files.num_rows:
        return Candidates(frozenset(), 0, (), group_files=files)
    return bucket_candidates(files, stats, predicate, columns, types)


def spark_candidates_runner(spark: Any, parallelism: int | None = None) -> CandidatesRunner:
    """A column_stats runner that reads and evaluates on Spark executors (see the module)."""
    cores = parallelism or spark.sparkContext.defaultParallelism

    def run(ctx: PlanContext, partitions: list[str]) -> Candidates:
        table, mdt = ctx.table, ctx.mdt
        assert mdt is not None
        uri, options = table.base_uri, dict(table.storage.storage_options)
        predicate, columns = ctx.predicate, list(ctx.data_columns)
        known = mdt.column_types()
        types = {c: known[c] for c in columns if c in known}
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
            lambda bucket: _bucket_task(bucket[1], predicate, columns, types)).collect()
        indexed = {c for part in found for c in part.indexed}
        group_files = [part.group_files for part in found if part.group_files is not None and part.group_files.num_rows]
        return Candidates(
            frozenset().union(*(part.files for part in found)), sum(part.evaluated for part in found),
            tuple(c for c in columns if c in indexed),
            f"evaluated on Spark executors: {len(shards)} column_stats shard(s) ({sum(s.size for s in shards) / 2**20:.1f} MiB) "
            f"and {len(chunks)} listing task(s) into {tasks} bucket(s); the driver got candidate names only",
            pa.concat_tables(group_files) if group_files else empty_table(FILE_TABLE_SCHEMA))

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
