"""Partition-level statistics of a sync: each touched partition's latest
slices rolled up from the file-level ranges the metadata table already
holds plus the instant's new ones. partition_stats and every expression
index's partition records are made here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from metadata.errors import HudiError
from metadata.file_group import FileSlice
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.file_stats import ColumnRange, leaf_type, roll_up
from metadata.mdt.keys import column_stats_key, partition_stats_key
from metadata.mdt.reader import KeyQuery, MetadataTableReader
from metadata.mdt.record_schema import range_record
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.table_inputs import latest_slices_from_storage, range_of

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

    def records(self, ts: str, partitions: list[str], new_ranges: dict[str, list[ColumnRange]]) -> dict[str, dict[str, Any]]:
        """Partition-level records of `partitions` as of data instant `ts`, a run of partitions at a time."""
        if not partitions:
            return {}
        out: dict[str, dict[str, Any]] = {}
        reader = MetadataTableReader(self.ctx.data)  # one reader for every run: opening the metadata table costs seconds at scale
        try:
            for start in range(0, len(partitions), PARTITION_STATS_PER_RUN):
                self._run(out, reader, ts, partitions[start:start + PARTITION_STATS_PER_RUN], new_ranges)
        finally:
            reader.close()
        return out

    def _run(self, out: dict[str, dict[str, Any]], reader: MetadataTableReader, ts: str, chunk: list[str],
             new_ranges: dict[str, list[ColumnRange]]) -> None:
        """A run's slices and held statistics are read for the run only, so
        memory follows a run, not the table (a commit may touch every partition)."""
        slices_of: dict[str, list[FileSlice]] = {}
        for s in latest_slices_from_storage(self.ctx.data, ts, chunk):
            slices_of.setdefault(s.partition, []).append(s)
        held = self._held_ranges(reader, chunk)
        held.update(new_ranges)  # the new files' ranges win
        missing = [path for p in chunk for s in slices_of.get(p, []) for path in s.files if path.rsplit("/", 1)[-1] not in held]
        if missing:
            for r in self.ranges_of(missing):
                held.setdefault(r.file_name, []).append(r)
        for partition in chunk:
            ranges = [r for s in slices_of.get(partition, []) for path in s.files for r in held.get(path.rsplit("/", 1)[-1], [])]
            for column, r in roll_up(ranges, partition).items():
                key = self.key_of(column, partition)
                out[key] = range_record(key, r, self.ctx.version, partition_stats=True)

    def _held_ranges(self, reader: MetadataTableReader, partitions: list[str]) -> dict[str, list[ColumnRange]]:
        """File name -> the live ranges `source` holds for these partitions' files."""
        try:
            held = reader.read(self.source, KeyQuery(prefixes=[column_stats_key(c, p, "")[:24] for c in self.columns for p in partitions]))
        except HudiError:
            held = {}
        types: dict[str, pa.DataType] = {}
        by_file: dict[str, list[ColumnRange]] = {}
        for record in held.values():
            stats = record.column_stats
            if stats and not stats.is_deleted:
                dtype = types.get(stats.column_name)
                if dtype is None:
                    dtype = types[stats.column_name] = leaf_type(self.schema, stats.column_name) or pa.string()
                by_file.setdefault(stats.file_name, []).append(range_of(stats, dtype))
        return by_file
