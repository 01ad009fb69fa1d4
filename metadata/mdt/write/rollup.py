"""Partition-level statistics of a sync: each touched partition's latest
slices rolled up from the file-level ranges the metadata table already
holds plus the instant's new ones. partition_stats and every expression
index's partition records are made here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from metadata.errors import HudiError
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.file_stats import ColumnRange, leaf_type, merge_ranges, roll_up
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.keys import column_stats_key, partition_index_id, partition_stats_key
from metadata.mdt.metadata_table import fill_flat_stats
from metadata.mdt.reader import MetadataTableReader
from metadata.mdt.record_builders import range_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.stats_columns import FlatStats
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.table_inputs import latest_slices_from_storage
from metadata.table.file_group import FileSlice
from metadata.util import arrow_values

PARTITION_STATS_PER_RUN = 200  # a sync rolls touched partitions up this many at a time

RangesOf = Callable[[Sequence[str]], list[ColumnRange]]


class PartitionRollUp:
    """Roll-ups of one sync step. `source` is the metadata partition holding
    the file-level ranges; `ranges_of` reads a file's ranges where `source`
    lacks them (column_stats's own columns by default)."""

    def __init__(self, ctx: WriteContext, columns: list[str], schema: pa.Schema,
                 source: str = MdtPartition.COLUMN_STATS.value, ranges_of: RangesOf | None = None,
                 key_of: Callable[[str, str], str] = partition_stats_key) -> None:
        self.ctx = ctx
        self.columns = columns
        self.schema = schema
        self.source = source
        self.ranges_of = ranges_of or (lambda paths: ctx.file_ranges([(p, None) for p in paths], columns, schema))
        self.key_of = key_of

    def records(self, ts: str, partitions: list[str], new_ranges: dict[str, list[ColumnRange]], as_of: str | None = None) -> dict[str, bytes]:
        """Partition-level records of `partitions` of data instant `ts`, over the
        latest slices as of `as_of` (default `ts`: later when the metadata table
        already holds later instants, as when a compaction completes after
        writes that came after it), a run of partitions at a time, Avro-encoded
        as they are made (a commit over 10,000 partitions makes 70,000: 150 MB as dicts)."""
        if not partitions:
            return {}
        out: dict[str, bytes] = {}
        # Runs in the order of the partitions' ids, which is the keys' order: a
        # run's records then lie in one stretch of each column's keys, so every
        # block is inflated once in the whole sync, not once per run it holds
        # partitions of (partitions in name order scatter over all blocks).
        ordered = sorted(partitions, key=partition_index_id)
        reader = MetadataTableReader(self.ctx.data)  # one reader for every run: opening the metadata table costs seconds at scale
        try:
            for start in range(0, len(ordered), PARTITION_STATS_PER_RUN):
                self._run(out, reader, as_of or ts, ordered[start:start + PARTITION_STATS_PER_RUN], new_ranges)
        finally:
            reader.close()
        return out

    def _run(self, out: dict[str, bytes], reader: MetadataTableReader, as_of: str, chunk: list[str],
             new_ranges: dict[str, list[ColumnRange]]) -> None:
        """A run's slices and held statistics are read for the run only, so
        memory follows a run, not the table (a commit may touch every partition)."""
        slices_of: dict[str, list[FileSlice]] = {}
        for s in latest_slices_from_storage(self.ctx.data, as_of, chunk):
            slices_of.setdefault(s.partition, []).append(s)
        latest = {path.rsplit("/", 1)[-1]: p for p in chunk for s in slices_of.get(p, []) for path in s.files}
        held = self._held(reader, chunk, {name: p for name, p in latest.items() if name not in new_ranges})
        known = held.names | set(new_ranges)
        missing = [path for p in chunk for s in slices_of.get(p, []) for path in s.files if path.rsplit("/", 1)[-1] not in known]
        if missing:
            for r in self.ranges_of(missing):
                held.per_file.setdefault(r.file_name, []).append(r)
        for partition in chunk:
            ranges: list[ColumnRange] = []
            summed = dict(held.summed.get(partition, {}))
            for s in slices_of.get(partition, []):
                for path in s.files:
                    name = path.rsplit("/", 1)[-1]
                    if name in new_ranges:  # the new files' ranges win
                        ranges += new_ranges[name]
                        continue
                    if summed and name in held.summed_names:  # the held files' sums stand where the first of them is
                        ranges += summed.values()
                        summed = {}
                    ranges += held.per_file.get(name, [])
            for column, r in roll_up(ranges, partition).items():
                key = self.key_of(column, partition)
                out[key] = encode_record(range_record(key, r, self.ctx.version, partition_stats=True), self.ctx.schema_json)

    def _held(self, reader: MetadataTableReader, partitions: list[str], latest: dict[str, str]) -> _Held:
        """The live ranges `source` holds for these latest files (name ->
        partition): decoded columnar and summed per partition and column in
        Arrow; records typed by the reference rules (logs' merged records,
        bounds a wrapper does not type) one range per file."""
        query = KeyQuery(prefixes=[column_stats_key(c, p, "")[:24] for c in self.columns for p in partitions])
        try:
            raw, merged = reader.read_split(self.source, query)
        except HudiError:
            return _Held()
        types = {c: leaf_type(self.schema, c) or pa.string() for c in self.columns}
        flat = FlatStats(types, sizes=True, columns=self.columns)
        fill_flat_stats(flat, raw, merged)
        held = _Held()
        names = arrow_values.array(list(latest), pa.string())
        partitions_of = arrow_values.array(list(latest.values()), pa.string())
        for column in self.columns:
            dtype = types[column]
            for piece in flat.pieces.get(column, []):
                rows = piece.filter(pc.invert(pc.fill_null(piece.column("deleted"), arrow_values.TRUE)))
                at = pc.index_in(rows.column("file"), value_set=names)
                rows = rows.filter(pc.is_valid(at))
                if not rows.num_rows:
                    continue
                held.summed_names.update(rows.column("file").to_pylist())
                sums = pa.table({"partition": pc.take(partitions_of, pc.drop_null(at)), "min": rows.column("min"), "max": rows.column("max"),
                                 **{f: rows.column(f) for f in _SUMMED}}).group_by("partition", use_threads=False).aggregate(
                    [("min", "min"), ("max", "max"), *((f, "sum") for f in _SUMMED)])
                for row in sums.to_pylist():
                    piece_range = ColumnRange(row["partition"], column, dtype, row["min_min"], row["max_max"],
                                              *(row[f"{f}_sum"] or 0 for f in _SUMMED))
                    per_column = held.summed.setdefault(row["partition"], {})
                    per_column[column] = merge_ranges(per_column.get(column), piece_range)
            python = flat.python.get(column)
            if python is not None:
                for name, low, high, values, nulls, deleted, size, uncompressed in zip(
                        python.files, python.mins, python.maxs, python.value_counts, python.null_counts, python.deleted,
                        python.total_sizes, python.total_uncompressed_sizes):
                    if not deleted and name in latest:
                        held.per_file.setdefault(name, []).append(
                            ColumnRange(name, column, dtype, low, high, nulls or 0, values or 0, size or 0, uncompressed or 0))
        held.names = held.summed_names | set(held.per_file)
        return held


_SUMMED = ("null_count", "value_count", "total_size", "total_uncompressed_size")  # in ColumnRange's order


@dataclass
class _Held:
    """What the metadata table holds for a run's latest files: per partition
    and column the sum of the records decoded columnar, per file the ranges
    of the others, and the names of the files with any record."""

    summed: dict[str, dict[str, ColumnRange]] = field(default_factory=dict)
    summed_names: set[str] = field(default_factory=set)
    per_file: dict[str, list[ColumnRange]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
