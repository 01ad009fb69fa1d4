"""The `files` partition: each data partition's files, and the list of partitions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.reader import MetadataTableReader
from metadata.mdt.record_builders import files_record
from metadata.mdt.records import ALL_PARTITIONS_KEY
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import SyncInputs
from metadata.table.partition_path import from_metadata_partition, to_metadata_partition


class FilesWriter(PartitionWriter):
    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for p, names in snapshot.files.items():
            key = to_metadata_partition(p)
            yield key, files_record(key, {n: (size, False) for n, size in names.items()})
        yield ALL_PARTITIONS_KEY, files_record(ALL_PARTITIONS_KEY, {to_metadata_partition(p): (0, False) for p in snapshot.files.counts},
                                               all_partitions=True)

    def sync_records(self, inputs: SyncInputs) -> Records:
        """Files added and deleted per partition; new and dropped partitions in the list."""
        change = inputs.change
        out: Records = {}
        current = set(self._listed_partitions())
        for partition in sorted(set(change.added) | set(change.deleted)):
            entries = {name: (size, False) for name, size in change.added.get(partition, {}).items()}
            entries.update(dict.fromkeys(sorted(change.deleted.get(partition, ())), (0, True)))  # sorted: bytes follow the input alone
            key = to_metadata_partition(partition)
            out[key] = files_record(key, entries)
        listed = {to_metadata_partition(p): (0, False) for p in change.added if p not in current}
        listed.update({to_metadata_partition(p): (0, True) for p in sorted(change.dropped_partitions)})
        if listed:
            out[ALL_PARTITIONS_KEY] = files_record(ALL_PARTITIONS_KEY, listed, all_partitions=True)
        return out

    def _listed_partitions(self) -> list[str]:
        reader = MetadataTableReader(self.ctx.data)
        try:
            record = reader.read(MdtPartition.FILES.value, KeyQuery(keys=[ALL_PARTITIONS_KEY])).get(ALL_PARTITIONS_KEY)
        finally:
            reader.close()
        return [from_metadata_partition(p) for p, e in ((record.files or {}) if record else {}).items() if not e.is_deleted]
