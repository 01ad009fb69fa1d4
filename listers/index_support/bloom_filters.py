"""File pruning on record-key bloom filters (Hudi's bloom index, used at plan
time): the record keys the predicate pins, tested against each remaining
base file's filter. A slice with log files is kept (a log may hold keys its
base file's filter never saw), and so is a file without a filter, or with a
hash this project does not read."""

from __future__ import annotations

from listers.index_support.base import FileIndexSupport, PlanContext
from metadata import FileSlice, MetadataTableUnavailable
from metadata.formats.bloom_filter import BloomFilter
from metadata.mdt.bloom_filters import bloom_filters_of, footer_filters
from metadata.mdt.file_groups import MdtPartition


class _KeyFilters(FileIndexSupport):
    tested = 0  # base files tested over the plan's batches (its note counts them)

    def available(self, ctx: PlanContext) -> bool:
        """Whether this table and plan have the filters at all."""
        raise NotImplementedError

    def usable(self, ctx: PlanContext) -> bool:
        if not self.available(ctx):
            return False
        if ctx.record_keys is None:
            ctx.not_used.append(f"{self.name}: the predicate pins no record keys")
            return False
        return True

    def filters(self, ctx: PlanContext, bases: list[FileSlice]) -> list[BloomFilter | None]:
        """The filter of each slice's base file, None where there is none."""
        raise NotImplementedError

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        keys = ctx.record_keys or set()
        bases = [s for s in slices if s.base_file and not s.log_files]
        ruled_out = {id(s) for s, found in zip(bases, self.filters(ctx, bases))
                     if found is not None and not any(found.might_contain(k) for k in keys)}
        kept = [s for s in slices if id(s) not in ruled_out]
        self.tested += len(bases)  # over the plan's batches
        return kept, f"{len(keys)} record key(s); {self.tested} base file(s) tested, slices with log files kept"


class MetadataBloomFilters(_KeyFilters):
    """The bloom_filters partition of the metadata table: one point lookup
    per candidate base file, all in one read."""

    name = MdtPartition.BLOOM_FILTERS.value

    def available(self, ctx: PlanContext) -> bool:
        return ctx.mdt is not None and MdtPartition.BLOOM_FILTERS in ctx.table.config.metadata_partitions

    def filters(self, ctx: PlanContext, bases: list[FileSlice]) -> list[BloomFilter | None]:
        assert ctx.mdt is not None
        try:
            found = bloom_filters_of(ctx.mdt, [(s.partition, s.base_file_name or "") for s in bases])
        except MetadataTableUnavailable as exc:
            return ctx.unusable(self.name, exc, [None] * len(bases))
        return [found.get((s.partition, s.base_file_name or "")) for s in bases]


class FooterBloomFilters(_KeyFilters):
    """Beyond Hudi: the filter in each remaining base file's footer (one
    footer read per candidate, so only when asked: `footers=True`)."""

    name = "bloom filters (footers)"

    def available(self, ctx: PlanContext) -> bool:
        return ctx.footers

    def filters(self, ctx: PlanContext, bases: list[FileSlice]) -> list[BloomFilter | None]:
        storage = ctx.table.storage
        paths = [piece.base_file or "" for piece in bases]
        return [None if found is None else found.decode(storage.display_path(path))
                for path, found in zip(paths, footer_filters(storage, paths))]
