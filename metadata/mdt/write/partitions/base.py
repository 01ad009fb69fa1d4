"""A partition writer answers, with records, two questions about one
metadata partition: what it holds for the table's file slices (a build),
and what one data instant changes in it (a sync). It declares what it
needs so that one read serves every writer; it never touches the timeline
or files (the transaction and `FileGroupFiles` do)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from metadata.mdt.file_groups import MetadataPartition
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.routed_cells import RoutedCell, routed
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs

Record = dict[str, Any] | bytes  # bytes: the value already Avro-encoded with the transaction's schema
Records = dict[str, Record]  # metadata key -> record (a large sync holds its statistics encoded: a tenth of a dict's size)


class PartitionWriter(ABC):
    needs: ClassVar[frozenset[Need]] = frozenset()
    indexes_columns: ClassVar[bool] = False  # its records cover the indexed columns (recorded with each build)

    def __init__(self, partition: MetadataPartition, ctx: WriteContext) -> None:
        self.partition = partition
        self.ctx = ctx

    def initial_file_groups(self, snapshot: BuildSnapshot) -> int:
        """File groups of a partition built for the first time."""
        return self.partition.default_file_groups

    def build_cells(self, snapshot: BuildSnapshot, ts: str, groups: int) -> Iterator[RoutedCell]:
        """The partition's cells for the snapshot, routed to `groups` file groups."""
        schema_json = self.ctx.schema_json
        return routed(self.partition, groups, ((key, encode_record(record, schema_json))
                                               for key, record in self.build_records(snapshot, ts)))

    @abstractmethod
    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, record) of the partition written at metadata instant `ts`, produced a batch at a time."""

    @abstractmethod
    def sync_records(self, inputs: SyncInputs) -> Records:
        """The records one data instant changes."""
