"""Metadata-table partitions and file groups, as Hudi lays them out.

Each MDT partition has a fixed number of file groups `<prefix><4-digit
index>-0`; a record goes to the group its key hashes to (Hudi's
`mapRecordKeyToFileGroupIndex`: Java `String.hashCode` of the key, then
`abs(abs(h) % count)`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from metadata.mdt.expression_index import ExpressionIndexPartition
from metadata.util.text_enum import TextEnum


class MdtPartition(TextEnum):
    FILES = "files"
    COLUMN_STATS = "column_stats"
    PARTITION_STATS = "partition_stats"
    RECORD_INDEX = "record_index"
    BLOOM_FILTERS = "bloom_filters"

    @property
    def file_group_prefix(self) -> str:
        return _PREFIXES[self]

    def routing_key(self, key: str) -> str:
        """What Hudi hashes to pick a record's file group: the whole key."""
        return key

    @property
    def default_file_groups(self) -> int:
        # hoodie.metadata.index.column.stats.file.group.count defaults to 2,
        # partition stats to 1, the record index's minimum to 10; files has one.
        return _DEFAULT_GROUPS.get(self, 1)


_PREFIXES = {
    MdtPartition.FILES: "files-",
    MdtPartition.COLUMN_STATS: "col-stats-",
    MdtPartition.PARTITION_STATS: "partition-stats-",
    MdtPartition.RECORD_INDEX: "record-index-",
    MdtPartition.BLOOM_FILTERS: "bloom-filters-",
}
# hoodie.metadata.index.bloom.filter.file.group.count defaults to 4.
_DEFAULT_GROUPS = {MdtPartition.COLUMN_STATS: 2, MdtPartition.RECORD_INDEX: 10, MdtPartition.BLOOM_FILTERS: 4}

# Order in which a build creates them: `files` first, as Hudi initialises it.
PARTITION_ORDER = (MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS, MdtPartition.RECORD_INDEX,
                   MdtPartition.BLOOM_FILTERS)
# What a build creates unless told otherwise (the record index and bloom filters are opt-in, as in Hudi).
BUILD_ORDER = PARTITION_ORDER[:3]

# Hudi's record-index sizing (hoodie.metadata.record.index.*): 48 bytes a
# record, room to grow 2x, file groups of at most 1 GiB, between 10 and 10,000.
RECORD_INDEX_RECORD_BYTES = 48
RECORD_INDEX_GROWTH = 2.0
RECORD_INDEX_GROUP_BYTES = 1 << 30
RECORD_INDEX_MIN_GROUPS = 10
RECORD_INDEX_MAX_GROUPS = 10_000


def record_index_file_groups(records: int) -> int:
    """File groups a new record index of `records` keys gets (Hudi's estimateFileGroupCount)."""
    wanted = math.ceil(records * RECORD_INDEX_RECORD_BYTES * RECORD_INDEX_GROWTH / RECORD_INDEX_GROUP_BYTES)
    return min(RECORD_INDEX_MAX_GROUPS, max(RECORD_INDEX_MIN_GROUPS, wanted))


SECONDARY_INDEX_PREFIX = "secondary_index_"


@dataclass(frozen=True)
class SecondaryIndexPartition:
    """A `secondary_index_<name>` partition on one column (identity function).
    Hudi routes its records by their `<escaped value>$` prefix, so that every
    record key of one value lives in one file group."""

    value: str  # the partition's name
    column: str

    @property
    def file_group_prefix(self) -> str:
        return self.value.replace("_", "-") + "-"

    @property
    def default_file_groups(self) -> int:
        return RECORD_INDEX_MIN_GROUPS  # sized as the record index is (10 for small tables, as Hudi's)

    def routing_key(self, key: str) -> str:
        return key[: secondary_key_separator(key) + 1]


def secondary_key_separator(key: str) -> int:
    """The position of the `$` between the escaped value and the record key."""
    escaped = False
    for i, c in enumerate(key):
        if c == "\\" and not escaped:
            escaped = True
        elif c == "$" and not escaped:
            return i
        else:
            escaped = False
    raise ValueError(f"secondary index key {key!r} has no '$'")


MetadataPartition = MdtPartition | SecondaryIndexPartition | ExpressionIndexPartition  # what the writer keeps


def file_group_id(partition: MetadataPartition, index: int) -> str:
    return f"{partition.file_group_prefix}{index:04d}-0"


_MASK = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, 32-bit wrap."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return _signed(h)


def file_group_indexes(keys: list[str], count: int) -> list[int]:
    """`file_group_index` of many keys: ASCII keys of one length hashed
    together with numpy (uint32 arithmetic wraps as Java's int does), others one by one."""
    out = [0] * len(keys)
    by_length: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if key.isascii():
            by_length.setdefault(len(key), []).append(i)
        else:
            out[i] = file_group_index(key, count)
    for length, positions in by_length.items():
        codes = np.frombuffer("".join(keys[i] for i in positions).encode("ascii"), dtype=np.uint8)
        codes = codes.reshape(len(positions), length).astype(np.uint32) if length else np.zeros((len(positions), 0), np.uint32)
        h = np.zeros(len(positions), dtype=np.uint32)
        for column in range(length):
            h = h * np.uint32(31) + codes[:, column]
        signed = h.astype(np.int64)
        signed[signed >= 1 << 31] -= 1 << 32
        index = np.where(signed == -(1 << 31), (1 << 31) % count, np.abs(signed) % count)  # as file_group_index
        for i, value in zip(positions, index.tolist()):
            out[i] = value
    return out


def file_group_index(key: str, count: int) -> int:
    return _index_of_hash(java_string_hash(key), count)


def _index_of_hash(h: int, count: int) -> int:
    """Hudi's file group of a key's Java hash: Math.abs(Math.abs(h) % count).
    Java's Math.abs(Integer.MIN_VALUE) stays negative, its remainder is
    -(2^31 mod n) (Java truncates), and the outer abs gives 2^31 mod n."""
    return abs(h) % count if h != -(1 << 31) else (1 << 31) % count


def _signed(h: int) -> int:
    """An unsigned 32-bit hash as Java's int."""
    return h - (1 << 32) if h >= 1 << 31 else h


@lru_cache(maxsize=65536)
def _unsigned_hash(text: str) -> int:
    """java_string_hash as an unsigned 32-bit value (of a prefix many keys share: cached)."""
    return java_string_hash(text) & _MASK


SuffixHash = tuple[int, int]  # (Java hash of an ASCII suffix, 31^len(suffix)), both mod 2^32


def joined_key_index(prefix: str, suffix: str | SuffixHash, count: int) -> int:
    """`file_group_index(prefix + suffix, count)` for an ASCII suffix, from the
    prefix's cached hash: Java's hash of a concatenation is the prefix's times
    31^len(suffix) plus the suffix's, so many keys sharing a prefix (column
    and partition ids) hash their own part only, and a suffix many keys share
    (a file's id, under each column) is hashed once by `suffix_hash`."""
    h, power = suffix_hash(suffix) if isinstance(suffix, str) else suffix
    return _index_of_hash(_signed((_unsigned_hash(prefix) * power + h) & _MASK), count)


def suffix_hash(suffix: str) -> SuffixHash:
    h = 0
    for code in suffix.encode("ascii"):
        h = (h * 31 + code) & _MASK
    return h, pow(31, len(suffix), 1 << 32)
