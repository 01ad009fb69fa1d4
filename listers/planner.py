"""Candidate-file planning: partition pruning, then data skipping.

Stages, each counted in the explanation:
1. partition values: exact evaluation on the values in partition paths;
2. partition_stats (metadata table): partitions whose statistics exclude
   the predicate;
3. column_stats (metadata table): file slices none of whose files (base
   file or any log file) may hold a matching row.
A stage that cannot be used (no metadata table, index not built, no column
of the predicate indexed) is skipped and the explanation says why; files are
then kept. Without statistics, planning still prunes partitions.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from expressions import Dialect, Expr, UnknownColumnError, bind, may_match, parse_sql, to_sql
from expressions.eval_partitions import map_to_path_values, prune_partitions
from expressions.tree import references, values_required
from listers.directory_lister import DirectoryLister
from metadata import FileSlice, HudiError, HudiFormatError, MetadataTable, MetadataTableUnavailable
from metadata.avro_schema import META_FIELDS, avro_to_arrow_schema
from metadata.bloom_filter import footer_bloom_filter
from metadata.errors import NoSchemaError
from metadata.file_naming import LogFileName, file_id_of
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.indexes import (
    record_index_is_global,
    record_key_text,
    record_keys_with_values,
    record_locations,
    secondary_indexes,
)
from metadata.mdt.key_uniqueness import unique_keys
from metadata.mdt.stats_cache import PersistentStatsCache
from metadata.stats_table import FILE_NAME, PARTITION, min_field, stats_rows_of
from metadata.storage import RequestCounts, describe_requests

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_KEYS = 100_000  # record keys looked up in one plan
FOOTER_THREADS = 8  # footers read at once (each a request or two on an object store)
# Writes that look every key up before writing it, or add no keys.
KEY_UNIQUE_OPERATIONS = frozenset({
    "UPSERT", "UPSERT_PREPPED", "DELETE", "DELETE_PREPPED", "DELETE_PARTITION", "COMPACT", "LOG_COMPACT", "CLUSTER",
})


@dataclass(frozen=True)
class Stage:
    name: str
    kept: int
    total: int
    seconds: float
    note: str = ""
    unit: str = "partitions"  # what `kept` counts
    total_unit: str | None = None  # what `total` counts when not the same (column_stats counts files listed)

    def describe(self) -> str:
        if self.total_unit is None or self.total_unit == self.unit:
            return f"kept {self.kept} of {self.total} {self.unit}"
        return f"kept {self.kept} {self.unit} ({self.total} {self.total_unit} listed)"

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.name, "kept": self.kept, "of": self.total, "unit": self.unit, "of_unit": self.total_unit or self.unit,
                "seconds": round(self.seconds, 4), "note": self.note}


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
            lines.append(f"{stage.name}: {stage.describe()} in {stage.seconds * 1000:.1f} ms{note}")
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
) -> Plan:
    """Candidate file slices for a predicate, with an explanation.

    A metadata table that cannot be read keeps files (the explanation says
    why); with `strict` it is an error instead. `cache_dir` keeps the decoded
    column statistics there for later processes (never reused once the
    metadata table has changed). The record index keeps one location per
    key, so it prunes only when no insert could have written a key twice;
    `assume_unique_keys` trusts it regardless, as Apache Hudi does.
    `footers` tests pinned record keys against the bloom filter in each
    remaining base file's footer (a read per candidate)."""
    dialect = Dialect.of(dialect)
    expr = parse_sql(predicate, dialect) if isinstance(predicate, str) else predicate
    text = predicate if isinstance(predicate, str) else to_sql(expr, dialect)
    if isinstance(path_or_uri, DirectoryLister):  # a lister's earlier requests are not this plan's
        baseline = path_or_uri.table.storage.requests.snapshot()
        return _Planner(path_or_uri, expr, dialect, assume_unique_keys, footers).run(text, cache_dir, baseline)
    with DirectoryLister.open(path_or_uri, use_metadata, as_of, strict=strict, storage_options=storage_options) as lister:
        return _Planner(lister, expr, dialect, assume_unique_keys, footers).run(text, cache_dir, {})


def _use_cache_dir(lister: DirectoryLister, cache_dir: str | None) -> None:
    mdt = lister.table.metadata_table
    if cache_dir is not None and mdt is not None:
        mdt.persistent_cache = PersistentStatsCache(cache_dir)


def index_text(value: Any, days: bool) -> str | None:
    """A predicate value as an index key holds it: record keys and secondary
    values are the column's value as text (a date as its day number in a
    secondary index); None where that text is not known exactly."""
    if isinstance(value, bool):
        return None if not days else str(value).lower()
    if isinstance(value, (int, str)):
        return str(value)
    if days and isinstance(value, date) and not isinstance(value, datetime):
        return str((value - date(1970, 1, 1)).days)
    return None


@dataclass
class _Verdict:
    """What column_stats says: per stats row (partition, file) whether its
    statistics allow a matching row. A file without a stats row may hold anything."""

    stats: pa.Table
    keep: npt.NDArray[np.bool_]
    indexed: list[str]
    seconds: float
    candidates: set[tuple[str, str]] | None = None  # (partition, name) of listed files that may match, once listed

    def files_may_match(self, files: pa.Table, lister: DirectoryLister) -> npt.NDArray[np.bool_]:
        """Per row of a listing table, whether the file may hold a matching row."""
        rows = lister.stats_rows(files, self.stats)
        may = np.ones(len(rows), dtype=bool)
        has = rows >= 0
        may[has] = self.keep[rows[has]]
        return may

    def slices_may_match(self, slices: list[FileSlice]) -> list[bool]:
        """Per slice, whether any of its files may hold a matching row."""
        names_of = [([s.base_file_name] if s.base_file_name else []) + s.log_file_names for s in slices]
        if self.candidates is not None:  # every file of a built slice is listed
            return [any((s.partition, n) in self.candidates for n in names) for s, names in zip(slices, names_of)]
        wanted = pa.table({PARTITION: pa.array([s.partition for s, names in zip(slices, names_of) for _ in names], pa.string()),
                           FILE_NAME: pa.array([n for names in names_of for n in names], pa.string())})
        rows = stats_rows_of(wanted, self.stats)
        may = (rows < 0) | self.keep[np.maximum(rows, 0)]  # no stats row: may hold anything
        bounds = np.cumsum([0] + [len(names) for names in names_of])
        return [bool(may[a:b].any()) or a == b for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


class _Planner:
    def __init__(self, lister: DirectoryLister, expr: Expr, dialect: Dialect, assume_unique_keys: bool = False,
                 footers: bool = False) -> None:
        self.lister = lister
        self.assume_unique_keys = assume_unique_keys
        self.footers = footers
        self.table = lister.table
        self.expr = expr
        self.dialect = dialect
        self.not_used: list[str] = []
        self.warnings: list[str] = []
        self.schema_error: HudiError | None = None
        self.stages: list[Stage] = []

    def _types(self) -> dict[str, pa.DataType]:
        types = {name: pa.string() for name in META_FIELDS}
        try:
            types.update({f.name: f.type for f in avro_to_arrow_schema(self.table.avro_schema())})
        except HudiFormatError:
            raise  # a damaged commit file: say which, rather than plan without types
        except NoSchemaError as exc:  # a table not written yet
            self.not_used.append(f"table schema ({exc}); partition values compared as text")
        except HudiError as exc:  # an unreadable commit: planning without types is a fallback (said once the predicate binds)
            if self.table.strict:
                raise
            self.schema_error = exc
        # Partition columns the writer dropped from the files (and the schema) are the path's text.
        for field in self.table.config.partition_fields:
            types.setdefault(field, pa.string())
        return types

    def _transformed_partition_fields(self, types: dict[str, pa.DataType]) -> dict[str, str]:
        """Partition fields whose paths do not hold their values, with why."""
        key_generator = self.table.config.key_generator
        transformed = {}
        for field in self.table.config.partition_fields:
            reason = key_generator.why_path_is_not_the_value(field, pa.types.is_timestamp(types.get(field, pa.string())))
            if reason is not None:
                transformed[field] = reason
        return transformed

    def _segments_of(self, transformed: dict[str, str]) -> dict[str, int]:
        """Path segments of the fields written as formatted times."""
        key_generator = self.table.config.key_generator
        spans = {}
        for field in transformed:
            partitioning = key_generator.timestamp_partitioning(field)
            if partitioning is not None and not isinstance(partitioning, str):
                spans[field] = partitioning.path_segments
        return spans

    def _map_timestamp_fields(self, transformed: dict[str, str], columns: list[str],
                              types: dict[str, pa.DataType]) -> tuple[Expr, dict[str, pa.DataType], dict[str, str]]:
        """The predicate for partition pruning: leaves on TIMESTAMP key-generator
        fields mapped onto the formatted path text (`map_to_path_values`);
        other transformed fields of the predicate keep their partitions, and
        the explanation says why. Returns (predicate, types, {mapped field: note})."""
        key_generator = self.table.config.key_generator
        expr = self.expr
        path_types = dict(types)
        notes = {}
        for field in [f for f in transformed if f in columns]:
            partitioning = key_generator.timestamp_partitioning(field)
            if partitioning is None or isinstance(partitioning, str):
                unknown = f" (its transform is not known: {partitioning})" if partitioning else ""
                self.not_used.append(f"partition values of {field}: {transformed[field]}{unknown}; partitions kept")
                continue
            if expr is self.expr:
                expr = bind(self.expr, pa.schema(list(types.items())), strict=False)
            why = partitioning.why_not_monotone()
            expr = map_to_path_values(expr, field, partitioning.path_value, monotone=why is None)
            path_types[field] = pa.string()
            notes[field] = (f"{field} mapped through the TIMESTAMP key generator ({partitioning.timestamp_type} to "
                            f"'{partitioning.output.text}')" + ("" if why is None else f", equality only: {why}"))
        return expr, path_types, notes

    def _mdt(self) -> MetadataTable | None:
        mdt = self.table.metadata_table
        if mdt is None:
            self.not_used.append("partition_stats and column_stats: no metadata table in use (see listing)")
        return mdt

    def run(self, text: str, cache_dir: str | None = None, baseline: dict[str, int] | None = None) -> Plan:
        config = self.table.config
        types = self._types()
        # Unknown columns and impossible literals are user errors: say so (before
        # the listing is chosen, or its warnings said) rather than plan without pruning.
        try:
            bind(self.expr, pa.schema(list(types.items())), strict=True)
        except UnknownColumnError:
            if self.schema_error is not None:  # the column is unknown because the schema could not be read: say that
                raise self.schema_error from None
            raise
        if self.schema_error is not None:
            log.warning("table schema not read (%s); partition values compared as text", self.schema_error)
            self.warnings.append(f"table schema not read ({self.schema_error}); partition values compared as text")
        _use_cache_dir(self.lister, cache_dir)
        self.warnings[:0] = [w for w in (self.table.listing.warning,) if w]
        start = time.perf_counter()
        partitions = self.lister.list_partitions()
        self.stages.append(Stage("list partitions", len(partitions), len(partitions), time.perf_counter() - start))
        columns = sorted({r.path[0] if len(r.path) == 1 else r.name for r in references(self.expr)})

        start = time.perf_counter()
        transformed = self._transformed_partition_fields(types)
        kept = partitions
        if config.partition_fields:
            partition_expr, path_types, notes = self._map_timestamp_fields(transformed, columns, types)
            prunable = [f for f in config.partition_fields if f not in transformed or f in notes]
            try:
                kept = prune_partitions(partition_expr, partitions, config.partition_fields, path_types, config.hive_style_partitioning,
                                        config.url_encode_partitioning, prunable=prunable, segments_of=self._segments_of(transformed))
            except HudiFormatError as exc:
                if not transformed:
                    raise
                # Formatted values with slashes do not split back into fields.
                self.not_used.append(f"partition values: paths do not split into fields ({exc.problem}); partitions kept")
            self.stages.append(Stage("partition values", len(kept), len(partitions), time.perf_counter() - start, "; ".join(notes.values())))
        mdt = self._mdt()
        # A partition field whose path holds a transformed value is pruned on
        # its data values instead (no statistics for it keeps files).
        data_columns = [c for c in columns if c not in config.partition_fields or c in transformed]
        kept = self._partition_stats(mdt, kept, data_columns)
        verdict = self._column_stats_verdict(mdt, kept, data_columns)
        if verdict is not None and self.lister.view.is_latest:
            # Rule files out by name first and build only the file groups that
            # keep a candidate: a group none of whose files may match has no
            # slice that may. (A past view may need files a clean removed,
            # which no listing names: it builds every group.)
            slices, listed = self._candidate_slices(kept, verdict)
        else:
            slices = [s for part in self.lister.list_files_batch(kept).values() for s in part]
            listed = None
        slices = self._record_index(mdt, slices)
        if verdict is not None:
            slices = self._apply_verdict(verdict, slices, listed)
        if self.footers:
            slices = self._footer_bloom_filters(slices)
        return Plan(
            predicate=text,
            files=tuple(sorted(slices, key=lambda s: (s.partition, s.file_id))),
            stages=tuple(self.stages),
            not_used=tuple(self.not_used),
            residual=to_sql(self.expr, self.dialect),
            listing=self.lister.listing_note,
            warnings=(*self.warnings, *self.lister.view.warnings),
            requests=RequestCounts.since(baseline or {}, self.table.storage.requests.snapshot()),
        )

    def _stage_unusable(self, stage: str, exc: MetadataTableUnavailable, kept: list[T]) -> list[T]:
        if self.table.strict:
            raise exc
        log.warning("%s not used: %s", stage, exc)
        self.not_used.append(f"{stage}: {exc.reason}; every candidate kept")
        return kept

    def _partition_stats(self, mdt: MetadataTable | None, partitions: list[str], columns: list[str]) -> list[str]:
        if mdt is None or not columns or not partitions:
            return partitions
        if MdtPartition.PARTITION_STATS not in self.table.config.metadata_partitions:
            self.not_used.append("partition_stats: not built for this table")
            return partitions
        if not self.table.config.partition_fields:
            return partitions
        start = time.perf_counter()
        try:
            stats = mdt.partition_stats(columns, partitions, ordered=False)
        except MetadataTableUnavailable as exc:
            return self._stage_unusable("partition_stats", exc, partitions)
        keep = may_match(self.expr, stats).to_pylist()
        excluded = {p for p, k in zip(stats.column(PARTITION).to_pylist(), keep) if not k}
        kept = [p for p in partitions if p not in excluded]  # no stats row: kept
        self.stages.append(Stage("partition_stats", len(kept), len(partitions), time.perf_counter() - start))
        return kept

    def _record_index(self, mdt: MetadataTable | None, slices: list[FileSlice]) -> list[FileSlice]:
        """Record keys the predicate pins (`key = v`, `key IN (...)`, or through a
        secondary index) -> their file groups, as Hudi's RecordLevelIndexSupport
        and SecondaryIndexSupport do. Slices the index may not cover yet stay."""
        config = self.table.config
        if mdt is None or not slices or MdtPartition.RECORD_INDEX not in config.metadata_partitions:
            return slices
        start = time.perf_counter()
        if not record_index_is_global(mdt):
            self.not_used.append("record_index: partitioned record index not read here")
            return slices
        keys = self._pinned_record_keys()
        used: list[str] = [] if keys is None else [MdtPartition.RECORD_INDEX]
        for index in secondary_indexes(mdt):
            texts = self._index_texts(index.column, days=True)
            if texts is not None:
                found = record_keys_with_values(mdt, index, texts)
                keys = found if keys is None else keys & found
                used.append(index.partition)
        if keys is None:
            return slices
        risk, trusted = (None, "assume_unique_keys") if self.assume_unique_keys else self._duplicate_key_risk(mdt)
        if risk is not None:
            self.not_used.append(f"record_index: {risk}")
            return slices
        allowed = set(record_locations(mdt, sorted(keys)).values())
        covered = mdt.reader.synced_data_instants()
        kept = [s for s in slices if (s.partition, s.file_id) in allowed or not self._covered_by_index(s, covered)]
        self.stages.append(Stage(" + ".join(used), len(kept), len(slices), time.perf_counter() - start,
                                 f"{len(keys)} record key(s) in {len(allowed)} file group(s); {trusted}", unit="file slices"))
        return kept

    def _footer_bloom_filters(self, slices: list[FileSlice]) -> list[FileSlice]:
        """Beyond Hudi: the record keys the predicate pins, tested against the
        bloom filter in each remaining base file's footer (one footer read
        per candidate, so only when asked: `footers=True`). A slice with log
        files is kept (a log may hold keys its base file's filter never saw),
        and so is a file without a filter Hudi's hash can read."""
        keys = self._pinned_record_keys()
        if keys is None:
            self.not_used.append("bloom filters (footers): the predicate pins no record keys")
            return slices
        if not slices:
            return slices
        start = time.perf_counter()
        storage = self.table.storage

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
        self.stages.append(Stage("bloom filters (footers)", len(kept), len(slices), time.perf_counter() - start,
                                 f"{len(keys)} record key(s); slices with log files kept", unit="file slices"))
        return kept

    def _duplicate_key_risk(self, mdt: MetadataTable) -> tuple[str | None, str]:
        """(why a key might live in more than one file group, or None; how it
        was ruled out). The record index keeps one location per key, so it
        prunes soundly only when no key is held twice: every write looked keys
        up (upserts, deletes, table services), or the counts show it
        (`metadata.mdt.key_uniqueness`); an insert or bulk insert may write a
        key a second time."""
        timeline = self.table.timeline
        risk = None
        if timeline.has_archived_instants:
            risk = "the archived timeline is not read, so whether an insert wrote a key twice is unknown"
        else:
            for instant in timeline.commits():
                operation = (timeline.commit_metadata(instant).operation_type or "").upper()
                if operation not in KEY_UNIQUE_OPERATIONS:
                    risk = (f"{instant.requested_time} is {operation.lower() or 'a commit with no operation type'}, which may "
                            "write a key another file group holds")
                    break
        if risk is None:
            return None, "every commit looked keys up"
        proof = unique_keys(mdt, self.table.file_slices)
        if proof.shown:
            return None, proof.reason
        return (f"{risk}, and {proof.reason}; the index keeps one location per key "
                "(assume_unique_keys trusts it, as Apache Hudi does)"), ""

    def _pinned_record_keys(self) -> set[str] | None:
        """The record keys the predicate pins, through the key fields and
        through `_hoodie_record_key` (both where both do), or None."""
        keys: set[str] | None = None
        for texts in (self._record_key_texts(), self._index_texts("_hoodie_record_key", days=False)):
            if texts is not None:
                keys = set(texts) if keys is None else keys & set(texts)
        return keys

    def _record_key_texts(self) -> list[str] | None:
        """Record keys the predicate pins through the key fields: the value of a
        single field, or `f1:v1,f2:v2` as Hudi's ComplexKeyGenerator encodes
        composite keys, for every combination of pinned values (up to MAX_KEYS)."""
        fields = self.table.config.record_key_fields
        if not fields:
            return None
        per_field = [self._index_texts(f, days=False) for f in fields]
        if any(texts is None for texts in per_field):
            return None
        if len(fields) == 1:
            return per_field[0]
        combinations = 1
        for texts in per_field:
            combinations *= len(texts or ())
        if combinations > MAX_KEYS:
            self.not_used.append(f"record_index: {combinations} key combinations (more than {MAX_KEYS})")
            return None
        return [record_key_text(fields, values) for values in itertools.product(*per_field)]  # type: ignore[arg-type]

    def _index_texts(self, column: str, days: bool) -> list[str] | None:
        """The index keys of the values the predicate pins `column` to, if it does."""
        values = values_required(self.expr, column)
        if values is None:
            return None
        texts = [index_text(v, days) for v in values]
        return None if None in texts else [t for t in texts if t is not None]

    def _covered_by_index(self, s: FileSlice, covered: frozenset[str]) -> bool:
        """The index holds every write of this slice: all its files are from instants it synced."""
        if s.base_instant not in covered:
            return False
        if not s.log_files:
            return True
        if self.table.config.timeline_layout_version < 2:
            return False  # v6 log names carry the base instant, not the writer's
        return all(LogFileName.parse(name).instant_time in covered for name in s.log_file_names)

    def _column_stats_verdict(self, mdt: MetadataTable | None, partitions: list[str], columns: list[str]) -> _Verdict | None:
        """Per file name, whether its column statistics allow a matching row;
        None when column_stats cannot be used (the explanation says why)."""
        if mdt is None or not columns or not partitions:
            if not columns and mdt is not None:
                self.not_used.append("column_stats: the predicate names no data column")
            return None
        if MdtPartition.COLUMN_STATS not in self.table.config.metadata_partitions:
            self.not_used.append("column_stats: not built for this table")
            return None
        start = time.perf_counter()
        try:
            stats = mdt.column_stats(columns, partitions, ordered=False)
        except MetadataTableUnavailable as exc:
            self._stage_unusable("column_stats", exc, [])
            return None
        indexed = [c for c in columns if stats.num_rows and stats.column(min_field(c)).null_count < stats.num_rows]
        if not indexed:
            self.not_used.append(f"column_stats: none of {', '.join(columns)} is indexed")
            return None
        keep = np.asarray(may_match(self.expr, stats).to_numpy(zero_copy_only=False), dtype=bool)
        return _Verdict(stats, keep, indexed, time.perf_counter() - start)

    def _candidate_slices(self, partitions: list[str], verdict: _Verdict) -> tuple[list[FileSlice], int]:
        """Latest slices of the file groups that have a file the statistics do
        not exclude (a file without a stats row may hold anything), and how
        many files the listing holds."""
        start = time.perf_counter()
        files = self.lister.file_table(partitions)
        candidates = files.filter(verdict.files_may_match(files, self.lister))
        groups: dict[str, set[str]] = {p: set() for p in partitions}
        verdict.candidates = set(zip(candidates.column(PARTITION).to_pylist(), candidates.column(FILE_NAME).to_pylist()))
        for partition, name in verdict.candidates:
            groups[partition].add(file_id_of(name))
        slices = self.lister.list_file_groups(groups)
        listed = files.num_rows
        verdict.seconds += time.perf_counter() - start
        return slices, listed

    def _apply_verdict(self, verdict: _Verdict, slices: list[FileSlice], listed: int | None) -> list[FileSlice]:
        """Slices with at least one file the statistics do not exclude."""
        start = time.perf_counter()
        kept = []
        for s, may in zip(slices, verdict.slices_may_match(slices)):
            if may:
                kept.append(s)
            else:
                log.debug("dropped %s/%s: statistics exclude the predicate for every file", s.partition, s.file_id)
        note = f"columns with stats: {', '.join(verdict.indexed)}"
        if listed is not None:  # the slices of file groups without a candidate are never built (1M-file tables)
            note += f"; {len(slices)} file group(s) with a candidate built"
        self.stages.append(Stage("column_stats", len(kept), listed if listed is not None else len(slices),
                                 verdict.seconds + time.perf_counter() - start, note, unit="file slices",
                                 total_unit="files" if listed is not None else None))
        return kept
