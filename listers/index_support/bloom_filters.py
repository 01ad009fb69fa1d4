"""File pruning on record-key bloom filters (Hudi's BloomIndex, read at plan time)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq

from listers.index_support.base import FileIndexSupport, PlanContext
from metadata import FileSlice
from metadata.bloom_filter import footer_bloom_filter

FOOTER_THREADS = 8  # footers read at once (each a request or two on an object store)


class FooterBloomFilters(FileIndexSupport):
    """Beyond Hudi: the record keys the predicate pins, tested against the
    bloom filter in each remaining base file's footer (one footer read per
    candidate, so only when asked: `footers=True`). A slice with log files
    is kept (a log may hold keys its base file's filter never saw), and so
    is a file without a filter Hudi's hash can read."""

    name = "bloom filters (footers)"

    def usable(self, ctx: PlanContext) -> bool:
        if not ctx.footers:
            return False
        if ctx.record_keys is None:
            ctx.not_used.append("bloom filters (footers): the predicate pins no record keys")
            return False
        return True

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        keys = ctx.record_keys or set()
        storage = ctx.table.storage

        def may_hold(piece: FileSlice) -> bool:
            if piece.log_files or not piece.base_file:
                return True
            with storage.open_random_access(piece.base_file) as handle:
                footer = pq.read_metadata(handle).metadata
            found = footer_bloom_filter(footer, storage.display_path(piece.base_file))
            return found is None or any(found.might_contain(k) for k in keys)

        with ThreadPoolExecutor(max_workers=FOOTER_THREADS) as pool:
            verdicts = list(pool.map(may_hold, slices))
        kept = [s for s, may in zip(slices, verdicts) if may]
        return kept, f"{len(keys)} record key(s); slices with log files kept"
