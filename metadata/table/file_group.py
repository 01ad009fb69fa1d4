"""File groups and file slices (reference section 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metadata.storage.paths import join
from metadata.table.file_naming import BaseFileName, LogFileName


@dataclass(frozen=True)
class FileSlice:
    """One base file (or none) and the log files written after it.

    Paths are relative to the table base path; log files are oldest first.
    """

    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...] = ()
    base_file_size: int | None = None
    log_file_sizes: tuple[int, ...] = ()

    @property
    def base_file_name(self) -> str | None:
        return self.base_file.rsplit("/", 1)[-1] if self.base_file else None

    @property
    def log_file_names(self) -> list[str]:
        return [p.rsplit("/", 1)[-1] for p in self.log_files]

    @property
    def file_names(self) -> list[str]:
        """The base file's name (when there is one), then the log files' names."""
        return [p.rpartition("/")[2] for p in self.files]

    @property
    def files(self) -> list[str]:
        return ([self.base_file] if self.base_file else []) + list(self.log_files)

    @property
    def total_size(self) -> int:
        return (self.base_file_size or 0) + sum(self.log_file_sizes)

    def to_dict(self) -> dict[str, object]:
        return {
            "partition": self.partition,
            "file_id": self.file_id,
            "base_instant": self.base_instant,
            "base_file": self.base_file,
            "log_files": list(self.log_files),
            "size": self.total_size,
        }

    def to_wire(self) -> dict[str, object]:
        """`to_dict` with each file's size: what a plan sent over the wire carries, so `from_wire` gives the slice back whole."""
        return {**self.to_dict(), "base_file_size": self.base_file_size, "log_file_sizes": list(self.log_file_sizes)}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> FileSlice:
        return cls(str(data["partition"]), str(data["file_id"]), str(data["base_instant"]),
                   None if data.get("base_file") is None else str(data["base_file"]), tuple(str(p) for p in data.get("log_files", ())),
                   data.get("base_file_size"), tuple(int(n) for n in data.get("log_file_sizes", ())))


@dataclass
class _SliceBuilder:
    base_instant: str
    base: BaseFileName | None = None
    base_size: int | None = None
    logs: list[tuple[LogFileName, int]] = field(default_factory=list)


@dataclass
class FileGroup:
    """All visible files of one file id in one partition, by base instant."""

    partition: str
    file_id: str
    _slices: dict[str, _SliceBuilder] = field(default_factory=dict)

    def add_base(self, name: BaseFileName, size: int) -> None:
        builder = self._slices.setdefault(name.instant_time, _SliceBuilder(name.instant_time))
        builder.base, builder.base_size = name, size

    def add_slice_key(self, base_instant: str) -> None:
        """A slice with no base file yet (a pending compaction's target)."""
        self._slices.setdefault(base_instant, _SliceBuilder(base_instant))

    def slice_keys(self) -> list[str]:
        return sorted(self._slices)

    def has_slices(self) -> bool:
        return bool(self._slices)

    def add_log(self, base_instant: str, name: LogFileName, size: int) -> None:
        self._slices.setdefault(base_instant, _SliceBuilder(base_instant)).logs.append((name, size))

    def _build(self, builder: _SliceBuilder, extra_logs: list[tuple[LogFileName, int]] | None = None) -> FileSlice:
        if not builder.logs and not extra_logs and builder.base is not None:  # the common case, on hot paths
            return FileSlice(self.partition, self.file_id, builder.base_instant, join(self.partition, builder.base.name),
                             (), builder.base_size, ())
        logs = sorted(builder.logs + (extra_logs or []), key=lambda item: item[0].sort_key())
        return FileSlice(
            partition=self.partition,
            file_id=self.file_id,
            base_instant=builder.base_instant,
            base_file=join(self.partition, builder.base.name) if builder.base else None,
            log_files=tuple(join(self.partition, n.name) for n, _ in logs),
            base_file_size=builder.base_size,
            log_file_sizes=tuple(size for _, size in logs),
        )

    def slices(self) -> list[FileSlice]:
        """Every non-empty slice, oldest first."""
        return [self._build(b) for k, b in sorted(self._slices.items()) if b.base or b.logs]

    def latest_slice(self, pending_compactions: set[str]) -> FileSlice | None:
        """The newest slice; logs written against a pending compaction merge
        into the slice before it, since that compaction's base file is not
        readable yet (Hudi's "merged" latest slice)."""
        keys = sorted(self._slices)
        while keys and not (self._slices[keys[-1]].base or self._slices[keys[-1]].logs):
            keys.pop()
        if not keys:
            return None
        latest = self._slices[keys[-1]]
        if latest.base is None and keys[-1] in pending_compactions and len(keys) > 1:
            return self._build(self._slices[keys[-2]], latest.logs)
        return self._build(latest)
