"""column_stats read a shard at a time and evaluated per bucket: the one
pipeline behind Spark executors (engine_bridge.spark.plan) and the local
streaming runner here.

A shard is a run of a metadata file group's data blocks (about 32 MiB);
reading one keeps only the kept partitions' records of the predicate's
columns, cut into buckets by file group. A bucket is where a group's listing
rows and its statistics meet, and is evaluated on its own: no step holds
the HFile blocks of more than one shard, nor the statistics of partitions
the plan dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from listers.index_support.base import PlanContext
from listers.index_support.column_stats import Candidates, CandidatesRunner, bucket_candidates
from metadata.formats.stats_table import FILE_NAME, PARTITION
from metadata.mdt import keys
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.stats_shards import StatsShard, listing_buckets, read_shard, stats_buckets, stats_shards
from metadata.storage.listing import FILE_TABLE_SCHEMA
from metadata.util.arrow_memory import empty_table

Piece = tuple[str, Any]  # ("stats", {column: records}) or ("files", listing rows)
LOCAL_BUCKETS = 8


def shard_pieces(mdt: MetadataTable, shard: StatsShard, columns: list[str], types: dict[str, pa.DataType],
                 partition_ids: frozenset[str], buckets: int) -> list[tuple[int, Piece]]:
    """One shard's records of the kept partitions, by bucket."""
    read = read_shard(mdt, shard, columns, types)
    return [(bucket, ("stats", pieces)) for bucket, pieces in stats_buckets(read, buckets, partition_ids).items()]


def listing_pieces(files: pa.Table, buckets: int) -> list[tuple[int, Piece]]:
    """Listing rows (partition, file name, size) by bucket."""
    return [(bucket, ("files", rows)) for bucket, rows in listing_buckets(files, buckets, PARTITION, FILE_NAME).items()]


def bucket_verdict(pieces: Iterable[Piece], predicate: Any, columns: list[str], types: dict[str, pa.DataType]) -> Candidates:
    """One bucket's candidates from its listing rows and statistics."""
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


def merged(found: list[Candidates], columns: list[str], note: str) -> Candidates:
    """The buckets' candidates as one answer."""
    indexed = {c for part in found for c in part.indexed}
    group_files = [part.group_files for part in found if part.group_files is not None and part.group_files.num_rows]
    return Candidates(frozenset().union(*(part.files for part in found)), sum(part.evaluated for part in found),
                      tuple(c for c in columns if c in indexed), note,
                      pa.concat_tables(group_files) if group_files else empty_table(FILE_TABLE_SCHEMA))


def stats_types(mdt: MetadataTable, columns: list[str]) -> dict[str, pa.DataType]:
    known = mdt.column_types()
    return {c: known[c] for c in columns if c in known}


def local_candidates_runner(buckets: int = LOCAL_BUCKETS) -> CandidatesRunner:
    """The pipeline in this process: shard after shard (the reader inflates
    a shard's blocks on its threads), then bucket after bucket."""

    def run(ctx: PlanContext, partitions: list[str]) -> Candidates:
        mdt = ctx.mdt
        assert mdt is not None
        columns = list(ctx.data_columns)
        types = stats_types(mdt, columns)
        partition_ids = frozenset(keys.partition_index_id(p) for p in partitions)
        shards = stats_shards(mdt, MdtPartition.COLUMN_STATS.value)
        by_bucket: dict[int, list[Piece]] = {}
        for shard in shards:
            for bucket, piece in shard_pieces(mdt, shard, columns, types, partition_ids, buckets):
                by_bucket.setdefault(bucket, []).append(piece)
        for bucket, piece in listing_pieces(ctx.lister.file_table(partitions), buckets):
            by_bucket.setdefault(bucket, []).append(piece)
        found = [bucket_verdict(by_bucket.pop(bucket), ctx.predicate, columns, types) for bucket in sorted(by_bucket)]
        return merged(found, columns, f"read in {len(shards)} column_stats shard(s) "
                                      f"({sum(s.size for s in shards) / 2**20:.1f} MiB), evaluated in {len(found)} bucket(s)")

    return run


__all__ = ["LOCAL_BUCKETS", "Piece", "bucket_verdict", "listing_pieces", "local_candidates_runner", "merged", "shard_pieces",
           "stats_types"]
