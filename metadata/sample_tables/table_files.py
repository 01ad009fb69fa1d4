"""The state of a table `TableBuilder` writes, and its files: properties,
timeline files, base files with their meta columns and footers."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from metadata.formats.avro_schema import META_FIELDS, arrow_to_avro_schema, with_meta_fields
from metadata.formats.bloom_filter import FOOTER_KEY, FOOTER_TYPE_KEY, build_bloom_filter
from metadata.formats.cdc import CDC_ENABLED_KEY, CDC_MODE_KEY, CdcMode
from metadata.sample_tables.mdt_files import FilesPartitionWriter
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig, TableType
from metadata.table.key_generator import TimestampPartitioning
from metadata.table.partition_path import format_partition_path
from metadata.table.record_key import RecordKeyError, RecordKeyRule
from metadata.timeline.commit_metadata import CommitMetadata, WriteStat
from metadata.timeline.instant import INSTANT_SECONDS_FORMAT, Action
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import commit_metadata_schema


@dataclass
class Group:
    partition: str
    file_id: str
    base_name: str | None
    base_instant: str
    rows: pa.Table
    logs: list[str] = field(default_factory=list)  # log names of the latest slice
    older_files: list[str] = field(default_factory=list)  # names of files in older slices
    replaced: bool = False


@dataclass
class Staged:
    """What an instant changes; applied to the builder's state on completion."""

    action: Action
    operation: str
    groups: dict[tuple[str, str], Group] = field(default_factory=dict)
    stats: list[WriteStat] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    written_files: list[str] = field(default_factory=list)  # relative paths
    dropped_partitions: set[str] = field(default_factory=set)


class TableFiles:
    """A built table's state (its file groups, rows and schema) and how its files are written: properties,
    timeline files, Parquet base files with meta columns. `TableWrites` and `TableBuilder` build on it."""

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
        self._groups: dict[tuple[str, str], Group] = {}
        self._staged: dict[str, Staged] = {}
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

    def _live_groups(self, partition: str | None = None) -> list[Group]:
        return [g for g in self._groups.values() if not g.replaced and (partition is None or g.partition == partition)]

