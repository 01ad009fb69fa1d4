"""A stats partition (column_stats, partition_stats, an expression index)
cut into shards that separate tasks read: each file group's base HFile by
ranges of its data blocks, the keys its log files changed with the first
range. Together the shards hold every live record exactly once (a key a log
changed is left out of the base ranges, `RawCells.without`).

A shard's records come back per column as `FlatStats` tables (identity,
file, min, max, counts, deleted), cut into buckets by file group, so that
every record about one data file group lands in one bucket whatever shard
read it: the column_stats records of a group's files, and its listing rows
(`group_buckets`), meet there and are evaluated together.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt import keys
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.metadata_table import MetadataTable, fill_flat_stats
from metadata.mdt.stats_columns import FlatStats, of_partitions
from metadata.table.file_naming import file_id_of
from metadata.util import arrow_values

SHARD_BYTES = 64 << 20  # base-file blocks a shard reads (on disk)


@dataclass(frozen=True)
class StatsShard:
    mdt_partition: str
    file_id: str  # the metadata file group
    offsets: tuple[int, int]  # data blocks starting in [start, stop)
    with_changes: bool  # the keys the slice's logs changed belong to this shard
    size: int = 0  # bytes of those blocks on storage

    def describe(self) -> str:
        return f"{self.mdt_partition}/{self.file_id} blocks at [{self.offsets[0]}, {self.offsets[1]})"


def stats_shards(mdt: MetadataTable, mdt_partition: str, shard_bytes: int = SHARD_BYTES) -> list[StatsShard]:
    """The shards of a partition's latest slices: each base HFile's data
    blocks in runs of about `shard_bytes`; a slice without a base file is one shard."""
    shards = []
    for file_slice in mdt.reader.file_slices(mdt_partition):
        if not file_slice.base_file:
            shards.append(StatsShard(mdt_partition, file_slice.file_id, (0, 0), True, sum(file_slice.log_file_sizes)))
            continue
        index = mdt.reader._hfile(file_slice.base_file).data_index
        start, size = 0, 0
        first = True
        for n, entry in enumerate(index):
            size += entry.on_disk_size
            if size >= shard_bytes or n == len(index) - 1:
                stop = index[n + 1].offset if n + 1 < len(index) else 1 << 62
                logs = sum(file_slice.log_file_sizes) if first else 0
                shards.append(StatsShard(mdt_partition, file_slice.file_id, (start, stop), first, size + logs))
                start, size, first = stop, 0, False
        if first:  # an HFile without data blocks
            shards.append(StatsShard(mdt_partition, file_slice.file_id, (0, 1 << 62), True))
    return shards


def read_shard(mdt: MetadataTable, shard: StatsShard, columns: list[str], types: dict[str, pa.DataType] | None = None) -> dict[str, pa.Table]:
    """Column -> the shard's records of that column (`FlatStats.table_of`)."""
    file_slice = next((s for s in mdt.reader.file_slices(shard.mdt_partition) if s.file_id == shard.file_id), None)
    if file_slice is None:
        return {}
    base, changed = mdt.reader.slice_split(file_slice, KeyQuery(prefixes=[keys.column_index_id(c) for c in columns]))
    flat = FlatStats(types or mdt.column_types(), columns=columns)
    fill_flat_stats(flat, [base] if base is not None else [], changed if shard.with_changes else {}, shard.offsets)
    return {c: table for c in columns if (table := flat.table_of(c)) is not None}


def group_buckets(partition_ids: pa.Array, names: pa.Array, buckets: int) -> npt.NDArray[np.int64]:
    """The bucket of each (partition id, file name): a stable hash of the
    partition id and the name's file group id, the same in every process."""
    ids = partition_ids.to_pylist()
    return np.fromiter((zlib.crc32(f"{p}{file_id_of(n)}".encode()) % buckets for p, n in zip(ids, names.to_pylist())),
                       dtype=np.int64, count=len(ids))


def stats_buckets(tables: dict[str, pa.Table], buckets: int, partition_ids: frozenset[str] | None = None) -> dict[int, dict[str, pa.Table]]:
    """A shard's per-column records cut by bucket (the identity's first
    characters are the partition id; the file name gives the group); with
    `partition_ids`, only the records of those partitions."""
    out: dict[int, dict[str, pa.Table]] = {}
    wanted = None if partition_ids is None else arrow_values.array(sorted(partition_ids), pa.string())
    for column, table in tables.items():
        if wanted is not None:
            table = of_partitions(table, wanted)
        ids = pc.utf8_slice_codeunits(table.column("identity"), 0, keys.ID_LENGTH)
        at = group_buckets(ids.combine_chunks(), pc.fill_null(table.column("file"), arrow_values.EMPTY_STRING).combine_chunks(), buckets)
        for bucket in np.unique(at).tolist():
            out.setdefault(bucket, {})[column] = table.filter(arrow_values.from_numpy(at == bucket))
    return out


def listing_buckets(files: pa.Table, buckets: int, partition_column: str, name_column: str) -> dict[int, pa.Table]:
    """Listing rows (partition, file name, size) cut by bucket."""
    partitions = files.column(partition_column).to_pylist()
    id_of = {p: keys.partition_index_id(p) for p in set(partitions)}
    ids = arrow_values.array([id_of[p] for p in partitions], pa.string())
    at = group_buckets(ids, files.column(name_column).combine_chunks(), buckets)
    return {bucket: files.filter(arrow_values.from_numpy(at == bucket)) for bucket in np.unique(at).tolist()}
