"""A `secondary_index_<name>` partition: (value, record key) pairs of one
column, read through the record index (Hudi 1.x, table version 8+)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from metadata.mdt.file_groups import SecondaryIndexPartition
from metadata.mdt.secondary_index import entries, records_of
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs
from metadata.mdt.write.table_inputs import storage_table


class SecondaryIndexWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.CHANGED_SLICES})
    partition: SecondaryIndexPartition

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        column = self.partition.column
        slices = snapshot.latest_slices()
        self.ctx.progress(f"reading {column} of {len(slices)} file slices")
        table = storage_table(snapshot.data)
        yield from records_of((v, k, False) for v, k in sorted(entries(table, slices, column), key=str))

    def sync_records(self, inputs: SyncInputs) -> Records:
        """The pairs of the file groups the instant changed, before and after
        it: those gone are written deleted, the new ones live. Where a state
        cannot be read back, and after a rollback, every pair of the touched
        partitions' latest slices is written live: a stale pair only keeps a
        file group, a missing one would lose rows."""
        column = self.partition.column
        changes = inputs.slice_changes()
        was, now = entries(changes.table, changes.gone, column), entries(changes.table, changes.came, column)
        out: Records = dict(records_of([(v, k, True) for v, k in sorted(was - now, key=str)]
                                       + [(v, k, False) for v, k in sorted(now - was, key=str)]))
        if changes.current:
            out.update(records_of((v, k, False) for v, k in entries(changes.table, changes.current, column)))
        return out
