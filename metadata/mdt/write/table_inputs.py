"""What every metadata-table write reads from the data table: its schema,
the columns to index, the latest file slices listed from storage, the
instants whose log blocks count."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from metadata.errors import CleanedFilesError, HudiError, IndexWriteError
from metadata.formats.avro_schema import avro_to_arrow_schema, with_meta_fields
from metadata.mdt.file_stats import leaf_type
from metadata.storage.listing import StorageListing
from metadata.table.config import TableConfig
from metadata.table.file_group import FileSlice
from metadata.table.hudi_table import HudiTable
from metadata.table.stored_table import TableParts


def completed_instants(data: TableParts) -> frozenset[str]:
    """Data instants whose log blocks count when a whole log file is read."""
    return frozenset(i.requested_time for i in data.timeline.completed())


def table_schema(data: TableParts) -> pa.Schema:
    """The table's Arrow schema (latest commit's, meta fields included when populated)."""
    try:
        schema = avro_to_arrow_schema(data.timeline.avro_schema())
    except (HudiError, ValueError, KeyError):
        schema = pa.schema([])
    return with_meta_fields(schema) if data.config.populate_meta_fields and "_hoodie_commit_time" not in schema.names else schema


def check_columns(data: TableParts, columns: Sequence[str] | None) -> None:
    """Columns asked for that the table's schema lacks fail before any write."""
    if columns:
        check_columns_in(data, table_schema(data), columns)


def check_columns_in(data: TableParts, schema: pa.Schema, columns: Sequence[str]) -> None:
    unknown = [c for c in columns if leaf_type(schema, c) is None]
    if unknown and schema.names:
        raise IndexWriteError(f"{data.storage.uri}: no column {', '.join(map(repr, unknown))} in the table schema")


def storage_table(data: TableParts, listing: StorageListing | None = None) -> HudiTable:
    """The data table seen through storage listings (never through the metadata table being written)."""
    return HudiTable(data.storage, data.config, data.timeline, listing=listing or StorageListing(data.storage))


def latest_slices_from_storage(data: TableParts, as_of: str, partitions: list[str] | None = None,
                               listing: StorageListing | None = None) -> list[FileSlice]:
    """Latest slices as of a data instant, listed from storage (`listing`: one
    already made, whose folders are not listed again). When a later
    clean (synced in this same run) removed files of that state, today's
    slices: that clean's sync writes these partitions again."""
    table = storage_table(data, listing)
    try:
        return table.view(as_of=as_of).latest_file_slices(partitions)
    except CleanedFilesError:
        return table.view().latest_file_slices(partitions)


def key_targets(slices: list[FileSlice]) -> list[tuple[str, str, str, str]]:
    """(path, partition, file id, base instant) of every file of these slices, for `keys_of_files`."""
    return [(path, s.partition, s.file_id, s.base_instant) for s in slices for path in s.files]


def timeline_is_utc(config: TableConfig) -> bool:
    """Whether instant times are UTC (`hoodie.table.timeline.timezone`; LOCAL by default)."""
    return config.raw.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC"

