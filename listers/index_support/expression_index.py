"""File pruning on Hudi's expression indexes (`expr_index_<name>` of type column_stats).

Each index holds the statistics of f(column) per file. The predicate is
rewritten into one the index answers (`expressions.index_expressions`:
leaves on f(column) as they are, leaves on the bare column through f), and
evaluated as column_stats are, by file name before slices are built. Every
usable index narrows in turn. A file the index has no record of is kept
(written after the index, or by a writer that did not maintain it).

An index of bloom filters holds, per data file (base or log), a filter of
the text of f(column) of its rows (Java's `toString`). It is used when the
implied predicate pins f(column) to values whose text is known exactly
(strings, integers): a slice goes only when each of its files has a filter
and none may hold any of them.

Not used: a function not evaluated here (regexp_*, split), or an index on
a column the predicate does not read. Index values are Spark's
in the writer's session time zone; plans read them in the predicate's zone
(UTC unless said), as Hudi does.
"""

from __future__ import annotations

import pyarrow as pa

from expressions import BoundPredicate
from expressions.functions import SessionZone
from expressions.index_expressions import implied_on_index, index_ref
from expressions.visitors import references
from listers.index_support.base import FileIndexSupport, FileListing, Groups, PlanContext
from listers.index_support.column_stats import ColumnStats
from listers.index_support.keys import index_texts
from metadata import FileSlice, MetadataTableUnavailable
from metadata.formats.stats_table import max_field, min_field, null_count_field
from metadata.mdt.bloom_filters import bloom_filters_of
from metadata.mdt.expression_index import ExpressionIndexPartition, ExpressionIndexType, defined_expression_indexes
from metadata.mdt.indexes import index_definitions


class _OneExpressionIndex(ColumnStats):
    """column_stats machinery over one expression index's virtual column."""

    def __init__(self, index: ExpressionIndexPartition, implied: BoundPredicate, dtype: pa.DataType, sql: str) -> None:
        super().__init__()
        self.index, self.implied, self.dtype, self.sql = index, implied, dtype, sql
        self.name = f"expression index {index.value}"

    def _stats(self, ctx: PlanContext, partitions: list[str]) -> pa.Table:
        assert ctx.mdt is not None
        stats = ctx.mdt.expression_index_stats(self.index.value, self.index.column, self.dtype, partitions)
        renames = {min_field(self.index.column): min_field(self.index.value), max_field(self.index.column): max_field(self.index.value),
                   null_count_field(self.index.column): null_count_field(self.index.value)}
        return stats.rename_columns([renames.get(n, n) for n in stats.column_names])

    def _predicate(self, ctx: PlanContext) -> BoundPredicate:
        return self.implied

    def _columns(self, ctx: PlanContext) -> list[str]:
        return [self.index.value]


class _BloomExpressionIndex(FileIndexSupport):
    """Bloom filters of f(column)'s text per file, tested with the values the predicate pins."""

    def __init__(self, index: ExpressionIndexPartition, texts: list[str], sql: str) -> None:
        self.index, self.texts, self.sql = index, texts, sql
        self.name = f"expression index {index.value}"

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        assert ctx.mdt is not None
        names = [[n for n in [s.base_file_name, *s.log_file_names] if n] for s in slices]
        try:
            found = bloom_filters_of(ctx.mdt, [(s.partition, n) for s, files in zip(slices, names) for n in files], self.index.value)
        except MetadataTableUnavailable as exc:
            return ctx.unusable(self.name, exc, None)

        def may_hold(piece: FileSlice, files: list[str]) -> bool:
            filters = [found.get((piece.partition, n)) for n in files]
            return not files or any(f is None or any(f.might_contain(t) for t in self.texts) for f in filters)

        kept = [s for s, files in zip(slices, names) if may_hold(s, files)]
        return kept, f"{len(self.texts)} value(s) of {self.sql} tested against each file's filter"


class ExpressionIndexes(FileIndexSupport):
    name = "expression_index"

    def __init__(self) -> None:
        self.supports: list[_OneExpressionIndex | _BloomExpressionIndex] = []

    def usable(self, ctx: PlanContext) -> bool:
        if ctx.mdt is None or not ctx.data_columns:
            return False
        built = set(ctx.table.config.metadata_partitions)
        defined = [i for i in defined_expression_indexes(index_definitions(ctx.table.storage, ctx.table.config.raw)) if i.value in built]
        if not defined:
            return False
        zone = _session_zone(ctx.predicate)
        for index in defined:
            if index.column not in ctx.data_columns:
                continue
            support = self._support(ctx, index, zone)
            if support is not None:
                self.supports.append(support)
        return bool(self.supports)

    def _support(self, ctx: PlanContext, index: ExpressionIndexPartition,
                 zone: SessionZone) -> _OneExpressionIndex | _BloomExpressionIndex | None:
        ref, source = index_ref(index, zone), ctx.predicate.types.get(index.column)
        if ref is None or source is None:
            ctx.not_used.append(f"{index.value}: {index.function} is not evaluated here")
            return None
        implied = implied_on_index(ctx.predicate, ref, source, index.value)
        if implied is None:
            ctx.not_used.append(f"{index.value}: the predicate has no leaf on {ref} or on {index.column} that it answers")
            return None
        if index.index_type is ExpressionIndexType.COLUMN_STATS:
            return _OneExpressionIndex(index, implied, implied.types[index.value], str(ref))
        texts = index_texts(implied, index.value, days=False)  # Java's toString, where known exactly (strings, integers)
        if texts is None:
            ctx.not_used.append(f"{index.value}: bloom filters need {ref} pinned to strings or integers")
            return None
        return _BloomExpressionIndex(index, texts, str(ref))

    def prune_groups(self, ctx: PlanContext, files: FileListing, groups: Groups | None) -> Groups | None:
        narrowed = None
        for support in self.supports:
            if not isinstance(support, _OneExpressionIndex):
                continue  # bloom filters test built slices
            found = support.prune_groups(ctx, files, groups if narrowed is None else narrowed)
            if found is not None:
                if self.listed is None:
                    self.listed = support.listed
                narrowed = found
        return narrowed

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        notes, used = [], False
        for support in self.supports:
            pruned = support.prune_slices(ctx, slices)
            if pruned is None:
                continue
            used = True
            slices = pruned[0]
            notes.append(f"{support.index.value} on {support.sql}")
        return (slices, "; ".join(notes)) if used else None


def _session_zone(predicate: BoundPredicate) -> SessionZone:
    """The zone the predicate's date functions use (UTC when none does)."""
    for ref in references(predicate.expr):
        for function in ref.functions:
            zone = getattr(function, "zone", None)
            if isinstance(zone, SessionZone):
                return zone
    return SessionZone()
