"""The merged rows of file slices: a base file read with pyarrow, a slice
with log files merged by hudi-rs's file group reader. Partition columns the
writer left out of the files are added from the path, as strings. Rows can
be read through the table's schema (`conform`), as Hudi's readers do after a
schema evolved. And which slices differ between two states (what a commit
changed)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from metadata.errors import HudiFormatError
from metadata.formats.avro_schema import avro_to_arrow_schema, with_meta_fields
from metadata.storage.options import hudi_rs_options
from metadata.storage.secrets import redact
from metadata.table.config import BaseFileFormat, TableConfig
from metadata.table.file_group import FileSlice
from metadata.table.hudi_table import HudiTable
from metadata.table.partition_path import parse_partition_values
from metadata.util import arrow_values


def file_group_reader(base_uri: str, storage_options: Mapping[str, str], latest_instant: str) -> Any:
    """hudi-rs's file group reader, made from its table so that it reads with
    the table's latest schema: a column added after a base file was written
    then comes from the log records that have it (hudi-rs's bare
    HudiFileGroupReader reads the base file's columns only). Cached per table
    state (`latest_instant`)."""
    with _READERS_LOCK:  # built once: slices read on several threads would each import hudi-rs and read the timeline
        try:
            return _table_reader(base_uri, tuple(sorted(hudi_rs_options(base_uri, storage_options).items())), latest_instant)
        except Exception as exc:  # hudi-rs raises its own error types (a schema it cannot parse): one line, not a traceback
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise HudiFormatError(redact(base_uri), f"hudi-rs cannot open the table to merge log files: {redact(reason)}") from None


_READERS_LOCK = threading.Lock()


@functools.lru_cache(maxsize=8)
def _table_reader(base_uri: str, options: tuple[tuple[str, str], ...], latest_instant: str) -> Any:
    import hudi

    return hudi.HudiTable(base_uri, dict(options) or None).create_file_group_reader_with_options()


def read_by_hudi_rs(base_file: str | None) -> bool:
    """A base file pyarrow's Parquet reader cannot read (Hudi 1.2's Lance files): hudi-rs's file-group reader reads it."""
    return bool(base_file) and not str(base_file).endswith(BaseFileFormat.PARQUET.extension)


def merged_rows(table: HudiTable, piece: FileSlice, columns: Sequence[str] | None = None) -> pa.Table:
    """The merged rows of one file slice; with `columns`, a base file alone is
    read for those columns only (names as the table spells them; a column the
    file lacks is left out, for `conform` to add)."""
    if piece.log_files or read_by_hudi_rs(piece.base_file):
        latest = table.timeline.latest_completed()
        for name in (piece.base_file, *piece.log_files):  # hudi-rs reads them itself: our link check first
            if name:
                table.storage.refuse_links(name)
        reader = file_group_reader(table.base_uri, table.storage.storage_options, latest.requested_time if latest else "")
        try:
            rows = pa.Table.from_batches([reader.read_file_slice_from_paths(piece.base_file or "", list(piece.log_files))])
        except Exception as exc:  # hudi-rs raises its own error types; one line naming the slice, not a traceback
            where = table.storage.display_path(piece.base_file or piece.log_files[0])
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise HudiFormatError(where, f"hudi-rs cannot read this file slice (with its {len(piece.log_files)} log file(s)): {reason}") from None
        if columns is not None and not piece.log_files:  # a Lance base file alone: the projection asked for, as a Parquet one gives
            present = {name.lower(): name for name in rows.column_names}
            rows = rows.select([present[c.lower()] for c in columns if c.lower() in present])
    elif piece.base_file:
        with table.storage.open_random_access(piece.base_file) as handle:
            file = pq.ParquetFile(handle)  # not pq.read_table: it imports pyarrow.dataset, and that pandas
            if columns is None:
                rows = file.read()
            else:
                in_file = {name.lower(): name for name in file.schema_arrow.names}
                rows = file.read(columns=[in_file[c.lower()] for c in columns if c.lower() in in_file])
    else:
        return pa.table({})
    config = table.config
    values = parse_partition_values(piece.partition, config.partition_fields, config.hive_style_partitioning,
                                    config.url_encode_partitioning)
    present = {name.lower(): name for name in rows.column_names}
    null_in_default = set(read_from_path(config, rows.schema))
    for field, value in values.items():
        name = present.get(field.lower())
        if name is None:
            rows = rows.append_column(field, arrow_values.array([value] * rows.num_rows, pa.string()))
        elif value is None and field in null_in_default:
            index = rows.schema.get_field_index(name)
            rows = rows.set_column(index, rows.schema.field(index), pa.nulls(rows.num_rows, rows.schema.field(index).type))
    return rows


def read_from_path(config: TableConfig, schema: pa.Schema) -> tuple[str, ...]:
    """Partition fields whose values readers take from the path, as Hudi's, Hive's and Trino's do: those
    whose path holds the value as written. In Hive's default partition they read as NULL: Hudi writes
    NULL and '' there alike, and the files keep the ''."""
    types = {f.name.lower(): f.type for f in schema}
    return tuple(f for f in config.partition_fields
                 if not config.key_generator.why_path_is_not_the_value(f, pa.types.is_timestamp(types.get(f.lower(), pa.string()))))


def changed_slices(before: Iterable[FileSlice], after: Iterable[FileSlice]) -> tuple[list[FileSlice], list[FileSlice]]:
    """Between two states of some partitions: the slices of the file groups
    that differ, as they were and as they are (by partition and file id)."""
    old = {(s.partition, s.file_id): s for s in before}
    new = {(s.partition, s.file_id): s for s in after}
    gone = [s for k, s in sorted(old.items()) if k not in new or new[k].files != s.files]
    came = [s for k, s in sorted(new.items()) if k not in old or old[k].files != s.files]
    return gone, came


def table_read_schema(table: HudiTable) -> pa.Schema:
    """The schema readers give rows in: the table's (latest commit's), meta fields first."""
    return with_meta_fields(avro_to_arrow_schema(table.avro_schema()))


def conform(rows: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """Rows as the table's schema reads them: each column cast to its type
    (Hudi's promotions: int to long, float, double or string, long to double
    or string, ...), columns added since as nulls, columns dropped since left
    out. A value the table's type cannot hold is an error naming the file."""
    present = {name.lower(): name for name in rows.column_names}
    columns = []
    for target in schema:
        name = present.get(target.name.lower())
        if name is None:
            columns.append(pa.nulls(rows.num_rows, target.type))
            continue
        column = rows.column(name)
        if column.type != target.type:
            try:
                column = column.cast(target.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise HudiFormatError(where, f"column {target.name} holds {column.type}, which the table's {target.type} "
                                             f"cannot read ({exc})") from None
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def rows_of_slices(table: HudiTable, slices: Iterable[FileSlice], columns: Sequence[str] | None = None) -> pa.Table | None:
    """The merged rows of many slices in one table (schemas unified), or None when they hold none."""
    parts = []
    for piece in slices:
        rows = merged_rows(table, piece)
        if rows.num_rows:
            parts.append(rows.select(list(columns)) if columns is not None else rows)
    return pa.concat_tables(parts, promote_options="permissive") if parts else None
