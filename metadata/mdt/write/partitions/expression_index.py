"""An `expr_index_<name>` partition: f(column) of every file, with a
roll-up per data partition, or each file's bloom filter of f(column)
(Hudi 1.x, table version 8+)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import pyarrow as pa

from metadata.mdt.expression_index import (
    ExpressionIndexPartition,
    ExpressionIndexType,
    IndexExpressions,
    bloom_records,
    expression_ranges,
    file_records,
    partition_records,
    partition_stat_key,
)
from metadata.mdt.file_stats import ColumnRange, blocks_counting, leaf_type, merge_ranges
from metadata.mdt.record_builders import removed_bloom_filter_records
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.rollup import PartitionRollUp
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs
from metadata.mdt.write.table_inputs import completed_instants
from metadata.storage.paths import join


def maintained_result_type(index: ExpressionIndexPartition, schema: pa.Schema, expressions: IndexExpressions | None) -> pa.DataType | None:
    """f's result type, when the index is maintained here: a function
    evaluated here, and for bloom filters a result whose text is Java's
    (strings, integers)."""
    source = leaf_type(schema, index.column)
    if expressions is None or source is None:
        return None
    dtype = expressions.result_type(index, source)
    if dtype is not None and index.index_type is ExpressionIndexType.BLOOM_FILTERS and not (
            pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_integer(dtype)):
        return None
    return dtype


class ExpressionIndexWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.STORED_FILES})
    partition: ExpressionIndexPartition

    @property
    def expressions(self) -> IndexExpressions:
        assert self.ctx.index_expressions is not None, "expression indexes are maintained only with an evaluator"
        return self.ctx.index_expressions

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        index, data = self.partition, snapshot.data
        counts = blocks_counting(None, completed_instants(data))
        if index.index_type is ExpressionIndexType.BLOOM_FILTERS:  # stamped with the building instant, as the bloom_filters partition
            yield from bloom_records(data.storage, list(snapshot.file_names()), index,
                                     self.expressions, counts, snapshot.schema, ts)
            return
        latest = snapshot.latest_slice_files()
        rollups: dict[str, ColumnRange] = {}
        for partition, names in snapshot.files.items():
            self.ctx.progress(f"evaluating {index.function}({index.column}) over {len(names)} files of {partition or 'the table'}")
            found = expression_ranges(data.storage, [join(partition, n) for n in names], index, self.expressions, counts, snapshot.schema)
            yield from file_records(index, partition, found, self.ctx.version)
            for r in found:
                if latest.get(r.file_name) == partition:
                    rollups[partition] = merge_ranges(rollups.get(partition), replace(r, file_name=partition))
        yield from partition_records(index, rollups, self.ctx.version)

    def sync_records(self, inputs: SyncInputs) -> Records:
        """f(column) of the files the instant wrote, tombstones for those it
        removed, and the touched partitions' partition-level records again."""
        index, version, ts, change = self.partition, self.ctx.version, inputs.ts, inputs.change
        dtype = maintained_result_type(index, inputs.schema, self.expressions)
        assert dtype is not None
        counts = blocks_counting(ts if version < 8 else None, completed_instants(self.ctx.data))
        stored = inputs.stored_files()
        if index.index_type is ExpressionIndexType.BLOOM_FILTERS:
            blooms: Records = dict(bloom_records(self.ctx.storage, [(p, n) for p, names in stored.items() for n in names], index,
                                                 self.expressions, counts, inputs.schema, ts))
            blooms.update(removed_bloom_filter_records([(p, n) for p, names in change.deleted.items() for n in sorted(names)], ts))
            return blooms

        def ranges_of(paths: Sequence[str]) -> list[ColumnRange]:
            return expression_ranges(self.ctx.storage, paths, index, self.expressions, counts, inputs.schema)

        out: Records = {}
        new_ranges: dict[str, list[ColumnRange]] = {}
        for partition, names in stored.items():
            found = ranges_of([join(partition, n) for n in names])
            out.update(file_records(index, partition, found, version))
            new_ranges.update({r.file_name: [r] for r in found})
        for partition, deleted in change.deleted.items():
            gone = [ColumnRange(name, index.column, dtype, None, None, 0, 0) for name in sorted(deleted)]
            out.update(file_records(index, partition, gone, version, deleted=True))
        rollup = PartitionRollUp(self.ctx, [index.column], pa.schema([(index.column, dtype)]), source=index.value,
                                 ranges_of=ranges_of, key_of=partition_stat_key)
        out.update(rollup.records(ts, change.touched_partitions, new_ranges, inputs.as_of))
        return out
