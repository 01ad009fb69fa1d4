"""Candidate-file planning: the predicate bound once, then the chain of
index supports (`listers.index_support`, which says why in that order),
each stage counted in the explanation with what it kept, its time and its
storage requests. A stage that cannot be used (no metadata table, index not
built, no column of the predicate indexed) is skipped and the explanation
says why; files are then kept. Without statistics, planning still prunes
partitions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from expressions import BoundPredicate, Dialect, Expr, UnknownColumnError, bind_predicate, parse_sql, to_sql
from listers.directory_lister import DirectoryLister
from listers.index_support import (
    CandidatesRunner,
    FileIndexSupport,
    FileListing,
    Groups,
    KeyLookup,
    PartitionIndexSupport,
    PartitionStats,
    PartitionValues,
    PlanContext,
    file_index_chain,
    transformed_partition_fields,
)
from metadata import FileSlice, HudiError, HudiFormatError
from metadata.errors import NoSchemaError
from metadata.formats.avro_schema import META_FIELDS, avro_to_arrow_schema
from metadata.mdt.stats_cache import PersistentStatsCache
from metadata.storage.calls import RequestCounts, describe_requests

log = logging.getLogger(__name__)
T = TypeVar("T")

# Is given a plan's slices as they are found, in the plan's order, and whether more are to come.
SlicesSink = Callable[[Sequence[FileSlice], bool], None]
FIRST_BATCH_PARTITIONS = 16  # a streamed plan's first batch; each next one is twice as large


@dataclass(frozen=True)
class Stage:
    name: str
    kept: int
    total: int
    seconds: float
    note: str = ""
    unit: str = "partitions"  # what `kept` counts
    total_unit: str | None = None  # what `total` counts when not the same (stages that rule files out by name count files listed)
    requests: int = 0  # storage requests the stage made

    def describe(self) -> str:
        if self.total_unit is None or self.total_unit == self.unit:
            return f"kept {self.kept} of {self.total} {self.unit}"
        return f"kept {self.kept} {self.unit} ({self.total} {self.total_unit} listed)"

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "kept": self.kept, "of": self.total, "unit": self.unit, "of_unit": self.total_unit or self.unit,
                "seconds": round(self.seconds, 4), "requests": self.requests, "note": self.note}


@dataclass(frozen=True)
class Plan:
    predicate: str
    files: tuple[FileSlice, ...]
    stages: tuple[Stage, ...] = ()
    not_used: tuple[str, ...] = ()
    residual: str = ""
    listing: str = ""
    warnings: tuple[str, ...] = ()  # what the view had to assume (damaged or empty files)
    requests: Mapping[str, int] = dataclasses.field(default_factory=dict)  # storage requests by kind, `total` and `bytes_read`

    def explain(self) -> str:
        lines = [f"predicate: {self.predicate}", f"listing: {self.listing}"]
        for stage in self.stages:
            note = f" ({stage.note})" if stage.note else ""
            requests = f", {stage.requests} storage request{'s' if stage.requests != 1 else ''}" if stage.requests else ""
            lines.append(f"{stage.name}: {stage.describe()} in {stage.seconds * 1000:.1f} ms{requests}{note}")
        lines += [f"not used: {reason}" for reason in self.not_used]
        lines += [f"warning: {warning}" for warning in self.warnings]
        lines.append(f"residual predicate (engines still filter rows): {self.residual}")
        if self.requests:
            lines.append(describe_requests(self.requests))
        lines.append(f"candidate file slices: {len(self.files)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "listing": self.listing,
            "stages": [s.to_dict() for s in self.stages],
            "not_used": list(self.not_used),
            "residual": self.residual,
            "warnings": list(self.warnings),
            "requests": dict(self.requests),
            "files": [s.to_dict() for s in self.files],
        }


def plan(
    path_or_uri: str | DirectoryLister,
    predicate: str | Expr,
    dialect: Dialect | str = Dialect.SPARK,
    as_of: str | None = None,
    use_metadata: bool = True,
    strict: bool = False,
    cache_dir: str | None = None,
    assume_unique_keys: bool = False,
    storage_options: Mapping[str, str] | None = None,
    footers: bool = False,
    column_stats_runner: CandidatesRunner | None = None,
    key_groups: Iterable[tuple[str, str]] | None = None,
    key_lookup: KeyLookup | None = None,
    processes: int | None = 1,
    on_slices: SlicesSink | None = None,
) -> Plan:
    """Candidate file slices for a predicate, with an explanation.

    A metadata table that cannot be read keeps files (the explanation says
    why); with `strict` it is an error instead. `cache_dir` keeps the decoded
    column statistics there for later processes (never reused once the
    metadata table has changed). The record index keeps one location per
    key, so it prunes only when no insert could have written a key twice;
    `assume_unique_keys` trusts it regardless, as Apache Hudi does.
    `footers` tests pinned record keys against the bloom filter in each
    remaining base file's footer (a read per candidate).
    `column_stats_runner` reads and evaluates column_stats away from the
    driver (engine_bridge.spark.plan_on_spark: on Spark executors), which
    then holds candidate names only. `key_groups`: the (partition, file id)
    pairs the record index gives for a set of keys looked up elsewhere
    (`engine_bridge.spark.lookup_keys`): only they stay, where the index
    is trusted as for keys the predicate pins. `key_lookup`: where key sets
    over its threshold are looked up (engine_bridge.spark: as a Spark join).
    `processes`: column_stats too large to keep in the stats cache are
    streamed a run of partitions at a time (`listers.index_support.stats_runs`); above 1
    (None: one per core) worker processes evaluate the runs. They start as
    Python's forkserver starts them, importing the caller's main module: a
    script asking for them plans under `if __name__ == "__main__":`.
    `on_slices`: once the index supports have ruled file groups out by name
    (over every partition kept), the slices are built and pruned in batches
    of partitions of growing size, in path order, and each batch's are
    handed to it as soon as they are found, with whether more batches follow
    (a service sends the first page of a 1M-file plan before the rest is
    built); the Plan is the same, its stages summed over batches. An
    exception it raises stops the plan."""
    dialect = Dialect.of(dialect)
    expr = parse_sql(predicate, dialect) if isinstance(predicate, str) else predicate
    text = predicate if isinstance(predicate, str) else to_sql(expr, dialect)
    residual = None if isinstance(predicate, str) else text  # printed once (a 100,000-key IN takes a second to print)
    groups = None if key_groups is None else frozenset(key_groups)
    if isinstance(path_or_uri, DirectoryLister):  # a lister's earlier requests are not this plan's
        baseline = path_or_uri.table.storage.requests.snapshot()
        planner = _Planner(path_or_uri, expr, dialect, assume_unique_keys, footers, column_stats_runner, groups, key_lookup, processes)
        return planner.run(text, cache_dir, baseline, residual, on_slices)
    with DirectoryLister.open(path_or_uri, use_metadata, as_of, strict=strict, storage_options=storage_options) as lister:
        return _Planner(lister, expr, dialect, assume_unique_keys, footers, column_stats_runner, groups, key_lookup, processes).run(
            text, cache_dir, {}, residual, on_slices)


def _use_cache_dir(lister: DirectoryLister, cache_dir: str | None) -> None:
    mdt = lister.table.metadata_table
    if cache_dir is not None and mdt is not None:
        mdt.persistent_cache = PersistentStatsCache(cache_dir)


class _Planner:
    """Binds the predicate once and runs the chain of index supports."""

    def __init__(self, lister: DirectoryLister, expr: Expr, dialect: Dialect, assume_unique_keys: bool = False,
                 footers: bool = False, column_stats_runner: CandidatesRunner | None = None,
                 key_groups: frozenset[tuple[str, str]] | None = None, key_lookup: KeyLookup | None = None,
                 processes: int | None = 1) -> None:
        self.lister = lister
        self.processes = processes
        self.key_groups = key_groups
        self.key_lookup = key_lookup
        self.column_stats_runner = column_stats_runner
        self.assume_unique_keys = assume_unique_keys
        self.footers = footers
        self.table = lister.table
        self.expr = expr
        self.dialect = dialect
        self.not_used: list[str] = []
        self.warnings: list[str] = []
        self.schema_error: HudiError | None = None
        self.no_schema: NoSchemaError | None = None
        self.stages: list[Stage] = []

    def _types(self) -> dict[str, pa.DataType]:
        types = {name: pa.string() for name in META_FIELDS}
        try:
            types.update({f.name: f.type for f in avro_to_arrow_schema(self.table.avro_schema())})
        except HudiFormatError:
            raise  # a damaged commit file: say which, rather than plan without types
        except NoSchemaError as exc:  # a table not written yet
            self.no_schema = exc
            self.not_used.append(f"table schema ({exc}); partition values compared as text")
        except HudiError as exc:  # an unreadable commit: planning without types is a fallback (said once the predicate binds)
            if self.table.strict:
                raise
            self.schema_error = exc
        # Partition columns the writer dropped from the files (and the schema) are the path's text.
        for field in self.table.config.partition_fields:
            types.setdefault(field, pa.string())
        return types

    def _bind(self, types: dict[str, pa.DataType]) -> BoundPredicate:
        """Bound once, strictly: unknown columns and impossible literals are
        user errors, said before the listing is chosen (or its warnings
        said) rather than planned without pruning."""
        try:
            bound = bind_predicate(self.expr, pa.schema(list(types.items())))
        except UnknownColumnError as exc:
            if self.schema_error is not None:  # the column is unknown because the schema could not be read: say that
                raise self.schema_error from None
            if self.no_schema is not None:  # a table whose first commit has not completed (a writer may be at it now)
                raise HudiError(f"{self.table.storage.uri}: {exc}: the table has no completed commit yet, so no schema "
                                "to plan against") from None
            raise
        if self.schema_error is not None:
            log.warning("table schema not read (%s); partition values compared as text", self.schema_error)
            self.warnings.append(f"table schema not read ({self.schema_error}); partition values compared as text")
        return bound

    def _measured(self, step: Callable[..., T], *args: Any) -> tuple[T, float, int]:
        """(what step(*args) returned, seconds, storage requests it made)."""
        requests = self.table.storage.requests
        before, start = requests.snapshot().get("total", 0), time.perf_counter()
        result = step(*args)
        return result, time.perf_counter() - start, requests.snapshot().get("total", 0) - before

    def run(self, text: str, cache_dir: str | None = None, baseline: dict[str, int] | None = None, residual: str | None = None,
            on_slices: SlicesSink | None = None) -> Plan:
        config = self.table.config
        types = self._types()
        predicate = self._bind(types)
        _use_cache_dir(self.lister, cache_dir)
        partitions, seconds, requests = self._measured(self.lister.list_partitions)
        self.stages.append(Stage("list partitions", len(partitions), len(partitions), seconds, requests=requests))
        transformed = transformed_partition_fields(self.table, types)
        # A partition field whose path holds a transformed value is pruned on
        # its data values instead (no statistics for it keeps files).
        data_columns = [c for c in predicate.columns if c not in config.partition_fields or c in transformed]
        ctx = PlanContext(self.lister, predicate, data_columns, self.assume_unique_keys, self.footers, self.not_used,
                          key_groups=self.key_groups, key_lookup=self.key_lookup)
        if ctx.mdt is None:
            self.not_used.append("partition_stats and column_stats: no metadata table in use (see listing)")
        partition_chain: list[PartitionIndexSupport] = [PartitionValues(types, transformed), PartitionStats()]
        for support in partition_chain:
            pruned, seconds, requests = self._measured(support.prune, ctx, partitions)
            if pruned is not None:
                self.stages.append(Stage(support.name, len(pruned[0]), len(partitions), seconds, pruned[1], requests=requests))
                partitions = pruned[0]
        slices = self._prune_files(ctx, partitions, on_slices)
        return Plan(
            predicate=text,
            files=tuple(sorted(slices, key=lambda s: (s.partition, s.file_id))),
            stages=tuple(self.stages),
            not_used=tuple(self.not_used),
            residual=residual if residual is not None else to_sql(self.expr, self.dialect),
            listing=self.lister.listing_note,
            warnings=(*[w for w in (self.table.listing.warning,) if w], *self.warnings, *self.lister.view.warnings),
            requests=RequestCounts.since(baseline or {}, self.table.storage.requests.snapshot()),
        )

    def _prune_files(self, ctx: PlanContext, partitions: list[str], on_slices: SlicesSink | None = None) -> list[FileSlice]:
        """The file-level chain: on the latest view, each support first rules
        file groups out by name and only the groups left are built (a past
        view may need files a clean removed, which no listing names: it
        builds every group); then each prunes the built slices. With
        `on_slices`, where every support decided by name (or none is used),
        the slices are built, pruned and handed on a batch of partitions at
        a time; a past view's supports read what the slices they are given
        name, so there they are built at once."""
        if not partitions:
            return []
        chain: list[FileIndexSupport] = []
        cost: dict[int, tuple[float, int]] = {}  # per support: seconds and requests before its slices were pruned
        for support in file_index_chain(self.column_stats_runner, self.processes):
            usable, seconds, requests = self._measured(support.usable, ctx)
            if usable:
                chain.append(support)
                cost[id(support)] = (seconds, requests)
        listed: dict[int, int] = {}
        groups: Groups | None = None
        if self.lister.view.is_latest and chain:
            listing = FileListing(self.lister, partitions)
            for support in chain:
                narrowed, seconds, requests = self._measured(support.prune_groups, ctx, listing, groups)
                cost[id(support)] = (cost[id(support)][0] + seconds, cost[id(support)][1] + requests)
                if narrowed is not None:
                    listed[id(support)] = support.listed if support.listed is not None else listing.rows_in(groups)
                    groups = narrowed
        batched = on_slices is not None and (not chain or (self.lister.view.is_latest and ctx.group_files is None))
        batches = list(partition_batches(sorted(partitions), FIRST_BATCH_PARTITIONS)) if batched else [partitions]
        tallies: dict[int, _Tally] = {}
        kept: list[FileSlice] = []
        for number, batch in enumerate(batches, 1):
            if groups is None:
                slices = [s for part in self.lister.list_files_batch(batch).values() for s in part]
            else:
                wanted = set(batch) if batched else None
                slices = self.lister.list_file_groups(groups if wanted is None else {p: ids for p, ids in groups.items() if p in wanted},
                                                      ctx.group_files)
            for support in chain:
                pruned, seconds, requests = self._measured(support.prune_slices, ctx, slices)
                if pruned is None:
                    continue
                tallies.setdefault(id(support), _Tally()).add(len(pruned[0]), len(slices), seconds, requests, pruned[1])
                slices = pruned[0]
            if batched and on_slices is not None:
                slices.sort(key=lambda s: (s.partition, s.file_id))
                on_slices(slices, number < len(batches))
            kept += slices
        for support in chain:
            tally = tallies.get(id(support))
            if tally is None:
                continue
            before_seconds, before_requests = cost.get(id(support), (0.0, 0))
            total = listed.get(id(support))
            self.stages.append(Stage(support.name, tally.kept, total if total is not None else tally.built, before_seconds + tally.seconds,
                                     tally.note, unit="file slices", total_unit="files" if total is not None else None,
                                     requests=before_requests + tally.requests))
        if on_slices is not None and not batched:
            kept.sort(key=lambda s: (s.partition, s.file_id))
            on_slices(kept, False)
        return kept


def partition_batches(partitions: list[str], first: int) -> Iterator[list[str]]:
    """Consecutive batches of `first`, then twice as many each time: the first slices come after a small read,
    and many partitions are still read in few passes."""
    start, size = 0, first
    while start < len(partitions):
        yield partitions[start:start + size]
        start, size = start + size, size * 2


@dataclass
class _Tally:
    """A support's pruning of built slices, over the batches of a plan."""

    kept: int = 0
    built: int = 0
    seconds: float = 0.0
    requests: int = 0
    note: str = ""  # the support's last: its notes count what it did over every batch so far

    def add(self, kept: int, built: int, seconds: float, requests: int, note: str) -> None:
        self.kept, self.built, self.seconds, self.requests = self.kept + kept, self.built + built, self.seconds + seconds, self.requests + requests
        self.note = note
