"""The `partition_stats` partition: each data partition's range of every
indexed column over its latest file slices."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from metadata.mdt.keys import partition_stats_key
from metadata.mdt.record_builders import range_record
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.rollup import PartitionRollUp
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs


class PartitionStatsWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.STORED_FILES, Need.NEW_RANGES})
    indexes_columns: ClassVar[bool] = True

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The roll-ups of the snapshot's statistics pass (shared with column_stats when both are built)."""
        for p, per_column in sorted(snapshot.rollups().items()):
            for column, r in per_column.items():
                key = partition_stats_key(column, p)
                yield key, range_record(key, r, self.ctx.version, partition_stats=True)

    def sync_records(self, inputs: SyncInputs) -> Records:
        """The touched partitions rolled up again from the held and the new file ranges."""
        rollup = PartitionRollUp(self.ctx, inputs.columns, inputs.schema)
        out: Records = {}
        out.update(rollup.records(inputs.ts, inputs.change.touched_partitions, inputs.new_ranges(), inputs.as_of))
        return out
