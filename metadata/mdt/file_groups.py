"""Metadata-table partitions and file groups, as Hudi lays them out.

Each MDT partition has a fixed number of file groups `<prefix><4-digit
index>-0`; a record goes to the group its key hashes to (Hudi's
`mapRecordKeyToFileGroupIndex`: Java `String.hashCode` of the key, then
`abs(abs(h) % count)`).
"""

from __future__ import annotations

from metadata.text_enum import TextEnum


class MdtPartition(TextEnum):
    FILES = "files"
    COLUMN_STATS = "column_stats"
    PARTITION_STATS = "partition_stats"

    @property
    def file_group_prefix(self) -> str:
        return _PREFIXES[self]

    @property
    def default_file_groups(self) -> int:
        # hoodie.metadata.index.column.stats.file.group.count defaults to 2,
        # partition stats to 1; files always has one.
        return 2 if self is MdtPartition.COLUMN_STATS else 1


_PREFIXES = {
    MdtPartition.FILES: "files-",
    MdtPartition.COLUMN_STATS: "col-stats-",
    MdtPartition.PARTITION_STATS: "partition-stats-",
}

# Order in which a build creates them: `files` first, as Hudi initialises it.
BUILD_ORDER = (MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS)


def file_group_id(partition: MdtPartition, index: int) -> str:
    return f"{partition.file_group_prefix}{index:04d}-0"


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, 32-bit wrap."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def file_group_index(key: str, count: int) -> int:
    h = java_string_hash(key)
    # Java's Math.abs(Integer.MIN_VALUE) stays negative; abs(h % n) then fixes it.
    return abs(abs(h) % count) if h != -(1 << 31) else abs(h % count)
