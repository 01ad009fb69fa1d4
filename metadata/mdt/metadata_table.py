"""MetadataTable: the public face of the metadata table (RFC-15, RFC-27).

Partitions are named as the data table names them ("" when not
partitioned); the MDT's "." stays inside.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

from metadata.avro_schema import META_FIELDS, avro_to_arrow_schema
from metadata.errors import HudiError, HudiFormatError, MetadataTableUnavailable
from metadata.mdt import keys
from metadata.mdt.reader import KeyQuery, MetadataTableReader
from metadata.mdt.records import ALL_PARTITIONS_KEY, MetadataRecord, live_files
from metadata.partition_path import check_partition_path, from_metadata_partition, to_metadata_partition
from metadata.stats_table import (
    FILE_NAME,
    PARTITION,
    VALUE_COUNT,
    build_stats_table,
    max_field,
    min_field,
    null_count_field,
)
from metadata.stored_table import StoredTable, TableParts

log = logging.getLogger(__name__)

FILES = "files"
COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"


class MetadataTable:
    def __init__(self, table: StoredTable, reader: MetadataTableReader) -> None:
        self.table = table
        self.reader = reader
        self._column_types: dict[str, pa.DataType] | None = None

    @classmethod
    def open(cls, table_or_path: StoredTable | str) -> MetadataTable:
        """The metadata table of a data table (a `HudiTable`, its parts, or a
        path); raises MetadataTableUnavailable (with the reason) when absent
        or unusable."""
        table = TableParts.load(table_or_path) if isinstance(table_or_path, str) else table_or_path
        if FILES not in table.config.metadata_partitions:
            raise MetadataTableUnavailable(
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
        records = self.reader.read(FILES, KeyQuery(keys=[ALL_PARTITIONS_KEY]))
        where = self._files_where(ALL_PARTITIONS_KEY)
        return sorted(check_partition_path(from_metadata_partition(p), where) for p in live_files(records.get(ALL_PARTITIONS_KEY)))

    def files(self, partition: str) -> dict[str, int]:
        return self.files_for([partition])[partition]

    def files_for(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        """File name -> size for each partition, in one pass over the MDT."""
        wanted = {to_metadata_partition(p): p for p in partitions}
        records = self.reader.read(FILES, KeyQuery(keys=list(wanted)))
        result = {name: live_files(records.get(key)) for key, name in wanted.items()}
        for partition, files in result.items():
            for file_name in files:
                if "/" in file_name or "\\" in file_name or file_name in (".", ".."):
                    raise HudiFormatError(self._files_where(partition), f"file name {file_name!r} is a path, not a name in the partition")
        return result

    def _files_where(self, key: str) -> str:
        return f"{self.reader.mdt.storage.uri}/{FILES} (record {key!r})"

    # Statistics ------------------------------------------------------------------------------
    def column_stats(self, columns: list[str], partitions: list[str] | None = None) -> pa.Table:
        """One row per file, as `metadata.stats_table` lays it out (bounds
        typed by the table schema)."""
        self._require(COLUMN_STATS)
        records = self.reader.read(COLUMN_STATS, KeyQuery(prefixes=self._prefixes(columns, partitions)))
        return self._transpose(records, columns, partitions, per_file=True)

    def partition_stats(self, columns: list[str], partitions: list[str] | None = None) -> pa.Table:
        """One row per partition, same columns as column_stats."""
        self._require(PARTITION_STATS)
        records = self.reader.read(PARTITION_STATS, KeyQuery(prefixes=self._prefixes(columns, partitions)))
        return self._transpose(records, columns, partitions, per_file=False)

    @staticmethod
    def _prefixes(columns: list[str], partitions: list[str] | None) -> list[str]:
        if partitions is None:
            return [keys.column_index_id(c) for c in columns]
        return [keys.partition_stats_key(c, p) for c in columns for p in partitions]

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

    def _transpose(self, records: dict[str, MetadataRecord], columns: list[str], partitions: list[str] | None, per_file: bool) -> pa.Table:
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
        return build_stats_table([rows[k] for k in sorted(rows)], columns, self.column_types())
