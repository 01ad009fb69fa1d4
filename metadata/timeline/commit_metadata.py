"""Typed commit, replace, clean, rollback and compaction-plan metadata.

The same classes read JSON (table v6) and Avro (layout 2) instants: both use
Hudi's Avro field names. Malformed content raises HudiFormatError naming the
instant file and the field.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from metadata.errors import HudiFormatError
from metadata.table.partition_path import check_partition_path


def _get(source: str, data: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise HudiFormatError(source, f"field {key!r} should be {_kind_name(kind)}, found {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({dict: "an object", list: "a list", str: "a string", int: "a number", bool: "a boolean"}.get(k, k.__name__) for k in kinds)


def _name(path: str | None) -> str:
    """Base name of a path that may be relative, absolute or a URI."""
    return posixpath.basename(path or "")


@dataclass(frozen=True)
class WriteStat:
    partition_path: str
    file_id: str
    path: str | None
    prev_commit: str | None
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    file_size_in_bytes: int = 0
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    cdc_stats: tuple[tuple[str, int], ...] = ()  # change-data log files (path, size) beside the file written

    @property
    def file_name(self) -> str:
        return _name(self.path)

    @classmethod
    def from_dict(cls, source: str, partition: str, data: Any) -> WriteStat:
        if not isinstance(data, dict):
            raise HudiFormatError(source, f"write stat in partition {partition!r} is not an object")
        prev = _get(source, data, "prevCommit", str)
        partition_path = _get(source, data, "partitionPath", str, partition) or partition
        if partition_path != partition:  # the map key was checked already
            check_partition_path(partition_path, source)
        return cls(
            partition_path=partition_path,
            file_id=_get(source, data, "fileId", str, ""),
            path=_get(source, data, "path", str),
            prev_commit=None if prev in (None, "null") else prev,
            num_writes=_get(source, data, "numWrites", int, 0),
            num_deletes=_get(source, data, "numDeletes", int, 0),
            num_update_writes=_get(source, data, "numUpdateWrites", int, 0),
            num_inserts=_get(source, data, "numInserts", int, 0),
            total_write_bytes=_get(source, data, "totalWriteBytes", int, 0),
            file_size_in_bytes=_get(source, data, "fileSizeInBytes", int, 0),
            base_file=_get(source, data, "baseFile", str) or None,
            log_files=tuple(_get(source, data, "logFiles", list, [])),
            cdc_stats=tuple(sorted((str(k), int(v)) for k, v in (_get(source, data, "cdcStats", dict, {}) or {}).items())),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "fileId": self.file_id,
            "path": self.path,
            "prevCommit": self.prev_commit or "null",
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_update_writes,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": 0,
            "partitionPath": self.partition_path,
            "fileSizeInBytes": self.file_size_in_bytes,
            "baseFile": self.base_file,
            "logFiles": list(self.log_files),
            "cdcStats": dict(self.cdc_stats) or None,
        }


def written_files(source: str, data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(partition, file id, path) of every file a commit wrote, read straight
    from its decoded content: the view's missing-file check needs only these,
    and skipping the full WriteStat objects halves its cost on large commits."""
    stats = _get(source, data, "partitionToWriteStats", dict, {})
    written: list[tuple[str, str, str]] = []
    for partition, entries in stats.items():
        check_partition_path(partition, source)
        if not isinstance(entries, list):
            raise HudiFormatError(source, f"partitionToWriteStats[{partition!r}] is not a list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise HudiFormatError(source, f"write stat in partition {partition!r} is not an object")
            path, file_id = entry.get("path"), entry.get("fileId")
            stat_partition = entry.get("partitionPath") or partition
            if not (isinstance(path, str) and isinstance(file_id, str) and isinstance(stat_partition, str)):
                WriteStat.from_dict(source, partition, entry)  # says which field is wrong
                continue
            if stat_partition != partition:
                check_partition_path(stat_partition, source)
            written.append((stat_partition, file_id, path))
    return written


@dataclass(frozen=True)
class CommitMetadata:
    """A completed commit, deltacommit or replacecommit."""

    partition_to_write_stats: dict[str, tuple[WriteStat, ...]]
    operation_type: str | None = None
    extra_metadata: dict[str, str] = field(default_factory=dict)
    partition_to_replace_file_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    compacted: bool = False

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema (JSON text), when the commit recorded one."""
        return self.extra_metadata.get("schema") or None

    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def touched_partitions(self) -> set[str]:
        """Partitions written or replaced by this instant."""
        return set(self.partition_to_write_stats) | set(self.partition_to_replace_file_ids)

    def replaced_file_groups(self) -> set[tuple[str, str]]:
        return {(p, f) for p, ids in self.partition_to_replace_file_ids.items() for f in ids}

    @classmethod
    def from_dict(cls, source: str, data: dict[str, Any]) -> CommitMetadata:
        raw_stats = _get(source, data, "partitionToWriteStats", dict, {})
        stats: dict[str, tuple[WriteStat, ...]] = {}
        for partition, entries in raw_stats.items():
            if not isinstance(entries, list):
                raise HudiFormatError(source, f"partitionToWriteStats[{partition!r}] is not a list")
            stats[check_partition_path(partition, source)] = tuple(WriteStat.from_dict(source, partition, e) for e in entries)
        raw_replace = _get(source, data, "partitionToReplaceFileIds", dict, {})
        replace: dict[str, tuple[str, ...]] = {}
        for partition, ids in raw_replace.items():
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise HudiFormatError(source, f"partitionToReplaceFileIds[{partition!r}] is not a list of file ids")
            replace[check_partition_path(partition, source)] = tuple(ids)
        extra = _get(source, data, "extraMetadata", dict, {})
        return cls(
            partition_to_write_stats=stats,
            operation_type=_get(source, data, "operationType", str),
            extra_metadata={k: v for k, v in extra.items() if isinstance(v, str)},
            partition_to_replace_file_ids=replace,
            compacted=bool(_get(source, data, "compacted", bool, False)),
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "partitionToWriteStats": {p: [s.to_dict() for s in stats] for p, stats in self.partition_to_write_stats.items()},
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids:
            data["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()}
        return data


@dataclass(frozen=True)
class CleanPartition:
    partition_path: str
    success_delete_files: tuple[str, ...]
    failed_delete_files: tuple[str, ...]
    delete_path_patterns: tuple[str, ...]
    is_partition_deleted: bool


@dataclass(frozen=True)
class CleanMetadata:
    earliest_commit_to_retain: str | None
    partitions: dict[str, CleanPartition]

    def deleted_file_names(self) -> dict[str, set[str]]:
        """Partition -> names of files this clean deleted."""
        return {p: {_name(f) for f in meta.success_delete_files} for p, meta in self.partitions.items()}

    def deleted_partitions(self) -> set[str]:
        return {p for p, meta in self.partitions.items() if meta.is_partition_deleted}

    @classmethod
    def from_dict(cls, source: str, data: dict[str, Any]) -> CleanMetadata:
        partitions = {}
        for partition, meta in _get(source, data, "partitionMetadata", dict, {}).items():
            if not isinstance(meta, dict):
                raise HudiFormatError(source, f"partitionMetadata[{partition!r}] is not a record")
            partition = check_partition_path(partition, source)
            partitions[partition] = CleanPartition(
                partition_path=_get(source, meta, "partitionPath", str, partition),
                success_delete_files=tuple(_get(source, meta, "successDeleteFiles", list, [])),
                failed_delete_files=tuple(_get(source, meta, "failedDeleteFiles", list, [])),
                delete_path_patterns=tuple(_get(source, meta, "deletePathPatterns", list, [])),
                is_partition_deleted=bool(_get(source, meta, "isPartitionDeleted", bool, False)),
            )
        return cls(
            earliest_commit_to_retain=_get(source, data, "earliestCommitToRetain", str) or None,
            partitions=partitions,
        )


@dataclass(frozen=True)
class RollbackMetadata:
    commits_rollback: tuple[str, ...]
    deleted_files: dict[str, tuple[str, ...]]
    log_files_written: dict[str, tuple[str, ...]]

    @classmethod
    def from_dict(cls, source: str, data: dict[str, Any]) -> RollbackMetadata:
        deleted: dict[str, tuple[str, ...]] = {}
        logs: dict[str, tuple[str, ...]] = {}
        for partition, meta in _get(source, data, "partitionMetadata", dict, {}).items():
            if not isinstance(meta, dict):
                raise HudiFormatError(source, f"partitionMetadata[{partition!r}] is not a record")
            partition = check_partition_path(partition, source)
            deleted[partition] = tuple(_name(f) for f in _get(source, meta, "successDeleteFiles", list, []))
            logs[partition] = tuple(_name(f) for f in _get(source, meta, "rollbackLogFiles", dict, {}))
        return cls(tuple(_get(source, data, "commitsRollback", list, [])), deleted, logs)


@dataclass(frozen=True)
class CompactionOperation:
    partition_path: str
    file_id: str
    base_instant_time: str
    data_file_path: str | None
    delta_file_paths: tuple[str, ...]


@dataclass(frozen=True)
class CompactionPlan:
    operations: tuple[CompactionOperation, ...]

    def file_groups(self) -> set[tuple[str, str]]:
        return {(op.partition_path, op.file_id) for op in self.operations}

    @classmethod
    def from_dict(cls, source: str, data: dict[str, Any]) -> CompactionPlan:
        ops = []
        for op in _get(source, data, "operations", list, []):
            if not isinstance(op, dict):
                raise HudiFormatError(source, "compaction operation is not a record")
            ops.append(
                CompactionOperation(
                    partition_path=_get(source, op, "partitionPath", str, ""),
                    file_id=_get(source, op, "fileId", str, ""),
                    base_instant_time=_get(source, op, "baseInstantTime", str, ""),
                    data_file_path=_get(source, op, "dataFilePath", str),
                    delta_file_paths=tuple(_get(source, op, "deltaFilePaths", list, [])),
                )
            )
        return cls(tuple(ops))
