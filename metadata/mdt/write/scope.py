"""What a write covers: the partitions this writer maintains (and what it
refuses to leave behind), the columns they index, the data instants the
metadata table already holds, and the checks a build passes before
anything is written."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from metadata.errors import IndexWriteError
from metadata.mdt.expression_index import (
    ExpressionIndexPartition,
    ExpressionIndexType,
    defined_expression_indexes,
    with_expression_definition,
)
from metadata.mdt.file_groups import PARTITION_ORDER, MdtPartition, MetadataPartition, SecondaryIndexPartition
from metadata.mdt.file_stats import columns_to_index, leaf_type
from metadata.mdt.indexes import INDEX_DEFS_KEY, defined_secondary_indexes, index_definitions, is_partitioned_record_index
from metadata.mdt.secondary_index import INDEX_DEFS_PATH, check_indexable, with_definition
from metadata.mdt.synced_instants import build_coverage
from metadata.mdt.write.change import TableChange
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.partitions.expression_index import maintained_result_type
from metadata.mdt.write.table_inputs import table_schema
from metadata.table.stored_table import TableParts
from metadata.timeline.instant import Action, Instant

INDEXED_COLUMNS = "hudi-bridge.columns"  # extra metadata of a build: the columns column_stats and partition_stats index


class IndexScope:
    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx

    def maintained(self) -> list[MetadataPartition]:
        """The listed partitions this writer keeps: its own, secondary indexes
        defined on one column whose index text it writes, and expression
        indexes whose function it evaluates."""
        data, expressions = self.ctx.data, self.ctx.index_expressions
        listed = set(data.config.metadata_partitions)
        definitions = index_definitions(self.ctx.storage, data.config.raw)
        # A partitioned record index (Hudi 1.1) has file groups per data partition: not written here.
        own: list[MetadataPartition] = [p for p in PARTITION_ORDER if p.value in listed
                                        and not (p is MdtPartition.RECORD_INDEX and is_partitioned_record_index(definitions))]
        with_expressions = expressions is not None and any(p.startswith("expr_index_") for p in listed)
        whole = table_schema(data) if with_expressions or any(p.startswith("secondary_index_") for p in listed) else None
        schema = {f.name: f.type for f in whole} if whole is not None else {}
        for index in defined_secondary_indexes(definitions):
            if index.value in listed and index.column in schema:
                try:
                    check_indexable(index.column, schema[index.column])
                except IndexWriteError:
                    continue
                own.append(index)
        if with_expressions and whole is not None:
            own += [e for e in defined_expression_indexes(definitions)
                    if e.value in listed and maintained_result_type(e, whole, expressions) is not None]
        return own

    def synced(self, mdt: TableParts) -> Callable[[Instant], bool]:
        """Whether a completed data instant is already in the metadata table:
        it has its own delta commit, or the latest build's snapshot held it."""
        completed = {i.requested_time for i in mdt.timeline.completed()}
        coverage = build_coverage(mdt)
        return lambda instant: instant.requested_time in completed or coverage.covers(instant.requested_time)

    def refuse_to_leave_behind(self, mdt: TableParts, maintained: list[MetadataPartition]) -> None:
        """Partitions this writer does not maintain (Hudi's expression indexes,
        secondary indexes on columns whose index text it does not write, a
        partitioned record index) would fall behind the instants a sync adds,
        and a planner trusting the metadata table's instants would then miss
        rows they do not index: refuse, before anything is written, and say how to go on."""
        data = self.ctx.data
        unmaintained = sorted(set(data.config.metadata_partitions) - {p.value for p in maintained})
        if not unmaintained:
            return
        is_synced = self.synced(mdt)
        behind = [i.requested_time for i in data.timeline.completed()
                  if not is_synced(i) and (change := TableChange.of(data, i)) is not None and change.changes_files]
        if behind:
            uri, names = self.ctx.storage.uri, ",".join(unmaintained)
            raise IndexWriteError(
                f"{uri}: the metadata table holds {', '.join(unmaintained)}, which hudi-bridge does not maintain; "
                f"syncing {len(behind)} instant(s) ({behind[0]} ..) would leave them behind and plans would miss rows they do not "
                f"index. Sync with Apache Hudi, or set them aside first: hudi-bridge index drop {uri} --partitions {names}")

    @staticmethod
    def indexed_columns(mdt: TableParts, schema: pa.Schema) -> list[str]:
        """The columns the latest build (or rebuild) indexed; by default every indexable one."""
        for instant in reversed(mdt.timeline.completed()):
            if instant.action in (Action.DELTA_COMMIT, Action.COMMIT):  # a rebuild's compaction may set them
                extra = mdt.timeline.commit_metadata(instant).extra_metadata
                if INDEXED_COLUMNS in extra:
                    return [c for c in extra[INDEXED_COLUMNS].split(",") if c]
        return columns_to_index(schema)

    def check_expression(self, asked: list[ExpressionIndexPartition]) -> None:
        """Before anything is written: table version 8+ (as Hudi), a column of
        the schema, a function evaluated here on its type."""
        if not asked:
            return
        if self.ctx.version < 8:
            raise IndexWriteError(f"{self.ctx.storage.uri}: expression indexes are Hudi 1.x (table version 8+); "
                                  f"this table is version {self.ctx.version}")
        schema = table_schema(self.ctx.data)
        for index in asked:
            if leaf_type(schema, index.column) is None:
                raise IndexWriteError(f"expression index {index.value}: no column {index.column} in the table's schema")
            if maintained_result_type(index, schema, self.ctx.index_expressions) is None:
                raise IndexWriteError(f"expression index {index.value}: {index.function} is not evaluated here on a "
                                      f"{leaf_type(schema, index.column)} column" + (
                                          " (bloom filters hold strings and integers)" if index.index_type is ExpressionIndexType.BLOOM_FILTERS else ""))

    def check_secondary(self, asked: list[SecondaryIndexPartition], partitions: list[MetadataPartition]) -> None:
        """Before anything is written: a secondary index needs table version 8+,
        a column whose index text is known, and the record index it is read through."""
        if not asked:
            return
        data = self.ctx.data
        if self.ctx.version < 8:
            raise IndexWriteError(f"{self.ctx.storage.uri}: secondary indexes are Hudi 1.x (table version 8+); "
                                  f"this table is version {self.ctx.version}")
        schema = {f.name: f.type for f in table_schema(data)}
        for index in asked:
            check_indexable(index.column, schema.get(index.column))
        if MdtPartition.RECORD_INDEX not in partitions and MdtPartition.RECORD_INDEX.value not in data.config.metadata_partitions:
            raise IndexWriteError(f"{self.ctx.storage.uri}: a secondary index is read through the record index: build record_index too")

    def define(self, indexes: list[SecondaryIndexPartition | ExpressionIndexPartition]) -> None:
        """Index definitions (`.hoodie/.index_defs/index.json`) for new secondary and expression indexes, as Hudi 1.1 writes them."""
        if not indexes:
            return
        storage = self.ctx.storage
        definitions = index_definitions(storage, self.ctx.data.config.raw)
        for index in indexes:
            written = with_expression_definition(definitions, index) if isinstance(index, ExpressionIndexPartition) \
                else with_definition(definitions, index)
            storage.write_bytes(INDEX_DEFS_PATH, written)
            definitions = index_definitions(storage, {INDEX_DEFS_KEY: INDEX_DEFS_PATH})
        if self.ctx.data.config.raw.get(INDEX_DEFS_KEY) != INDEX_DEFS_PATH:
            self.ctx.tx.set_config({INDEX_DEFS_KEY: INDEX_DEFS_PATH})
