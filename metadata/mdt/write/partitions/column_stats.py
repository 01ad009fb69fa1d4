"""The `column_stats` partition: each data file's range of every indexed column (RFC-27)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange, leaf_type
from metadata.mdt.keys import column_stats_key
from metadata.mdt.record_builders import range_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.routed_cells import ColumnStatsCells, RoutedCell
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs


class ColumnStatsWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.STORED_FILES, Need.NEW_RANGES})
    indexes_columns: ClassVar[bool] = True

    def build_cells(self, snapshot: BuildSnapshot, ts: str, groups: int) -> Iterator[RoutedCell]:
        """Made where the engine read the files (on Spark: the executors)."""
        return snapshot.column_stats_cells(ColumnStatsCells(self.ctx.version, groups, self.ctx.schema_json))

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        raise NotImplementedError("column_stats is built as cells (build_cells)")

    def sync_records(self, inputs: SyncInputs) -> Records:
        """The new files' ranges; deleted files' records of every indexed column as tombstones."""
        version, change, new_ranges, schema_json = self.ctx.version, inputs.change, inputs.new_ranges(), self.ctx.schema_json
        out: Records = {}
        for partition, added in change.added.items():
            for name in added:
                for r in new_ranges.get(name, []):
                    key = column_stats_key(r.column, partition, name)
                    out[key] = encode_record(range_record(key, r, version), schema_json)  # encoded: a commit may add 10,000s of files
        for partition, deleted in change.deleted.items():
            for name in deleted:
                for column in inputs.columns:
                    key = column_stats_key(column, partition, name)
                    dtype = leaf_type(inputs.schema, column) or pa.string()
                    out[key] = range_record(key, ColumnRange(name, column, dtype, None, None, 0, 0), version, deleted=True)
        return out
