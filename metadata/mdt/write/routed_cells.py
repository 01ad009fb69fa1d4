"""Metadata records as HFile cells routed to their file groups, made in bulk.

A build's column_stats cells are made where a file's ranges were read
(`ColumnStatsCells`, a `StatsEngine.map_ranges` function: on Spark, the
executors), so the driver only files finished cells away. Keys are hashed
to file groups as Hudi's writer does, many at once (`file_group_indexes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from metadata.mdt.file_groups import MetadataPartition, SuffixHash, file_group_indexes, joined_key_index, suffix_hash
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.keys import column_index_id, file_index_id, partition_index_id
from metadata.mdt.record_builders import range_record
from metadata.mdt.record_encoding import encode_record

RoutedCell = tuple[int, bytes, bytes]  # (file group index, key, Avro value)
CHUNK = 20_000  # keys hashed together


def routed(partition: MetadataPartition, groups: int, cells: Iterable[tuple[str, bytes]]) -> Iterator[RoutedCell]:
    """(key, value) cells with the file group Hudi hashes each key to."""
    it = iter(cells)
    while chunk := list(islice(it, CHUNK)):
        indexes = file_group_indexes([partition.routing_key(key) for key, _ in chunk], groups)
        for index, (key, value) in zip(indexes, chunk):
            yield index, key.encode(), value


@dataclass(frozen=True)
class ColumnStatsCells:
    """One data file's column_stats records, encoded and routed; its ranges
    go back too (partition_stats rolls them up)."""

    version: int
    groups: int
    schema_json: str

    def __call__(self, relative: str, ranges: list[ColumnRange]) -> tuple[list[ColumnRange], list[RoutedCell]]:
        partition = relative.rsplit("/", 1)[0] if "/" in relative else ""
        partition_id = partition_index_id(partition)
        file_ids: dict[str, tuple[str, SuffixHash]] = {}
        cells = []
        for r in ranges:
            found = file_ids.get(r.file_name)
            if found is None:
                file_id = file_index_id(r.file_name)
                found = file_ids[r.file_name] = (file_id, suffix_hash(file_id))
            file_id, hashed = found
            prefix = column_index_id(r.column) + partition_id
            key = prefix + file_id
            index = joined_key_index(prefix, hashed, self.groups)  # column_stats routes by the whole key
            cells.append((index, key.encode(), encode_record(range_record(key, r, self.version), self.schema_json)))
        return ranges, cells


def ranges_only(relative: str, ranges: list[ColumnRange]) -> tuple[list[ColumnRange], list[RoutedCell]]:
    """For a pass that rolls ranges up without writing column_stats."""
    return ranges, []
