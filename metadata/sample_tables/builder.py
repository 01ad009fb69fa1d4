"""A small writer of Hudi-format tables, for tests, samples and benchmarks.

It writes what Apache Hudi writes for the same operations: Parquet base
files with the five meta columns, MOR log files with AVRO_DATA and DELETE
blocks, the timeline (layout 1 for table v6, layout 2 for v8) with commit,
replace, clean, rollback and compaction metadata, `hoodie.properties` and
partition metadata files. It also makes the awkward states on purpose: a
commit left inflight, a pending compaction, a rollback.

It is not a general writer: it keeps the table's rows in memory and puts
each commit's inserts of a partition into one new file group (or several,
with `max_rows_per_file`).
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from metadata.formats.avro_schema import META_FIELDS, arrow_to_avro_schema, with_meta_fields
from metadata.formats.bloom_filter import FOOTER_KEY, FOOTER_TYPE_KEY, build_bloom_filter
from metadata.formats.cdc import CDC_ENABLED_KEY, CDC_MODE_KEY, CdcMode, CdcRecord, encode_cdc_block
from metadata.formats.log_format import (
    BlockType,
    HeaderKey,
    LogBlock,
    encode_avro_records,
    encode_block,
    encode_delete_records,
)
from metadata.sample_tables.mdt_files import FilesPartitionWriter
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig, TableType
from metadata.table.file_naming import BaseFileName, LogFileName
from metadata.table.key_generator import TimestampPartitioning
from metadata.table.partition_path import format_partition_path
from metadata.table.record_key import RecordKeyError, RecordKeyRule
from metadata.timeline.commit_metadata import CommitMetadata, WriteStat
from metadata.timeline.instant import INSTANT_SECONDS_FORMAT, Action
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import CLEAN_METADATA, COMPACTION_PLAN, ROLLBACK_METADATA, commit_metadata_schema
from metadata.util.arrow_memory import empty_table


@dataclass
class _Group:
    partition: str
    file_id: str
    base_name: str | None
    base_instant: str
    rows: pa.Table
    logs: list[str] = field(default_factory=list)  # log names of the latest slice
    older_files: list[str] = field(default_factory=list)  # names of files in older slices
    replaced: bool = False


@dataclass
class _Staged:
    """What an instant changes; applied to the builder's state on completion."""

    action: Action
    operation: str
    groups: dict[tuple[str, str], _Group] = field(default_factory=dict)
    stats: list[WriteStat] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    written_files: list[str] = field(default_factory=list)  # relative paths
    dropped_partitions: set[str] = field(default_factory=set)


class TableBuilder:
    """Builds one Hudi table below `base_path`; each write is one instant."""

    def __init__(
        self,
        base_path: str,
        schema: pa.Schema,
        *,
        name: str = "sample",
        table_type: TableType | str = TableType.COPY_ON_WRITE,
        version: int = 6,
        partition_fields: Iterable[str] = (),
        hive_style: bool = True,
        url_encode: bool = False,
        record_key: str | tuple[str, ...] = "id",
        precombine_field: str | None = None,
        start_time: str = "20240101000000000",
        max_rows_per_file: int | None = None,
        metadata_table: bool = False,
        filesystem: pafs.FileSystem | None = None,
        key_generator: str | None = None,
        timestamp_output_format: str = "yyyy/MM/dd/HH",
        timestamp_type: str | None = None,
        timestamp_zone: str = "UTC",
        timestamp_input_format: str = "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        bloom_filter_entries: int | None = 1000,
        cdc_mode: CdcMode | None = None,
        populate_meta_fields: bool = True,
    ) -> None:
        """`key_generator` "TIMESTAMP" writes the one partition field (epoch
        milliseconds or `timestamp_type`, or text in `timestamp_input_format`)
        as `timestamp_output_format` in `timestamp_zone`, as Hudi's
        TimestampBasedKeyGenerator does; "CUSTOM" takes fields as
        `name:SIMPLE` / `name:TIMESTAMP`, as Hudi's CustomKeyGenerator does.
        Base files carry Hudi's record-key bloom filter (DYNAMIC_V0) sized for
        `bloom_filter_entries` keys (Hudi's hoodie.index.bloom.num_entries; None: no filter).
        `cdc_mode` writes change-data logs (hoodie.table.cdc.enabled) in that
        supplemental logging mode beside each base file a write rewrites, as
        Hudi's merge handle does (a new file group's inserts get none: readers
        infer them).
        `populate_meta_fields=False` writes a table with virtual keys
        (hoodie.populate.meta.fields=false): the five meta columns are in every
        file but null, and readers compute record keys with the key generator."""
        if version not in (6, 8):
            raise ValueError(f"the builder writes table versions 6 and 8, not {version}")
        if metadata_table and version < 8:
            raise ValueError("the builder writes metadata tables for table version 8 only")
        if not populate_meta_fields and cdc_mode is not None:
            raise ValueError("change-data logs need the meta fields; Hudi refuses CDC on a table without them")
        if table_type not in tuple(TableType):
            raise ValueError(f"table_type must be COPY_ON_WRITE or MERGE_ON_READ, not {table_type!r}")
        self.storage = Storage.open(base_path, filesystem)
        self.schema = schema
        self.name = name
        self.table_type = TableType(table_type)
        self.version = version
        specs = [f.partition(":") for f in partition_fields]
        self.partition_fields = tuple(name for name, _, _ in specs)
        self.partition_field_types = {name: kind.upper() or "SIMPLE" for name, _, kind in specs}
        if key_generator not in (None, "TIMESTAMP", "CUSTOM"):
            raise ValueError(f"key_generator is TIMESTAMP, CUSTOM or None (SIMPLE/COMPLEX), not {key_generator!r}")
        if key_generator == "TIMESTAMP":
            if len(self.partition_fields) != 1:
                raise ValueError("a TIMESTAMP key generator partitions on one field")
            self.partition_field_types = {self.partition_fields[0]: "TIMESTAMP"}
        self.key_generator = key_generator
        self.timestamp_output_format = timestamp_output_format
        self.timestamp_type = timestamp_type
        self.timestamp_zone = timestamp_zone
        self.timestamp_input_format = timestamp_input_format
        self.hive_style = hive_style
        self.url_encode = url_encode
        self.record_key = (record_key,) if isinstance(record_key, str) else tuple(record_key)
        self.precombine_field = precombine_field
        self.max_rows_per_file = max_rows_per_file
        for f in self.record_key + self.partition_fields:
            if f not in schema.names:
                raise ValueError(f"field {f!r} is not in the schema ({', '.join(schema.names)})")
        self.full_schema = with_meta_fields(schema)
        self.avro_schema = arrow_to_avro_schema(self.full_schema, f"{name}_record", f"hoodie.{name}")
        self._clock = datetime.strptime(start_time[:14], INSTANT_SECONDS_FORMAT)
        self._groups: dict[tuple[str, str], _Group] = {}
        self._staged: dict[str, _Staged] = {}
        self._plans: dict[str, dict[tuple[str, str], pa.Table]] = {}
        self._task = 0
        self._partitions_written: set[str] = set()
        self.metadata_table = metadata_table
        self.bloom_filter_entries = bloom_filter_entries
        self.cdc_mode = cdc_mode
        self.populate_meta_fields = populate_meta_fields
        self._write_properties()
        self._mdt = FilesPartitionWriter(self.storage, name, self.next_instant_time) if metadata_table else None
        self._mdt_partitions: set[str] = set()

    # Basics -------------------------------------------------------------------
    @property
    def timeline_path(self) -> str:
        return self.config.timeline_path

    @property
    def is_mor(self) -> bool:
        return self.config.is_mor

    def next_instant_time(self) -> str:
        self._clock += timedelta(seconds=1)
        return self._clock.strftime(INSTANT_SECONDS_FORMAT) + "000"

    def _token(self) -> str:
        self._task += 1
        return f"{self._task % 8}-{self._task}-{self._task + 1}"

    def _write_properties(self) -> None:
        key_type = self.key_generator or (
            "COMPLEX" if len(self.record_key) > 1 or len(self.partition_fields) > 1
            else "NON_PARTITION" if not self.partition_fields else "SIMPLE"
        )
        class_names = {"SIMPLE": "SimpleKeyGenerator", "COMPLEX": "ComplexKeyGenerator", "NON_PARTITION": "NonpartitionedKeyGenerator",
                       "TIMESTAMP": "TimestampBasedKeyGenerator", "CUSTOM": "CustomKeyGenerator"}
        extra = {
            "hoodie.archivelog.folder": "archived",
            "hoodie.table.create.schema": json.dumps(arrow_to_avro_schema(self.schema, f"{self.name}_record", f"hoodie.{self.name}")),
        }
        if self.version >= 8:
            extra["hoodie.table.keygenerator.type"] = key_type  # Hudi 1.x records the type
        else:
            extra["hoodie.table.keygenerator.class"] = f"org.apache.hudi.keygen.{class_names[key_type]}"
        if self.key_generator == "CUSTOM" and self.version >= 8:
            extra["hoodie.table.partition.fields"] = ",".join(f"{f}:{self.partition_field_types[f]}" for f in self.partition_fields)
        extra.update(self.timestamp_properties)
        if self.version >= 8:
            extra["hoodie.record.merge.mode"] = "COMMIT_TIME_ORDERING"
        if self.cdc_mode is not None:  # Hudi 1.x spells the mode as its enum, 0.14 in lower case
            extra.update({CDC_ENABLED_KEY: "true", CDC_MODE_KEY: self.cdc_mode.value if self.version >= 8 else self.cdc_mode.value.lower()})
        self.config = TableConfig.new(
            self.name, self.table_type, self.version,
            record_key_fields=self.record_key, partition_fields=self.partition_fields,
            precombine_field=self.precombine_field, hive_style_partitioning=self.hive_style,
            url_encode_partitioning=self.url_encode, metadata_partitions=("files",) if self.metadata_table else (),
            populate_meta_fields=self.populate_meta_fields, extra=extra,
        )
        self.config.write(self.storage)

    def add_columns(self, *fields: pa.Field) -> None:
        """Evolve the schema: later commits record it; older rows read the
        new columns as null."""
        for new_field in fields:
            if new_field.name in self.schema.names:
                raise ValueError(f"column {new_field.name!r} already exists")
        self.schema = pa.schema(list(self.schema) + list(fields))
        self._schema_changed()
        for group in self._groups.values():
            for new in fields:
                group.rows = group.rows.append_column(new, pa.nulls(group.rows.num_rows, new.type))

    def evolve_column(self, name: str, new_type: pa.DataType) -> None:
        """Change a column's type (Hudi's promotions: int to long, float,
        double or string; long to double or string; ...): later commits
        record the new schema and the files they write store the new type;
        files already written keep the old one."""
        index = self.schema.get_field_index(name)
        if index < 0:
            raise ValueError(f"no column {name!r}")
        self.schema = self.schema.set(index, pa.field(name, new_type))
        self._schema_changed()
        for group in self._groups.values():
            column = group.rows.column(name)
            group.rows = group.rows.set_column(group.rows.schema.get_field_index(name), name, column.cast(new_type))

    def drop_columns(self, *names: str) -> None:
        """Drop columns: later commits neither record nor write them; files
        already written keep them (readers of the table schema ignore them)."""
        for name in names:
            if name not in self.schema.names or name in self.record_key + self.partition_fields:
                raise ValueError(f"column {name!r} cannot be dropped (absent, a key or a partition field)")
        self.schema = pa.schema([f for f in self.schema if f.name not in names])
        self._schema_changed()
        for group in self._groups.values():
            group.rows = group.rows.drop_columns(list(names))

    def _schema_changed(self) -> None:
        self.full_schema = with_meta_fields(self.schema)
        self.avro_schema = arrow_to_avro_schema(self.full_schema, f"{self.name}_record", f"hoodie.{self.name}")

    # Timeline files --------------------------------------------------------------
    def _write_pending(self, ts: str, action: Action, requested: bytes = b"") -> None:
        self.storage.write_bytes(join(self.timeline_path, f"{ts}.{action}.requested"), requested)
        inflight = f"{ts}.inflight" if action is Action.COMMIT else f"{ts}.{action}.inflight"
        self.storage.write_bytes(join(self.timeline_path, inflight), b"")

    def _write_completed(self, ts: str, action: Action, content: bytes) -> str:
        if self.version >= 8:
            completion = self.next_instant_time()
            name = f"{ts}_{completion}.{action}"
        else:
            name = f"{ts}.{action}"
        self.storage.write_bytes(join(self.timeline_path, name), content)
        return name

    def _encode_commit(self, meta: CommitMetadata, replace: bool) -> bytes:
        data = meta.to_dict()
        if self.version < 8:
            return json.dumps(data, indent=2).encode()
        data["version"] = 1
        if replace:
            data.setdefault("partitionToReplaceFileIds", {})
        return encode_avro_instant(commit_metadata_schema(replace), data)

    # Rows ------------------------------------------------------------------------------
    def _as_table(self, rows: pa.Table | list[dict[str, Any]]) -> pa.Table:
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, schema=self.schema)
        return table.select(self.schema.names).cast(self.schema)

    def record_keys(self, table: pa.Table) -> list[str]:
        """The rows' record keys as the table's key generator writes them."""
        for name in self.record_key:
            if table.column(name).null_count == table.num_rows and table.num_rows:
                raise ValueError(f"record key field {name!r} is null in a row; Hudi refuses such rows")
        rule = RecordKeyRule.of(self.config)
        try:
            return rule.computed(table, self.name).to_pylist()
        except RecordKeyError:  # other key types: their text as Python prints it (meta fields carry it)
            if rule.virtual:
                raise
            columns = [table.column(f).to_pylist() for f in self.record_key]
            return [rule.texts(tuple(str(v) for v in values))[0] for values in zip(*columns)]

    def partition_of_rows(self, table: pa.Table) -> list[str]:
        if not self.partition_fields:
            return [""] * table.num_rows
        columns = [[self._path_value(f, v) for v in table.column(f).to_pylist()] for f in self.partition_fields]
        return [
            format_partition_path(dict(zip(self.partition_fields, values)), self.partition_fields, self.hive_style, self.url_encode,
                                  formatted=[f for f, kind in self.partition_field_types.items() if kind == "TIMESTAMP"])
            for values in zip(*columns)
        ]

    @property
    def timestamp_properties(self) -> dict[str, str]:
        """Hudi's TimestampBasedKeyGenerator settings for the TIMESTAMP field."""
        if self.key_generator is None:
            return {}
        timestamp_field = next(f for f, kind in self.partition_field_types.items() if kind == "TIMESTAMP")
        is_text = pa.types.is_string(self.schema.field(timestamp_field).type)
        props = {
            "hoodie.keygen.timebased.timestamp.type": self.timestamp_type or ("DATE_STRING" if is_text else "EPOCHMILLISECONDS"),
            "hoodie.keygen.timebased.output.dateformat": self.timestamp_output_format,
            "hoodie.keygen.timebased.timezone": self.timestamp_zone,
        }
        if is_text:
            props["hoodie.keygen.timebased.input.dateformat"] = self.timestamp_input_format
        return props

    @cached_property
    def _timestamp_partitioning(self) -> TimestampPartitioning:
        partitioning = TimestampPartitioning.from_properties(self.timestamp_properties)
        if isinstance(partitioning, str):
            raise ValueError(f"the builder cannot write this TIMESTAMP partitioning: {partitioning}")
        return partitioning

    def _path_value(self, field: str, value: Any) -> Any:
        """What the key generator puts in the path for a value of `field`."""
        if self.partition_field_types.get(field) != "TIMESTAMP" or value is None:
            return value
        text = self._timestamp_partitioning.path_value(value)
        if text is None:
            raise ValueError(f"{field} value {value!r} has no partition path under {self.timestamp_properties}")
        return text

    def _with_meta(self, table: pa.Table, ts: str, keys: list[str], partition: str, file_name: str) -> pa.Table:
        n = table.num_rows
        meta = {
            "_hoodie_commit_time": pa.array([ts] * n, pa.string()),
            "_hoodie_commit_seqno": pa.array([f"{ts}_{self._task}_{i}" for i in range(n)], pa.string()),
            "_hoodie_record_key": pa.array(keys, pa.string()),
            "_hoodie_partition_path": pa.array([partition] * n, pa.string()),
            "_hoodie_file_name": pa.array([file_name] * n, pa.string()),
        }
        columns = [meta[name] for name in META_FIELDS] + [table.column(n_) for n_ in self.schema.names]
        return pa.Table.from_arrays(columns, schema=self.full_schema)

    def _with_footer(self, table: pa.Table) -> pa.Table:
        """Rows with the footer metadata Hudi's writer adds: the record keys'
        bloom filter and their min and max."""
        if self.bloom_filter_entries is None or not table.num_rows:
            return table
        keys = table.column("_hoodie_record_key").to_pylist()
        found = build_bloom_filter(keys, self.bloom_filter_entries)
        footer = {**(table.schema.metadata or {}), FOOTER_KEY: found.text.encode(), FOOTER_TYPE_KEY: found.type_code.encode(),
                  b"hoodie_min_record_key": min(keys).encode(), b"hoodie_max_record_key": max(keys).encode()}
        return table.replace_schema_metadata(footer)

    def _stored(self, table: pa.Table) -> pa.Table:
        """Rows as the files hold them: without meta fields (virtual keys) the
        meta columns are there, all null."""
        if self.populate_meta_fields:
            return table
        for name in META_FIELDS:
            table = table.set_column(table.schema.get_field_index(name), name, pa.nulls(table.num_rows, pa.string()))
        return table

    def _write_parquet(self, partition: str, name: str, table: pa.Table) -> int:
        buf = io.BytesIO()
        pq.write_table(self._stored(self._with_footer(table)), buf, compression="snappy")
        data = buf.getvalue()
        self.storage.write_bytes(join(partition, name), data)
        return len(data)

    def _ensure_partition(self, partition: str, ts: str) -> None:
        if partition in self._partitions_written:
            return
        depth = len(partition.split("/")) if partition else 0
        text = f"#partition metadata\ncommitTime={ts}\npartitionDepth={depth}\n"
        self.storage.write_bytes(join(partition, ".hoodie_partition_metadata"), text.encode())
        self._partitions_written.add(partition)

    def _live_groups(self, partition: str | None = None) -> list[_Group]:
        return [g for g in self._groups.values() if not g.replaced and (partition is None or g.partition == partition)]

    # Writes -------------------------------------------------------------------------------
    def write(self, rows: pa.Table | list[dict[str, Any]], operation: str = "upsert", complete: bool = True) -> str:
        """Insert or update rows (upsert, insert, bulk_insert) as one commit."""
        table = self._as_table(rows)
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = _Staged(action, operation.upper())
        self._write_pending(ts, action)
        keys = self.record_keys(table)
        partitions = self.partition_of_rows(table)
        for partition in sorted(set(partitions)):
            mask = pa.array([p == partition for p in partitions])
            part_rows = table.filter(mask)
            part_keys = [k for k, p in zip(keys, partitions) if p == partition]
            self._ensure_partition(partition, ts)
            self._upsert_partition(ts, staged, partition, part_rows, part_keys)
        return self._finish(ts, staged, complete)

    def write_copies(self, files_per_partition: dict[str, int], rows: pa.Table | list[dict[str, Any]]) -> tuple[str, list[str]]:
        """A bulk insert of many base files that are all copies of one small
        Parquet file of `rows` (for benches at scale: listing and planning
        never read them). The builder does not track these file groups.
        Returns the instant and the written paths, in order."""
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = _Staged(action, "BULK_INSERT")
        self._write_pending(ts, action)
        table = self._as_table(rows)
        buf = io.BytesIO()
        pq.write_table(self._stored(self._with_footer(self._with_meta(table, ts, self.record_keys(table), "", "copy.parquet"))), buf,
                       compression="snappy")
        data = buf.getvalue()
        for partition, count in files_per_partition.items():
            self._ensure_partition(partition, ts)
            for _ in range(count):
                file_id = f"{uuid.uuid4()}-0"
                name = BaseFileName(file_id, self._token(), ts, ".parquet").name
                with open(self.storage.full_path(join(partition, name)), "wb") as out:  # local only: speed over atomicity
                    out.write(data)
                staged.written_files.append(join(partition, name))
                staged.stats.append(WriteStat(partition, file_id, join(partition, name), None, num_writes=table.num_rows,
                                              num_inserts=table.num_rows, total_write_bytes=len(data), file_size_in_bytes=len(data)))
        self._finish(ts, staged, complete=True)
        return ts, staged.written_files

    def delete(self, keys: list[str], complete: bool = True) -> str:
        """Delete records by record key (as `_hoodie_record_key` holds them)."""
        ts = self.next_instant_time()
        action = Action.DELTA_COMMIT if self.is_mor else Action.COMMIT
        staged = _Staged(action, "DELETE")
        self._write_pending(ts, action)
        wanted = set(keys)
        for group in self._live_groups():
            present = set(group.rows.column("_hoodie_record_key").to_pylist()) & wanted
            if not present:
                continue
            keep = pc.invert(pc.is_in(group.rows.column("_hoodie_record_key"), pa.array(sorted(present))))
            remaining = group.rows.filter(keep)
            if self.is_mor:
                content = encode_delete_records([(k, group.partition) for k in sorted(present)])
                self._append_log(ts, staged, group, LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: ts}, content), remaining, deletes=len(present))
            else:
                self._rewrite_base(ts, staged, group, remaining, updates=0, deletes=len(present))
        return self._finish(ts, staged, complete)

    def _upsert_partition(self, ts: str, staged: _Staged, partition: str, rows: pa.Table, keys: list[str]) -> None:
        key_to_row = {k: i for i, k in enumerate(keys)}  # last write of a key wins
        for group in self._live_groups(partition):
            group_keys = group.rows.column("_hoodie_record_key").to_pylist()
            hits = [key_to_row.pop(k) for k in group_keys if k in key_to_row]
            if not hits:
                continue
            hit_keys = [keys[i] for i in hits]
            updated = self._with_meta(rows.take(hits), ts, hit_keys, partition, "")
            keep = pc.invert(pc.is_in(group.rows.column("_hoodie_record_key"), pa.array(hit_keys)))
            merged = pa.concat_tables([group.rows.filter(keep), updated])
            if self.is_mor:
                records = self._stored(updated).to_pylist()
                block = LogBlock(
                    BlockType.AVRO_DATA,
                    {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: json.dumps(self.avro_schema)},
                    encode_avro_records(self.avro_schema, records),
                )
                self._append_log(ts, staged, group, block, merged, updates=len(hits))
            else:
                self._rewrite_base(ts, staged, group, merged, updates=len(hits), deletes=0)
        if key_to_row:
            order = sorted(key_to_row.values())
            self._new_groups(ts, staged, partition, rows.take(order), [keys[i] for i in order])

    def _new_groups(self, ts: str, staged: _Staged, partition: str, rows: pa.Table, keys: list[str]) -> None:
        size = self.max_rows_per_file or max(rows.num_rows, 1)
        for start in range(0, rows.num_rows, size):
            chunk, chunk_keys = rows.slice(start, size), keys[start : start + size]
            file_id = f"{uuid.uuid4()}-0"
            name = BaseFileName(file_id, self._token(), ts, ".parquet").name
            data = self._with_meta(chunk, ts, chunk_keys, partition, name)
            nbytes = self._write_parquet(partition, name, data)
            staged.groups[(partition, file_id)] = _Group(partition, file_id, name, ts, data)
            staged.written_files.append(join(partition, name))
            staged.stats.append(
                WriteStat(partition, file_id, join(partition, name), None, num_writes=chunk.num_rows,
                          num_inserts=chunk.num_rows, total_write_bytes=nbytes, file_size_in_bytes=nbytes)
            )

    def _rewrite_base(self, ts: str, staged: _Staged, group: _Group, rows: pa.Table, updates: int, deletes: int) -> None:
        name = BaseFileName(group.file_id, self._token(), ts, ".parquet").name
        rows = rows.set_column(4, "_hoodie_file_name", pa.array([name] * rows.num_rows, pa.string()))
        nbytes = self._write_parquet(group.partition, name, rows)
        cdc = self._write_cdc(ts, staged, group, rows) if self.cdc_mode is not None else ()
        older = group.older_files + ([group.base_name] if group.base_name else []) + group.logs
        staged.groups[(group.partition, group.file_id)] = _Group(group.partition, group.file_id, name, ts, rows, [], older)
        staged.written_files.append(join(group.partition, name))
        staged.stats.append(
            WriteStat(group.partition, group.file_id, join(group.partition, name), group.base_instant,
                      num_writes=rows.num_rows, num_update_writes=updates, num_deletes=deletes,
                      total_write_bytes=nbytes, file_size_in_bytes=nbytes, cdc_stats=cdc)
        )

    def _write_cdc(self, ts: str, staged: _Staged, group: _Group, rows: pa.Table) -> tuple[tuple[str, int], ...]:
        """The change-data log of a rewritten file group: per record key, what
        this write did to the group's old rows (HoodieCDCLogger's ops and images)."""
        assert self.cdc_mode is not None
        old = {r["_hoodie_record_key"]: r for r in group.rows.to_pylist()}
        new = {r["_hoodie_record_key"]: r for r in rows.to_pylist()}
        changes = [CdcRecord("d", k, old[k]) for k in sorted(old) if k not in new]
        changes += [CdcRecord("u", k, old[k], new[k]) for k in sorted(old) if k in new and new[k]["_hoodie_commit_time"] == ts]
        changes += [CdcRecord("i", k, None, new[k]) for k in sorted(new) if k not in old]
        if not changes:
            return ()
        log_name = LogFileName(group.file_id, ts, "log", 1, self._token(), is_cdc=True).name
        if self.version < 8:
            log_name = log_name[: -len(".cdc")] + "-cdc"  # Hudi 0.x's suffix
        data = encode_block(encode_cdc_block(self.cdc_mode, self.avro_schema, ts, changes))
        self.storage.write_bytes(join(group.partition, log_name), data)
        staged.written_files.append(join(group.partition, log_name))
        return ((join(group.partition, log_name), len(data)),)

    def _log_slice_instant(self, group: _Group) -> str:
        pending = [ts for ts, plan in self._plans.items() if (group.partition, group.file_id) in plan]
        return max(pending) if pending else group.base_instant

    def _append_log(self, ts: str, staged: _Staged, group: _Group, block: LogBlock, rows: pa.Table,
                    updates: int = 0, deletes: int = 0) -> None:
        if self.version >= 8:
            name = LogFileName(group.file_id, ts, "log", 1, self._token()).name
        else:
            version = 1 + sum(1 for n in group.logs if LogFileName.parse(n).instant_time == self._log_slice_instant(group))
            name = LogFileName(group.file_id, self._log_slice_instant(group), "log", version, self._token()).name
        data = encode_block(block)
        self.storage.write_bytes(join(group.partition, name), data)
        staged.groups[(group.partition, group.file_id)] = _Group(
            group.partition, group.file_id, group.base_name, group.base_instant, rows, group.logs + [name], list(group.older_files)
        )
        staged.written_files.append(join(group.partition, name))
        staged.stats.append(
            WriteStat(group.partition, group.file_id, join(group.partition, name), group.base_instant,
                      num_writes=updates, num_update_writes=updates, num_deletes=deletes,
                      total_write_bytes=len(data), file_size_in_bytes=len(data),
                      base_file=group.base_name or "", log_files=(name,))
        )

    def _finish(self, ts: str, staged: _Staged, complete: bool) -> str:
        self._staged[ts] = staged
        if complete:
            self.complete(ts)
        return ts

    def complete(self, ts: str) -> str:
        """Complete an instant left pending by `complete=False`."""
        staged = self._staged.pop(ts)
        stats: dict[str, list[WriteStat]] = {}
        for stat in staged.stats:
            stats.setdefault(stat.partition_path, []).append(stat)
        meta = CommitMetadata(
            partition_to_write_stats={p: tuple(s) for p, s in stats.items()},
            operation_type=staged.operation,
            extra_metadata={"schema": json.dumps(self.avro_schema)},
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in staged.replaced.items()},
        )
        if self._mdt is not None:
            self._record_in_metadata_table(ts, staged)
        self._write_completed(ts, staged.action, self._encode_commit(meta, staged.action is Action.REPLACE_COMMIT))
        self._plans.pop(ts, None)
        for key, group in staged.groups.items():
            current = self._groups.get(key)
            if current is not None and staged.operation == "COMPACT":
                # Logs written while the compaction was pending start the new slice.
                group.older_files += [n for n in current.logs if self._log_in_plan(n, ts)]
                group.logs = [n for n in current.logs if not self._log_in_plan(n, ts)]
                group.rows = current.rows
            elif current is not None:
                # Logs of instants that completed in between stay.
                group.logs = sorted(set(group.logs) | set(current.logs), key=lambda n: LogFileName.parse(n).sort_key())
            self._groups[key] = group
        for partition, ids in staged.replaced.items():
            for file_id in ids:
                self._groups[(partition, file_id)].replaced = True
        return ts

    def _record_in_metadata_table(self, ts: str, staged: _Staged) -> None:
        assert self._mdt is not None
        added: dict[str, dict[str, int]] = {}
        for stat in staged.stats:
            added.setdefault(stat.partition_path, {})[stat.file_name] = stat.file_size_in_bytes
        new = {p for p in added if p not in self._mdt_partitions}
        self._mdt_partitions |= new
        self._mdt_partitions -= staged.dropped_partitions
        self._mdt.record(ts, added, new_partitions=new, dropped_partitions=staged.dropped_partitions)

    # Replace commits ------------------------------------------------------------------------
    def insert_overwrite(self, rows: pa.Table | list[dict[str, Any]], table_wide: bool = False) -> str:
        """INSERT_OVERWRITE (the partitions written) or INSERT_OVERWRITE_TABLE."""
        table = self._as_table(rows)
        ts = self.next_instant_time()
        staged = _Staged(Action.REPLACE_COMMIT, "INSERT_OVERWRITE_TABLE" if table_wide else "INSERT_OVERWRITE")
        self._write_pending(ts, Action.REPLACE_COMMIT)
        keys = self.record_keys(table)
        partitions = self.partition_of_rows(table)
        targets = {g.partition for g in self._live_groups()} if table_wide else set(partitions)
        for partition in sorted(targets):
            ids = [g.file_id for g in self._live_groups(partition)]
            if ids:
                staged.replaced[partition] = ids
        for partition in sorted(set(partitions)):
            self._ensure_partition(partition, ts)
            mask = pa.array([p == partition for p in partitions])
            self._new_groups(ts, staged, partition, table.filter(mask), [k for k, p in zip(keys, partitions) if p == partition])
        return self._finish(ts, staged, True)

    def delete_partitions(self, partitions: list[str]) -> str:
        """DELETE_PARTITION: a replacecommit that replaces every group of them."""
        ts = self.next_instant_time()
        staged = _Staged(Action.REPLACE_COMMIT, "DELETE_PARTITION")
        self._write_pending(ts, Action.REPLACE_COMMIT)
        for partition in partitions:
            ids = [g.file_id for g in self._live_groups(partition)]
            if not ids:
                raise ValueError(f"partition {partition!r} has no file groups to delete")
            staged.replaced[partition] = ids
            staged.dropped_partitions.add(partition)
        return self._finish(ts, staged, True)

    # Table services ----------------------------------------------------------------------------
    def clean(self) -> str:
        """Delete files of older slices and of replaced file groups."""
        ts = self.next_instant_time()
        self._write_pending(ts, Action.CLEAN)
        deleted: dict[str, list[str]] = {}
        partition_gone: dict[str, bool] = {}
        for key, group in list(self._groups.items()):
            names = list(group.older_files)
            if group.replaced:
                names += ([group.base_name] if group.base_name else []) + group.logs
                del self._groups[key]
            else:
                group.older_files = []
            for name in names:
                self.storage.delete_file(join(group.partition, name))
                deleted.setdefault(group.partition, []).append(name)
        for partition in deleted:
            gone = not self._live_groups(partition)
            partition_gone[partition] = gone
            if gone and self.storage.exists(join(partition, ".hoodie_partition_metadata")):
                self.storage.delete_file(join(partition, ".hoodie_partition_metadata"))
                self._partitions_written.discard(partition)
        latest = max((g.base_instant for g in self._live_groups()), default=ts)
        record = {
            "startCleanTime": ts,
            "timeTakenInMillis": 1,
            "totalFilesDeleted": sum(len(v) for v in deleted.values()),
            "earliestCommitToRetain": latest,
            "lastCompletedCommitTimestamp": latest,
            "partitionMetadata": {
                p: {
                    "partitionPath": p,
                    "policy": "KEEP_LATEST_FILE_VERSIONS",
                    "deletePathPatterns": names,
                    "successDeleteFiles": names,
                    "failedDeleteFiles": [],
                    "isPartitionDeleted": partition_gone[p],
                }
                for p, names in deleted.items()
            },
            "version": 2,
        }
        if self._mdt is not None:
            self._mdt.record(ts, {}, deleted, dropped_partitions={p for p, g in partition_gone.items() if g})
        self._write_completed(ts, Action.CLEAN, encode_avro_instant(CLEAN_METADATA, record))
        return ts

    def schedule_compaction(self) -> str:
        """Write a compaction plan (MOR) for every group with log files."""
        if not self.is_mor:
            raise ValueError("compaction applies to MERGE_ON_READ tables")
        ts = self.next_instant_time()
        operations = []
        plan: dict[tuple[str, str], pa.Table] = {}
        for group in self._live_groups():
            if not group.logs:
                continue
            plan[(group.partition, group.file_id)] = group.rows
            operations.append({
                "baseInstantTime": group.base_instant,
                "deltaFilePaths": list(group.logs),
                "dataFilePath": group.base_name,
                "fileId": group.file_id,
                "partitionPath": group.partition,
                "metrics": {"TOTAL_LOG_FILES": float(len(group.logs))},
            })
        if not operations:
            raise ValueError("nothing to compact: no file group has log files")
        content = encode_avro_instant(COMPACTION_PLAN, {"operations": operations, "extraMetadata": None, "version": 2})
        self.storage.write_bytes(join(self.timeline_path, f"{ts}.compaction.requested"), content)
        self._plans[ts] = plan
        return ts

    def run_compaction(self, ts: str, complete: bool = True) -> str:
        """Execute a scheduled compaction; it completes as a commit.

        With `complete=False` the new base files are written but the instant
        stays inflight, as when a compaction job dies midway."""
        plan = self._plans[ts]  # stays pending until the compaction completes
        self.storage.write_bytes(join(self.timeline_path, f"{ts}.compaction.inflight"), b"")
        staged = _Staged(Action.COMMIT, "COMPACT")
        for (partition, file_id), rows in plan.items():
            group = self._groups[(partition, file_id)]
            name = BaseFileName(file_id, self._token(), ts, ".parquet").name
            data = rows.set_column(4, "_hoodie_file_name", pa.array([name] * rows.num_rows, pa.string()))
            nbytes = self._write_parquet(partition, name, data)
            older = group.older_files + ([group.base_name] if group.base_name else [])
            staged.groups[(partition, file_id)] = _Group(partition, file_id, name, ts, group.rows, [], older)
            staged.written_files.append(join(partition, name))
            staged.stats.append(WriteStat(partition, file_id, join(partition, name), group.base_instant,
                                          num_writes=rows.num_rows, total_write_bytes=nbytes, file_size_in_bytes=nbytes))
        return self._finish(ts, staged, complete)

    def _log_in_plan(self, name: str, compaction_ts: str) -> bool:
        parsed = LogFileName.parse(name)
        if self.version >= 8:
            return parsed.instant_time < compaction_ts
        return parsed.instant_time != compaction_ts

    def rollback(self, ts: str) -> str:
        """Roll back a pending instant: delete its files and its timeline entries."""
        staged = self._staged.pop(ts, None)
        if staged is None:
            raise ValueError(f"instant {ts} is not pending in this builder")
        rb = self.next_instant_time()
        self._write_pending(rb, Action.ROLLBACK)
        deleted: dict[str, list[str]] = {}
        for path in staged.written_files:
            self.storage.delete_file(path)
            partition, _, name = path.rpartition("/")
            deleted.setdefault(partition, []).append(name)
        for suffix in (f"{staged.action}.requested", "inflight" if staged.action is Action.COMMIT else f"{staged.action}.inflight"):
            path = join(self.timeline_path, f"{ts}.{suffix}")
            if self.storage.exists(path):
                self.storage.delete_file(path)
        record = {
            "startRollbackTime": rb,
            "timeTakenInMillis": 1,
            "totalFilesDeleted": sum(len(v) for v in deleted.values()),
            "commitsRollback": [ts],
            "partitionMetadata": {
                p: {"partitionPath": p, "successDeleteFiles": names, "failedDeleteFiles": [], "rollbackLogFiles": None}
                for p, names in deleted.items()
            },
            "version": 1,
        }
        self._write_completed(rb, Action.ROLLBACK, encode_avro_instant(ROLLBACK_METADATA, record))
        return rb

    # Introspection for tests ---------------------------------------------------------------------
    def expected_latest_files(self) -> dict[tuple[str, str], tuple[str | None, tuple[str, ...]]]:
        """(partition, file id) -> (base file name, log names) the builder
        believes are the latest visible slice, for cross-checking readers."""
        result = {}
        for (partition, file_id), group in self._groups.items():
            if group.replaced:
                continue
            logs = tuple(sorted(group.logs, key=lambda n: LogFileName.parse(n).sort_key()))
            result[(partition, file_id)] = (group.base_name, logs)
        return result

    def current_rows(self) -> pa.Table:
        """All live rows, with meta columns, as a reader should see them."""
        tables = [g.rows for g in self._live_groups()]
        return pa.concat_tables(tables) if tables else empty_table(self.full_schema)
