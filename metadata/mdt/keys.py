"""RFC-27 hashed keys of the column_stats and partition_stats partitions.

ColumnIndexID and PartitionIndexID: XXHash64 of the UTF-8 name with seed
0xdabadaba sign-extended to 64 bits, 8 bytes big-endian, base64.
FileIndexID: MD5 of the bare file name, base64. Keys concatenate them, so
that a prefix on the column (and partition) finds exactly the records a
predicate needs.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

import xxhash

from metadata.table.partition_path import to_metadata_partition

HASH_SEED = 0xFFFFFFFFDABADABA
ID_LENGTH = 12  # base64 of an 8-byte hash: ColumnIndexID and PartitionIndexID


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@lru_cache(maxsize=4096)  # a build asks for the same few columns millions of times
def column_index_id(column: str) -> str:
    return _b64(xxhash.xxh64(column.encode("utf-8"), seed=HASH_SEED).digest())


@lru_cache(maxsize=65536)
def partition_index_id(partition: str) -> str:
    """Of a data-table partition path ("" is encoded as the MDT's ".")."""
    return _b64(xxhash.xxh64(to_metadata_partition(partition).encode("utf-8"), seed=HASH_SEED).digest())


def file_index_id(file_name: str) -> str:
    return _b64(hashlib.md5(file_name.encode("utf-8")).digest())


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    return column_index_id(column) + partition_index_id(partition) + file_index_id(file_name)


def bloom_filter_key(partition: str, file_name: str) -> str:
    """Key of a file's bloom filter record (the bloom_filters partition, and expression indexes of bloom filters)."""
    return partition_index_id(partition) + file_index_id(file_name)


def partition_stats_key(column: str, partition: str) -> str:
    return column_index_id(column) + partition_index_id(partition)


def partition_id_of(key: str) -> str:
    """The PartitionIndexID inside a column_stats or partition_stats key."""
    return key[ID_LENGTH : 2 * ID_LENGTH]
