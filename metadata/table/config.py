"""`.hoodie/hoodie.properties`: the table's configuration."""

from __future__ import annotations

import logging
import re
import time
import zlib
from dataclasses import dataclass, field
from functools import cached_property

from metadata.errors import HudiFormatError, HudiTableNotFound, OversizedFile, PropertiesMissing, UnsupportedTableError
from metadata.storage.storage import Storage
from metadata.table.key_generator import KeyGenerator
from metadata.util.text_enum import TextEnum

PROPERTIES_PATH = ".hoodie/hoodie.properties"
# Hudi writes this copy while it rewrites hoodie.properties, and reads it when
# the main file is missing or fails its checksum (HoodieTableConfig).
PROPERTIES_BACKUP_PATH = ".hoodie/hoodie.properties.backup"
CHECKSUM_KEY = "hoodie.table.checksum"
READ_RETRY_PAUSES = (0.1, 0.3, 0.6, 1.0)  # seconds between reads of a hoodie.properties a writer may be writing
CHECKSUM_SINCE_VERSION = 4  # Hudi 0.11 (table version 4) writes the checksum into every hoodie.properties
METADATA_PARTITIONS_KEY = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT_KEY = "hoodie.table.metadata.partitions.inflight"
SUPPORTED_TABLE_VERSIONS = (6, 8, 9)

log = logging.getLogger(__name__)


class TableType(TextEnum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class BaseFileFormat(TextEnum):
    PARQUET = "PARQUET"
    HFILE = "HFILE"
    LANCE = "LANCE"  # Hudi 1.2: read through hudi-rs; no Parquet footers, and Hudi keeps no statistics for them

    @property
    def extension(self) -> str:
        return "." + self.value.lower()

    @property
    def has_parquet_footers(self) -> bool:
        return self is BaseFileFormat.PARQUET


_PROPERTY = re.compile(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]\s*(.*)$")  # key, separator, value


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse a Java .properties file (the subset Hudi writes, plus continuations)."""
    props: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        match = _PROPERTY.match(entry)
        if match:
            key, value = match.group(1), match.group(2)
        else:
            key, value = entry, ""
        props[_unescape(key)] = _unescape(value)
    return props


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def format_java_properties(props: dict[str, str]) -> str:
    """Write properties the way Java does (escaping ':' '=' and '#')."""

    def esc(text: str, is_key: bool) -> str:
        out = []
        for ch in text:
            if ch in "\\:=#!" or (is_key and ch == " "):
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            else:
                out.append(ch)
        return "".join(out)

    lines = ["#Properties saved by hudi-bridge"]
    lines += [f"{esc(k, True)}={esc(v, False)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TableConfig:
    """Typed view of hoodie.properties; `raw` keeps every key."""

    name: str
    table_type: TableType
    version: int
    timeline_layout_version: int
    timeline_path: str
    base_file_format: BaseFileFormat
    partition_fields: tuple[str, ...]
    record_key_fields: tuple[str, ...]
    precombine_field: str | None
    hive_style_partitioning: bool
    url_encode_partitioning: bool
    populate_meta_fields: bool
    metadata_partitions: tuple[str, ...]
    raw: dict[str, str] = field(default_factory=dict, compare=False)

    @cached_property
    def key_generator(self) -> KeyGenerator:
        return KeyGenerator.from_properties(self.raw)

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @classmethod
    def new(
        cls,
        name: str,
        table_type: TableType,
        version: int,
        *,
        record_key_fields: tuple[str, ...],
        partition_fields: tuple[str, ...] = (),
        base_file_format: BaseFileFormat = BaseFileFormat.PARQUET,
        precombine_field: str | None = None,
        hive_style_partitioning: bool = False,
        url_encode_partitioning: bool = False,
        populate_meta_fields: bool = True,
        metadata_partitions: tuple[str, ...] = (),
        extra: dict[str, str] | None = None,
    ) -> TableConfig:
        """The config of a table about to be written, with the keys Hudi
        writes for these settings (`extra` adds writer-specific keys)."""
        props = {
            "hoodie.table.name": name,
            "hoodie.table.type": table_type.value,
            "hoodie.table.version": str(version),
            "hoodie.table.initial.version": str(version),
            "hoodie.timeline.layout.version": "2" if version >= 8 else "1",
            "hoodie.table.base.file.format": base_file_format.value,
            "hoodie.table.recordkey.fields": ",".join(record_key_fields),
            "hoodie.populate.meta.fields": str(populate_meta_fields).lower(),
        }
        if partition_fields:
            props["hoodie.table.partition.fields"] = ",".join(partition_fields)
        if base_file_format is BaseFileFormat.PARQUET:
            props["hoodie.datasource.write.hive_style_partitioning"] = str(hive_style_partitioning).lower()
            props["hoodie.datasource.write.partitionpath.urlencode"] = str(url_encode_partitioning).lower()
        if precombine_field:
            props["hoodie.table.precombine.field"] = precombine_field
        if metadata_partitions:
            props[METADATA_PARTITIONS_KEY] = ",".join(metadata_partitions)
        if version >= 8:
            props["hoodie.timeline.path"] = "timeline"
            props["hoodie.timeline.history.path"] = "history"
        props.update(extra or {})
        props[CHECKSUM_KEY] = str(table_checksum(props))  # written last, as Hudi does
        return cls.from_properties(props)

    def write(self, storage: Storage) -> None:
        """Write hoodie.properties (all of `raw`) and create the timeline folder."""
        storage.write_bytes(PROPERTIES_PATH, format_java_properties(self.raw).encode())
        storage.make_dirs(self.timeline_path)

    @classmethod
    def load(cls, storage: Storage) -> TableConfig:
        """hoodie.properties, or its backup when it is missing or fails its
        checksum (as Hudi reads it); a bad file without a good backup is an
        error naming the file. A file cut short may be one a writer is
        writing right now: it is read again a few times first, as Hudi's
        reader does (HoodieTableConfig's read retries)."""
        for pause in (*READ_RETRY_PAUSES, None):
            try:
                return cls._load_once(storage)
            except OversizedFile:
                raise  # no writer at work makes it so: waiting will not mend it
            except HudiFormatError:
                if pause is None:
                    raise
                time.sleep(pause)
        raise AssertionError("unreachable")

    @classmethod
    def _load_once(cls, storage: Storage) -> TableConfig:
        path = storage.full_path(PROPERTIES_PATH)
        props, problem = _read_properties(storage, PROPERTIES_PATH)
        if props is not None and problem is None:
            return cls.from_properties(props, source=path)
        backup, backup_problem = _read_properties(storage, PROPERTIES_BACKUP_PATH)
        if backup is not None and backup_problem is None:
            log.warning("%s; reading %s instead, as Hudi does", problem or f"{path}: missing", PROPERTIES_BACKUP_PATH)
            return cls.from_properties(backup, source=storage.full_path(PROPERTIES_BACKUP_PATH))
        if problem is not None:
            raise problem
        storage.check_bucket()  # on an object store, a missing bucket is named as such
        raise PropertiesMissing(f"{storage.display_path(PROPERTIES_PATH)}: no hoodie.properties; {storage.uri} is not a Hudi table")

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = PROPERTIES_PATH) -> TableConfig:
        def required(key: str) -> str:
            value = props.get(key)
            if value is None or value == "":
                raise HudiFormatError(source, f"required key {key} is missing")
            return value

        name = required("hoodie.table.name")
        version_text = props.get("hoodie.table.version", "")
        try:
            version = int(version_text)
        except ValueError:
            raise HudiFormatError(source, f"hoodie.table.version is {version_text!r}, not a number") from None
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableError(
                f"{source}: table version {version} is not supported "
                f"(supported: {', '.join(map(str, SUPPORTED_TABLE_VERSIONS))}; Hudi 0.14/0.15 write 6, 1.0 writes 8, 1.1 writes 9)"
            )
        type_text = props.get("hoodie.table.type", "COPY_ON_WRITE").upper()
        try:
            table_type = TableType(type_text)
        except ValueError:
            raise HudiFormatError(source, f"hoodie.table.type is {type_text!r}; expected COPY_ON_WRITE or MERGE_ON_READ") from None
        format_text = props.get("hoodie.table.base.file.format", "PARQUET").upper()
        if format_text not in ("PARQUET", "LANCE", "HFILE"):
            raise UnsupportedTableError(f"{source}: base file format {format_text!r} is not supported (PARQUET, LANCE, or HFILE in a "
                                        "metadata table)")
        base_format = BaseFileFormat(format_text)
        default_layout = "2" if version >= 8 else "1"
        layout_text = props.get("hoodie.timeline.layout.version", default_layout) or default_layout
        if not layout_text.strip().isdigit():
            raise HudiFormatError(source, f"hoodie.timeline.layout.version is {layout_text!r}, not a number")
        layout = int(layout_text)
        if version >= 8 and layout < 2 or version < 8 and layout != 1:
            raise HudiFormatError(source, f"timeline layout {layout} does not go with table version {version}")
        timeline_path = ".hoodie/" + props.get("hoodie.timeline.path", "timeline") if layout >= 2 else ".hoodie"
        return cls(
            name=name,
            table_type=table_type,
            version=version,
            timeline_layout_version=layout,
            timeline_path=timeline_path,
            base_file_format=base_format,
            partition_fields=_split_fields(props.get("hoodie.table.partition.fields", "")),
            record_key_fields=_split_fields(props.get("hoodie.table.recordkey.fields", "")),
            precombine_field=props.get("hoodie.table.precombine.field") or None,
            hive_style_partitioning=_bool(props.get("hoodie.datasource.write.hive_style_partitioning", "false")),
            url_encode_partitioning=_bool(props.get("hoodie.datasource.write.partitionpath.urlencode", "false")),
            populate_meta_fields=_bool(props.get("hoodie.populate.meta.fields", "true")),
            metadata_partitions=_split_fields(props.get(METADATA_PARTITIONS_KEY, "")),
            raw=dict(props),
        )


def update_table_config(storage: Storage, changes: dict[str, str | None]) -> TableConfig:
    """Change hoodie.properties as Hudi's HoodieTableConfig.modify does: back
    the current file up, write the new one (checksum last), drop the backup.
    A reader that meets a torn file reads the backup; each file is written
    whole, so a reader sees the old properties or the new ones."""
    props = dict(TableConfig.load(storage).raw)
    storage.write_bytes(PROPERTIES_BACKUP_PATH, format_java_properties(props).encode())
    for key, value in changes.items():
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    props.pop(CHECKSUM_KEY, None)
    props[CHECKSUM_KEY] = str(table_checksum(props))
    storage.write_bytes(PROPERTIES_PATH, format_java_properties(props).encode())
    try:
        storage.delete_file(PROPERTIES_BACKUP_PATH)
    except FileNotFoundError:
        pass
    return TableConfig.from_properties(props, source=storage.full_path(PROPERTIES_PATH))


MAX_PROPERTIES_BYTES = 1024 * 1024  # hoodie.properties holds a few KB; a schema in it stays far below this


def table_checksum(props: dict[str, str]) -> int:
    """Hudi's hoodie.table.checksum: CRC32 of "<database>.<table name>"."""
    return zlib.crc32(f"{props.get('hoodie.database.name', '')}.{props.get('hoodie.table.name', '')}".encode())


def _read_properties(storage: Storage, relative: str) -> tuple[dict[str, str] | None, HudiFormatError | None]:
    """(properties, None), (None, None) when absent, or what is wrong with them."""
    path = storage.full_path(relative)
    try:
        data = storage.read_bytes(relative, max_bytes=MAX_PROPERTIES_BYTES)
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # StorageError: the message names the file
        if isinstance(exc.__cause__, NotADirectoryError) or "Not a directory" in str(exc):
            raise HudiTableNotFound(f"{storage.uri} is a file, not a Hudi table folder") from exc
        raise HudiTableNotFound(str(exc)) from exc
    try:
        props = parse_java_properties(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, HudiFormatError(path, f"not UTF-8 text ({exc.reason})", offset=exc.start)
    stored = props.get(CHECKSUM_KEY)
    if stored is None:
        version = props.get("hoodie.table.version", "").strip()
        if version.isdigit() and int(version) >= CHECKSUM_SINCE_VERSION:
            return props, HudiFormatError(path, f"no {CHECKSUM_KEY}, which table version {version} always carries (written last): "
                                                "the file is cut short")
        return props, None  # tables written before Hudi 0.11 carry no checksum
    if "hoodie.table.name" not in props:
        return props, None  # from_properties names the missing key
    if not stored.strip().isdigit():
        return props, HudiFormatError(path, f"{CHECKSUM_KEY} is {stored!r}, not a number")
    expected = table_checksum(props)
    if int(stored) != expected:
        return props, HudiFormatError(
            path, f"{CHECKSUM_KEY} {stored} does not match the table name (expected {expected}): the file is partly written or was edited"
        )
    return props, None


def _split_fields(text: str) -> tuple[str, ...]:
    # CustomKeyGenerator stores "field:TYPE"; the type is not part of the name.
    return tuple(part.split(":")[0].strip() for part in text.split(",") if part.strip())


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"

