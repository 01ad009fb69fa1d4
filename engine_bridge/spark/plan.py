"""Planning with column_stats read and evaluated on Spark executors.

The driver reads the timeline and the partition list and prunes partitions
(values, partition_stats); each task then lists a share of the kept
partitions from the metadata table, reads their column_stats, evaluates the
bound predicate on Arrow and returns the names of the files that may match
(or have no statistics). The driver builds slices only for the file groups
of those names: it never holds the statistics. Answers equal the local
planner's (tests check it on every fixture).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from expressions import BoundPredicate, Dialect, Expr
from listers import Plan, plan
from listers.index_support import Candidates, CandidatesRunner, PlanContext, partition_candidates
from metadata import HudiTable

TASKS_PER_CORE = 2


def _task(base_uri: str, storage_options: Mapping[str, str], partitions: list[str], predicate: BoundPredicate,
          columns: list[str]) -> Candidates:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    try:
        return partition_candidates(table, partitions, predicate, columns)
    finally:
        table.close()


def spark_candidates_runner(spark: Any, parallelism: int | None = None) -> CandidatesRunner:
    """A column_stats runner that spreads the partitions over Spark tasks."""
    cores = parallelism or spark.sparkContext.defaultParallelism

    def run(ctx: PlanContext, partitions: list[str]) -> Candidates:
        table = ctx.table
        uri, options = table.base_uri, dict(table.storage.storage_options)
        predicate, columns = ctx.predicate, list(ctx.data_columns)
        tasks = max(1, min(len(partitions), cores * TASKS_PER_CORE))
        size = -(-len(partitions) // tasks)
        chunks = [partitions[i:i + size] for i in range(0, len(partitions), size)] or [[]]
        found = spark.sparkContext.parallelize(chunks, len(chunks)).map(
            lambda chunk: _task(uri, options, chunk, predicate, columns)).collect()
        indexed = {c for part in found for c in part.indexed}
        files = frozenset().union(*(part.files for part in found))
        evaluated = sum(part.evaluated for part in found)
        return Candidates(files, evaluated, tuple(c for c in columns if c in indexed),
                          f"evaluated on Spark executors: {len(chunks)} task(s) over {len(partitions)} partition(s)")

    return run


def plan_on_spark(spark: Any, path_or_uri: str, predicate: str | Expr, dialect: Dialect | str = Dialect.SPARK,
                  parallelism: int | None = None, **options: Any) -> Plan:
    """`listers.plan` with column_stats read and evaluated on the executors
    (options as `plan` takes them: as_of, use_metadata, storage_options, ...)."""
    return plan(path_or_uri, predicate, dialect, column_stats_runner=spark_candidates_runner(spark, parallelism), **options)
