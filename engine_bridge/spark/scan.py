"""A Spark scan of a Hudi table, without Spark: which file slices to read,
grouped into splits, and how one split becomes Arrow batches.

Splits carry plain strings (paths, instants, SQL), so they pickle to
executors. Base files are read with pyarrow; MOR slices with log files are
merged by hudi-rs's file-group reader (Apache Hudi's merge rules are not
rewritten here). Every batch is cast to the schema Spark asked for.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine_bridge.spark.options import OPEN_COST_BYTES, QueryType, ReadOptions
from expressions import Expr, evaluate_rows, may_match, parse_sql, to_sql
from expressions.visitors import references
from listers import DirectoryLister, incremental, plan
from listers.index_support import CandidatesRunner, KeyLookup
from metadata import FileSlice, HudiTable
from metadata.errors import HudiBridgeError, HudiFormatError
from metadata.formats.stats_table import FILE_NAME, VALUE_COUNT, mark_truncated
from metadata.storage.storage import Storage
from metadata.table.partition_path import parse_partition_values
from metadata.table.slice_rows import file_group_reader, read_by_hudi_rs, read_from_path, table_read_schema

log = logging.getLogger(__name__)
BATCH_ROWS = 65_536


class ScanReadError(HudiBridgeError):
    """A file of a split could not be read or does not fit the table schema."""


@dataclass(frozen=True)
class SliceToRead:
    partition: str
    base_file: str | None
    log_files: tuple[str, ...]
    size: int
    file_id: str = ""

    @classmethod
    def of(cls, s: FileSlice) -> SliceToRead:
        return cls(s.partition, s.base_file, s.log_files, s.total_size, s.file_id)

    @property
    def group(self) -> tuple[str, str]:
        """(partition, file id): the file group, the unit a stream may split a commit at."""
        return self.partition, self.file_id

    @property
    def file_count(self) -> int:
        return (1 if self.base_file else 0) + len(self.log_files)


@dataclass(frozen=True)
class Split:
    slices: tuple[SliceToRead, ...]


@dataclass(frozen=True)
class ReadSpec:
    """What every split of one scan shares."""

    base_uri: str
    merge_logs: bool
    row_filter: str | None = None  # incremental: rows of the instants in range (Spark SQL)
    predicate: str | None = None  # pushed filters, applied to rows where they are exact (Spark SQL)
    partition_fields: tuple[str, ...] = ()
    read_from_path: tuple[str, ...] = ()  # partition fields read as NULL in Hive's default partition (slice_rows.read_from_path)
    hive_style: bool = False
    url_encoded: bool = False
    storage_options: tuple[tuple[str, str], ...] = ()  # how executors reach an object store
    latest_instant: str = ""  # the table's state the plan saw (hudi-rs's readers are cached per state)


@dataclass(frozen=True)
class ScanPlan:
    spec: ReadSpec
    splits: tuple[Split, ...]
    explanation: tuple[str, ...] = field(default_factory=tuple)

    @property
    def slices(self) -> list[SliceToRead]:
        return [s for split in self.splits for s in split.slices]


def group_slices(slices: Iterable[SliceToRead], target_bytes: int) -> tuple[Split, ...]:
    """Consecutive slices packed up to `target_bytes`, each file also costing
    Spark's open cost, so many small slices share a task."""
    splits: list[Split] = []
    current: list[SliceToRead] = []
    weight = 0
    for s in slices:
        cost = s.size + OPEN_COST_BYTES * max(1, s.file_count)
        if current and weight + cost > target_bytes:
            splits.append(Split(tuple(current)))
            current, weight = [], 0
        current.append(s)
        weight += cost
    if current:
        splits.append(Split(tuple(current)))
    return tuple(splits)


def plan_scan(options: ReadOptions, predicate: Expr | None = None, table: HudiTable | None = None,
              column_stats_runner: CandidatesRunner | None = None, key_lookup: KeyLookup | None = None) -> ScanPlan:
    """The slices a read needs: all latest slices (as of `as_of`), pruned by
    `predicate` when data skipping is on (column_stats evaluated by
    `column_stats_runner` when given: Spark executors; large key sets looked
    up by `key_lookup`); the slices an
    incremental range wrote; base files only for read-optimized."""
    table = table or options.open_table()
    config = table.config
    notes: list[str] = []
    row_filter = None
    if options.service is not None:
        chosen, row_filter = _service_slices(options, predicate, notes)
    elif options.query_type is QueryType.INCREMENTAL:
        assert options.begin is not None
        inc = incremental(table, options.begin, options.end, fallback_to_full_scan=options.incremental_fallback)
        chosen = list(inc.files)
        row_filter = inc.row_filter
        notes.append(f"incremental ({options.begin}, {options.end or 'latest'}]: {len(inc.instants)} instant(s), "
                     f"{len(inc.partitions)} partition(s), {len(chosen)} file slice(s)")
        if inc.full_scan:
            notes.append(f"full-table scan: {inc.fallback_reason}")
        if predicate is not None:
            notes.append("pushed filters are not used to prune an incremental range; Spark filters the rows")
    else:
        chosen = table.file_slices(as_of=options.as_of)
        if predicate is not None and options.data_skipping:
            result = plan(DirectoryLister(table, options.as_of), predicate, column_stats_runner=column_stats_runner, key_lookup=key_lookup)
            chosen = list(result.files)
            notes.append(result.explain())
        elif predicate is not None:
            notes.append("data skipping is off (hoodie.enable.data.skipping=false): every file slice is read")
    merge = options.query_type is not QueryType.READ_OPTIMIZED and config.is_mor
    if options.query_type is QueryType.READ_OPTIMIZED:
        chosen = [FileSlice(s.partition, s.file_id, s.base_instant, s.base_file, (), s.base_file_size) for s in chosen if s.base_file]
    spec = ReadSpec(
        base_uri=table.base_uri,
        merge_logs=merge,
        row_filter=row_filter,
        predicate=to_sql(predicate, "spark") if predicate is not None else None,
        partition_fields=config.partition_fields,
        read_from_path=read_from_path(config, table_read_schema(table)),
        hive_style=config.hive_style_partitioning,
        url_encoded=config.url_encode_partitioning,
        storage_options=options.storage_options,
        latest_instant=latest.requested_time if (latest := table.timeline.latest_completed()) else "",
    )
    ordered = sorted((SliceToRead.of(s) for s in chosen), key=lambda s: (s.partition, s.base_file or "", s.log_files))
    return ScanPlan(spec, group_slices(ordered, options.split_bytes), tuple(notes))


def _service_slices(options: ReadOptions, predicate: Expr | None, notes: list[str]) -> tuple[list[FileSlice], str | None]:
    """The slices a `hudi-bridge serve` plans for the read (the driver asks; executors read), and an incremental row filter."""
    from listers.service_client import ServiceClient

    assert options.service is not None
    incremental_read = options.query_type is QueryType.INCREMENTAL
    where = to_sql(predicate, "spark") if predicate is not None and options.data_skipping and not incremental_read else True
    asked = ServiceClient(options.service).plan(options.path, where, "spark", options.as_of,
                                                options.begin if incremental_read else None, options.end if incremental_read else None)
    notes.append(f"planned by the service (plan {asked.answer['plan_id']}, instant {asked.instant}):\n{asked.plan.explain()}")
    return list(asked.plan.files), asked.plan.residual if incremental_read else None


# Reading ----------------------------------------------------------------------------------------
def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    index = batch.schema.get_field_index(name)
    if index < 0:
        lowered = [n.lower() for n in batch.schema.names]
        index = lowered.index(name.lower()) if name.lower() in lowered else -1
    return batch.column(index) if index >= 0 else None


def conform(batch: pa.RecordBatch, target: pa.Schema, partition_values: dict[str, str | None], where: str,
            read_from_path: tuple[str, ...] = ()) -> pa.RecordBatch:
    """The batch in exactly Spark's schema: columns by name, cast; partition
    columns the files lack from the path, and those `read_from_path` NULL in
    Hive's default partition; other missing columns null (a column added to
    the schema after the file was written)."""
    arrays = []
    for f in target:
        column = _column(batch, f.name)
        if f.name in read_from_path and f.name in partition_values and partition_values[f.name] is None:
            column = None
        if column is None and f.name in partition_values:
            column = pa.array([partition_values[f.name]] * batch.num_rows, pa.string())
        if column is None:
            arrays.append(pa.nulls(batch.num_rows, f.type))
            continue
        try:
            arrays.append(column if column.type == f.type else pc.cast(column, f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ScanReadError(f"{where}: column {f.name!r} of type {column.type} cannot be read as {f.type}: {exc}") from None
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _keep(batch: pa.RecordBatch, condition: Expr | None) -> pa.RecordBatch:
    if condition is None or batch.num_rows == 0:
        return batch
    mask = evaluate_rows(condition, pa.Table.from_batches([batch]))
    return batch.filter(pc.fill_null(mask, False))


def _has_exact_bounds(dtype: pa.DataType) -> bool:
    """Types whose footer min/max bound every value as Spark compares them
    (floats are left out: Parquet bounds skip NaN, which Spark sorts last)."""
    return pa.types.is_integer(dtype) or pa.types.is_string(dtype) or pa.types.is_date32(dtype) or pa.types.is_boolean(dtype)


def row_groups_to_read(parquet: pq.ParquetFile, condition: Expr | None) -> list[int]:
    """Row groups whose footer statistics may hold a row matching `condition`
    (all of them when it names no column with usable statistics)."""
    metadata = parquet.metadata
    every = list(range(metadata.num_row_groups))
    if condition is None or metadata.num_row_groups <= 1:
        return every
    wanted = {ref.path[0].lower() for ref in references(condition) if len(ref.path) == 1}
    schema = parquet.schema_arrow
    first = metadata.row_group(0)
    columns: dict[str, pa.Array] = {}
    strings = []
    for j in range(first.num_columns):
        name = first.column(j).path_in_schema
        if "." in name or name.lower() not in wanted or schema.get_field_index(name) < 0:
            continue
        dtype = schema.field(name).type
        if not _has_exact_bounds(dtype):
            continue
        bounds: dict[str, list[Any]] = {"_minValue": [], "_maxValue": [], "_nullCount": []}
        for i in every:
            stats = metadata.row_group(i).column(j).statistics
            usable = stats is not None and stats.has_min_max
            bounds["_minValue"].append(stats.min if usable else None)
            bounds["_maxValue"].append(stats.max if usable else None)
            bounds["_nullCount"].append(stats.null_count if stats is not None and stats.has_null_count else None)
        try:
            columns[name + "_minValue"] = pa.array(bounds["_minValue"], dtype)
            columns[name + "_maxValue"] = pa.array(bounds["_maxValue"], dtype)
            columns[name + "_nullCount"] = pa.array(bounds["_nullCount"], pa.int64())
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue  # statistics of an unexpected type: no pruning on this column
        if pa.types.is_string(dtype):
            strings.append(name)
    if not columns:
        return every
    table = pa.table({FILE_NAME: [str(i) for i in every],
                      VALUE_COUNT: pa.array([metadata.row_group(i).num_rows for i in every], pa.int64()), **columns})
    keep = may_match(condition, mark_truncated(table, strings) if strings else table).to_pylist()
    return [i for i in every if keep[i]]


def _slice_batches(spec: ReadSpec, storage: Storage, s: SliceToRead, predicate: Expr | None) -> Iterator[pa.RecordBatch]:
    if (spec.merge_logs and s.log_files) or read_by_hudi_rs(s.base_file):
        reader = file_group_reader(spec.base_uri, dict(spec.storage_options), spec.latest_instant)
        stream = reader.read_file_slice_from_paths_stream(s.base_file or "", list(s.log_files) if spec.merge_logs else [])
        yield from stream
    elif s.base_file:
        with storage.open_random_access(s.base_file) as handle:
            parquet = pq.ParquetFile(handle)
            groups = row_groups_to_read(parquet, predicate)
            if groups:
                yield from parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=groups)


def read_split(spec: ReadSpec, split: Split, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Arrow batches of a split in Spark's schema `target`, rows outside an
    incremental range (and, where given, rows failing the pushed predicate)
    left out. Spark still evaluates its filters on what is returned."""
    storage = Storage.open(spec.base_uri, storage_options=dict(spec.storage_options))
    predicate = parse_sql(spec.predicate, "spark") if spec.predicate else None
    conditions = [c for c in (parse_sql(spec.row_filter, "spark") if spec.row_filter else None, predicate) if c is not None]
    for s in split.slices:
        where = storage.display_path(s.base_file or (s.log_files[0] if s.log_files else s.partition))
        try:
            values = parse_partition_values(s.partition, spec.partition_fields, spec.hive_style, spec.url_encoded)
        except HudiFormatError:
            values = {}
        try:
            for raw in _slice_batches(spec, storage, s, predicate):
                batch = conform(raw, target, values, where, spec.read_from_path)
                for condition in conditions:
                    batch = _keep(batch, condition)
                if batch.num_rows:
                    yield batch
        except ScanReadError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise ScanReadError(f"{where}: {exc}") from exc
