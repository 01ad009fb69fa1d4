"""MetadataTable: the public face of the metadata table (RFC-15, RFC-27).

Partitions are named as the data table names them ("" when not
partitioned); the MDT's "." stays inside.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiError, HudiFormatError, MetadataTableAbsent, MetadataTableDamaged, MetadataTableUnavailable
from metadata.formats.avro_schema import META_FIELDS, avro_to_arrow_schema
from metadata.formats.stats_table import (
    FILE_NAME,
    PARTITION,
    VALUE_COUNT,
    build_stats_table,
    max_field,
    min_field,
    null_count_field,
)
from metadata.mdt import keys
from metadata.mdt.columnar import decode_spans
from metadata.mdt.decoded import Decoded, Unsupported
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.files_columns import KEY, NAME, SIZE, entries_of_sizes, first_path_like, live_entries
from metadata.mdt.hfile_cells import CellChunk
from metadata.mdt.key_query import KeyQuery, RawCells
from metadata.mdt.reader import MetadataTableReader
from metadata.mdt.record_gather import Spans
from metadata.mdt.records import ALL_PARTITIONS_KEY, MetadataRecord, decode_record, live_files, live_sizes, parse_schema_cached
from metadata.mdt.stats_cache import PersistentStatsCache, StatsCache, with_state
from metadata.mdt.stats_columns import FlatStats, in_file_order
from metadata.mdt.stats_pivot import pivot
from metadata.storage.listing import FILE_TABLE_SCHEMA, names_of
from metadata.table.partition_path import check_partition_paths, from_metadata_partition, to_metadata_partition
from metadata.table.stored_table import StoredTable, TableParts
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL, release_unused

log = logging.getLogger(__name__)

PER_PARTITION_SEEKS = 256  # partitions up to which stats are read by column+partition prefix
COLUMNAR_RECORDS = 64  # files records decoded columnar from this many in a chunk (fewer: one by one with fastavro)
# A stats read of more rows than this hands its freed pages back: a small read that did so took 1.8 ms more
# (9.7 ms against 7.9 ms for three partitions), the next read faulting the pages in again.
RELEASE_AFTER_ROWS = 100_000
RUN_QUERIES_KEPT = 4  # a streamed plan's runs' queries: its current run and the one read ahead


class MetadataTable:
    def __init__(self, table: StoredTable, reader: MetadataTableReader) -> None:
        self.table = table
        self.reader = reader
        self._column_types: dict[str, pa.DataType] | None = None
        self._partitions: list[str] | None = None  # the reader reads one fixed state of the MDT
        self._partitions_source: Callable[[], list[str]] | None = None
        self._partitions_lock = threading.Lock()
        self.stats_cache = StatsCache()
        self.columnar = True  # False: the per-record reference decoder (tests compare the two)
        self.persistent_cache: PersistentStatsCache | None = None  # set by plan(cache_dir=...)
        self._run_queries: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], KeyQuery] = OrderedDict()
        self._run_queries_lock = threading.Lock()

    @classmethod
    def open(cls, table_or_path: StoredTable | str) -> MetadataTable:
        """The metadata table of a data table (a `HudiTable`, its parts, or a
        path); raises MetadataTableUnavailable (with the reason) when absent
        or unusable."""
        table = TableParts.load(table_or_path) if isinstance(table_or_path, str) else table_or_path
        if MdtPartition.FILES not in table.config.metadata_partitions:
            raise MetadataTableAbsent(
                table.storage.uri,
                f"hoodie.table.metadata.partitions does not list 'files' "
                f"(listed: {', '.join(table.config.metadata_partitions) or 'none'})",
            )
        return cls(table, MetadataTableReader(table))

    def _require(self, partition: str) -> None:
        if partition not in self.table.config.metadata_partitions:
            raise MetadataTableUnavailable(
                self.table.storage.uri,
                f"the metadata table has no built '{partition}' partition "
                f"(built: {', '.join(self.table.config.metadata_partitions)})",
            )

    def close(self) -> None:
        self.reader.close()

    @property
    def problems(self) -> list[HudiError]:
        """Corrupt or truncated log blocks found while reading (earlier blocks were used)."""
        return list(self.reader.problems)

    # files partition ---------------------------------------------------------------------
    def partitions(self) -> list[str]:
        with self._partitions_lock:  # planner threads share one metadata table: read the record once
            if self._partitions is None:
                names = self._partitions_record()()
                self._partitions = sorted(check_partition_paths([from_metadata_partition(p) for p in names],
                                                                self._files_where(ALL_PARTITIONS_KEY)))
            return list(self._partitions)

    def check_partitions_record(self) -> None:
        """Read the `__all_partitions__` record's bytes (HFile blocks checked,
        log blocks scanned) without decoding its entries yet: damage shows
        now, and a lister that never needs every partition never decodes them."""
        with self._partitions_lock:
            self._partitions_record()

    def _partitions_record(self) -> Callable[[], list[str]]:
        """How to get the live entries of `__all_partitions__`: decoded from
        its base file's value when no log block changed it, else merged.
        The bytes are read at the first call; decoding waits for the caller."""
        if self._partitions_source is None:
            query = KeyQuery(keys=[ALL_PARTITIONS_KEY])
            raw, merged = self.reader.read_split(MdtPartition.FILES, query)
            if len(raw) == 1 and not merged:
                cells = raw[0]
                value = cells.value_of(ALL_PARTITIONS_KEY)
                self._partitions_source = lambda: [] if value is None else list(
                    live_sizes(ALL_PARTITIONS_KEY, value, cells.schema_json, cells.where))
            else:
                names = list(live_files(self.reader.read(MdtPartition.FILES, query).get(ALL_PARTITIONS_KEY)))
                self._partitions_source = lambda: names
        return self._partitions_source

    def files(self, partition: str) -> dict[str, int]:
        return self.files_for([partition])[partition]

    def files_for(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        """File name -> size for each partition, in one pass over the MDT."""
        result = names_of(self.file_table(partitions), partitions)
        release_unused()  # the table's pages go back before a caller builds on the dicts
        return result

    def file_table(self, partitions: list[str]) -> pa.Table:
        """The live files of the partitions: partition, file name, size (one
        row per file), decoded columnar; keys a log block changed are merged
        by the reference rules. All partitions' table is kept in the
        persistent cache when there is one (and says its state, STATE_KEY)."""
        if self.persistent_cache is not None and set(partitions).issuperset(self.partitions()):
            digest = self._state_digest(MdtPartition.FILES, [])
            return with_state(self.persistent_cache.get_or_build(digest, lambda: self._read_file_table(partitions), "files"), digest)
        return self._read_file_table(partitions)

    def _read_file_table(self, partitions: list[str]) -> pa.Table:
        wanted = {to_metadata_partition(p): p for p in partitions}
        query = KeyQuery(keys=list(wanted))
        raw, merged = self.reader.read_split(MdtPartition.FILES, query)
        if len(raw) > 1:  # a key may be in two file groups: the reference merge decides
            return self._file_table_of(entries_of_sizes({k: live_files(r) for k, r in self.reader.read(MdtPartition.FILES, query).items()}), wanted)
        pieces: list[pa.Table] = []
        _decode_base_cells(
            raw,
            columnar=lambda chunk, decoded: pieces.append(live_entries(chunk.keys(), decoded)),
            reference=lambda cells, chunk: pieces.append(entries_of_sizes(
                {k: live_sizes(k, v, cells.schema_json, cells.where) for k, v in zip(chunk.key_list(), chunk.value_list())})),
            columnar_from=COLUMNAR_RECORDS)
        merged_sizes = {key: live_files(record) for key, record in merged.items()}
        return self._file_table_of(pa.concat_tables([*pieces, entries_of_sizes(merged_sizes)]), wanted)  # chunked: no copy

    def _file_table_of(self, entries: pa.Table, wanted: dict[str, str]) -> pa.Table:
        """Entries (key, name, size) as partition, file name, size; a name that is a path is an error."""
        bad = first_path_like(entries.column(NAME))
        if bad is not None:
            key = entries.filter(pc.equal(entries.column(NAME), bad)).column(KEY)[0].as_py()
            # Hudi 1.0.2's rollback of a failed write on a version 6 table records such names, and its own readers then fail
            # on them too: the listing this record belongs to is unknown, so storage is listed instead (a damaged table).
            raise MetadataTableDamaged(self.reader.data_table.storage.uri, self._files_where(key),
                                       f"file name {bad!r} is a path, not a name in the partition")
        partition = pc.take(arrow_values.array(list(wanted.values()), pa.string()),
                            pc.index_in(entries.column(KEY), value_set=arrow_values.array(list(wanted), pa.string()), memory_pool=READ_POOL),
                            memory_pool=READ_POOL)
        return pa.table([partition, entries.column(NAME), entries.column(SIZE)], schema=FILE_TABLE_SCHEMA)

    def _files_where(self, key: str) -> str:
        return f"{self.reader.mdt.storage.uri}/{MdtPartition.FILES} (record {key!r})"

    # Statistics ------------------------------------------------------------------------------
    def column_stats(self, columns: list[str], partitions: list[str] | None = None, ordered: bool = True) -> pa.Table:
        """One row per file, as `metadata.formats.stats_table` lays it out (bounds
        typed by the table schema); by partition and file name unless not
        `ordered` (a plan needs no order, and sorting a million names costs)."""
        self._require(MdtPartition.COLUMN_STATS)
        table = self._stats(MdtPartition.COLUMN_STATS, columns, partitions, per_file=True)
        return in_file_order(table) if ordered else table

    def partition_stats(self, columns: list[str], partitions: list[str] | None = None, ordered: bool = True) -> pa.Table:
        """One row per partition, same columns as column_stats."""
        self._require(MdtPartition.PARTITION_STATS)
        table = self._stats(MdtPartition.PARTITION_STATS, columns, partitions, per_file=False)
        return in_file_order(table) if ordered else table

    def expression_index_stats(self, index: str, column: str, dtype: pa.DataType, partitions: list[str] | None = None) -> pa.Table:
        """One row per file of an expression index (`expr_index_<name>`):
        Hudi keeps the bounds of f(column) as column_stats records named by
        the source column, so the layout is column_stats' with `column`'s
        bounds in f's result type `dtype`. The partition-level records Hudi
        keeps beside them are keyed under a partition no table has, and skipped."""
        self._require(index)
        return self._stats(index, [column], partitions, per_file=True, types={**self.column_types(), column: dtype})

    def keep_column_stats(self, columns: list[str], table: pa.Table) -> None:
        """Keep a whole column_stats table read elsewhere (a streamed plan's
        runs) as `column_stats(columns)` would have kept it (when it fits)."""
        self.stats_cache.put((MdtPartition.COLUMN_STATS, tuple(columns)), table)

    def holds_stats(self, mdt_partition: str, columns: list[str]) -> bool:
        """Whether the whole stats table of these columns is at hand: in memory,
        or kept (or to be kept) in a persistent cache."""
        return self.persistent_cache is not None or self.stats_cache.holds((mdt_partition, tuple(columns)))

    def stats_records(self, mdt_partition: str, columns: list[str], partitions: list[str],
                      types: dict[str, pa.DataType] | None = None) -> dict[str, pa.Table]:
        """Column -> the records (`FlatStats.table_of`) of `columns` in
        `partitions` (a key prefix per column and partition), decoded columnar
        and not cached: a run of a streamed plan. The blocks are read loosely
        (checking each row's prefix cost more), then only these partitions'
        records are kept: a neighbour's may be stale, as its keys' log
        changes were not merged."""
        return self.stats_read(mdt_partition, columns, partitions, types).of_partitions(columns, partitions)

    def stats_read(self, mdt_partition: str, columns: list[str], partitions: list[str],
                   types: dict[str, pa.DataType] | None = None) -> FlatStats:
        """What `stats_records` reads, before its partitions' records are
        picked out (`FlatStats.of_partitions`): a streamed plan picks them on
        the thread that pivots them."""
        raw, merged = self.reader.read_split(mdt_partition, self._run_query(columns, partitions))
        flat = FlatStats(types or self.column_types(), columns=columns)
        fill_flat_stats(flat, raw, merged)
        return flat

    def prefetch_stats_records(self, mdt_partition: str, columns: list[str], partitions: list[str]) -> None:
        """Start inflating the blocks `stats_records` of these partitions will
        read (a streamed plan's next run, while this one decodes)."""
        self.reader.prefetch(mdt_partition, self._run_query(columns, partitions))

    def open_stats(self, mdt_partition: str) -> None:
        """Open a statistics partition's base files and read their block
        indexes: a streamed plan does it on its reading thread while it cuts
        its runs."""
        self.reader.open_base_files(mdt_partition)

    def _run_query(self, columns: list[str], partitions: list[str]) -> KeyQuery:
        """A run's loose prefix query, made once for its read ahead and its read."""
        asked = (tuple(columns), tuple(partitions))
        with self._run_queries_lock:
            query = self._run_queries.get(asked)
        if query is None:
            query = KeyQuery(prefixes=[keys.partition_stats_key(c, p) for c in columns for p in sorted(partitions)], loose=True)
            with self._run_queries_lock:
                self._run_queries[asked] = query
                while len(self._run_queries) > RUN_QUERIES_KEPT:
                    self._run_queries.popitem(last=False)
        return query

    def _stats(self, mdt_partition: str, columns: list[str], partitions: list[str] | None, per_file: bool,
               types: dict[str, pa.DataType] | None = None) -> pa.Table:
        """Few partitions: one prefix seek per column and partition. Many (or
        all): the columns' whole key ranges, read once and filtered to the
        partitions asked for. Either is kept in the stats cache for later calls."""
        if partitions is not None and len(partitions) <= max(PER_PARTITION_SEEKS, len(self.partitions()) // 4):
            wanted = sorted(partitions)

            def some() -> pa.Table:
                prefixes = [keys.partition_stats_key(c, p) for c in columns for p in wanted]
                return self._read_stats(mdt_partition, KeyQuery(prefixes=prefixes), columns, wanted, per_file, types)

            return self.stats_cache.get_or_build((mdt_partition, tuple(columns), tuple(wanted)), some)

        def whole() -> pa.Table:
            return self._read_stats(mdt_partition, KeyQuery(prefixes=[keys.column_index_id(c) for c in columns]), columns, None, per_file,
                                    types)

        def persisted() -> pa.Table:
            if self.persistent_cache is None:
                return whole()
            digest = self._state_digest(mdt_partition, columns, types)
            return with_state(self.persistent_cache.get_or_build(digest, whole), digest)

        table = self.stats_cache.get_or_build((mdt_partition, tuple(columns)), persisted)
        if partitions is None or set(partitions).issuperset(self.partitions()):
            return table  # the cached object itself: what a plan matched its listing to is reused
        return with_state(table.filter(pc.is_in(table.column(PARTITION), value_set=arrow_values.array(partitions, pa.string()))), None)

    def _state_digest(self, mdt_partition: str, columns: list[str], types: dict[str, pa.DataType] | None = None) -> str:
        """What a transposed stats table was read from: the files of the stats
        partition and of the files partition (which partitions are live),
        names and sizes; the valid instants; the columns and their types."""
        types = types or self.column_types()
        parts = [self.table.storage.uri, mdt_partition, *columns, *(str(types.get(c)) for c in columns),
                 *sorted(self.reader.valid_instants)]
        for s in [*self.reader.file_slices(mdt_partition), *self.reader.file_slices(MdtPartition.FILES)]:
            parts += [f"{s.base_file}:{s.base_file_size}", *(f"{name}:{size}" for name, size in zip(s.log_files, s.log_file_sizes))]
        return PersistentStatsCache.digest(parts)

    def column_types(self) -> dict[str, pa.DataType]:
        """Arrow type of every (nested, dotted) column of the table schema."""
        if self._column_types is None:
            types: dict[str, pa.DataType] = {name: pa.string() for name in META_FIELDS}

            def walk(prefix: str, dtype: pa.DataType) -> None:
                types[prefix] = dtype
                if pa.types.is_struct(dtype):
                    for i in range(dtype.num_fields):
                        walk(f"{prefix}.{dtype.field(i).name}", dtype.field(i).type)

            for f in avro_to_arrow_schema(self.table.timeline.avro_schema()):
                walk(f.name, f.type)
            self._column_types = types
        return self._column_types

    def _read_stats(self, mdt_partition: str, query: KeyQuery, columns: list[str], partitions: list[str] | None,
                    per_file: bool, types: dict[str, pa.DataType] | None = None) -> pa.Table:
        """Columnar decoding (`columnar`, `stats_columns`) unless `self.columnar`
        is off; keys a log block changed are merged by the reference rules."""
        types = types or self.column_types()
        if not self.columnar:
            return self._transpose(self.reader.read(mdt_partition, query), columns, partitions, per_file, types)
        raw, merged = self.reader.read_split(mdt_partition, query)
        flat = FlatStats(types, columns=columns)
        fill_flat_stats(flat, raw, merged)
        table = pivot(flat, columns, partitions if partitions is not None else self.partitions(), per_file, types)
        del flat
        if table is not None and table.num_rows > RELEASE_AFTER_ROWS:
            release_unused()  # the records' pages go back before a plan matches its listing (1M files: 50 MiB off the peak)
        if table is None:  # a key in two file groups: let the reference merge decide
            return self._transpose(self.reader.read(mdt_partition, query), columns, partitions, per_file, types)
        return table

    def _transpose(self, records: dict[str, MetadataRecord], columns: list[str], partitions: list[str] | None, per_file: bool,
                   types: dict[str, pa.DataType]) -> pa.Table:
        known = partitions if partitions is not None else self.partitions()
        by_id = {keys.partition_index_id(p): p for p in known}
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for key, record in sorted(records.items()):
            stats = record.column_stats
            if stats is None or stats.is_deleted or stats.column_name not in columns:
                continue
            partition_id = keys.partition_id_of(key)
            partition = by_id.get(partition_id)
            if partition is None:
                log.debug("stats record %s: partition id %s is not a live partition; skipped", key, partition_id)
                continue
            name = stats.file_name if per_file else partition
            row = rows.setdefault((partition, name), {PARTITION: partition, FILE_NAME: name, VALUE_COUNT: None})
            if stats.value_count is not None:
                row[VALUE_COUNT] = max(row[VALUE_COUNT] or 0, stats.value_count)
            row[min_field(stats.column_name)] = stats.min_value
            row[max_field(stats.column_name)] = stats.max_value
            row[null_count_field(stats.column_name)] = stats.null_count
        return build_stats_table([rows[k] for k in sorted(rows)], columns, types)


def fill_flat_stats(flat: FlatStats, raw: list[RawCells], merged: dict[str, MetadataRecord], offsets: tuple[int, int] | None = None) -> None:
    """Stats records into `flat`: base-file cells decoded columnar (only the
    blocks starting in `offsets`, when given), then the records logs changed."""

    def one_by_one(cells: RawCells, chunk: CellChunk) -> None:
        for key, value in zip(chunk.key_list(), chunk.value_list()):
            flat.add_record(key, decode_record(key, value, cells.schema_json, cells.where))

    _decode_base_cells(raw, columnar=lambda chunk, decoded: flat.add_decoded(Spans(chunk.data, *chunk.row_spans(skip=keys.ID_LENGTH)), decoded),
                       reference=one_by_one, offsets=offsets, read=flat.paths_read())
    for key, record in merged.items():
        flat.add_record(key, record)


def _decode_base_cells(raw: list[RawCells], columnar: Callable[[CellChunk, Decoded], None],
                       reference: Callable[[RawCells, CellChunk], None], columnar_from: int = 0,
                       offsets: tuple[int, int] | None = None, read: tuple[str, ...] | None = None) -> None:
    """Hand each chunk of base-file cells to `columnar` with its vectorised
    decoding (of the paths under `read`, at least), or to `reference` (one
    record at a time) when the decoder leaves its shape alone or it holds
    fewer than `columnar_from` records. Bytes that do not decode are an
    error naming the file."""
    for cells in raw:
        parsed = parse_schema_cached(cells.schema_json)
        for chunk in cells.chunks(offsets):
            try:
                if len(chunk) < columnar_from:
                    raise Unsupported("few records: each decoded whole is quicker")
                columnar(chunk, decode_spans(chunk.data, chunk.value_start, chunk.value_length, parsed, read))
            except Unsupported:
                reference(cells, chunk)
            except (ValueError, IndexError, pa.ArrowInvalid) as exc:
                raise HudiFormatError(cells.where, f"metadata records do not decode ({exc})") from None
