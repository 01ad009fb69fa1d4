"""Errors raised while reading or writing a Hudi table.

Every error names the file (and where useful the offset or key) it is about,
so a user can find the bad input without a traceback from inside a library.
"""

from __future__ import annotations

from typing import Any


class HudiBridgeError(Exception):
    """Base class of every error this project raises on purpose.

    The CLI prints these as one line (no traceback without `--debug`).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors travel back from worker processes; subclasses' __init__ take other arguments than their message.
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


def _rebuilt(cls: type[HudiBridgeError], args: tuple[Any, ...], state: dict[str, Any]) -> HudiBridgeError:
    error = cls.__new__(cls, *args)
    (OSError if issubclass(cls, OSError) else BaseException).__init__(error, *args)  # OSError reads errno and strerror from them
    error.__dict__.update(state)
    return error


class HudiError(HudiBridgeError):
    """A table's files are missing, unreadable or not what Hudi writes."""


class HudiFormatError(HudiError):
    """A file exists but its content is not what Hudi writes."""

    def __init__(self, path: str, problem: str, offset: int | None = None) -> None:
        self.path = path
        self.problem = problem
        self.offset = offset
        where = f"{path} at offset {offset}" if offset is not None else path
        super().__init__(f"{where}: {problem}")


class OversizedFile(HudiFormatError):
    """A file longer than any Hudi writes of its kind (a hostile table's): refused unread, and not retried,
    since no writer at work makes it so."""


class StorageError(HudiError, OSError):
    """Storage refused or failed a call (permission, connection, timeout);
    the message names the path. Still an OSError for callers that expect one."""


class TransientStorageError(StorageError):
    """The store failed for a moment (throttling, a 5xx, a dropped connection): asked again with backoff."""


class StoredFileNotFound(StorageError, FileNotFoundError):
    """A file is not (or no longer) in storage."""


class UnsafePathError(HudiError):
    """A path read from the table (a partition, a file name) would resolve
    outside the table's base path."""


class HudiTableNotFound(HudiError):
    """The path holds no readable Hudi table."""


class PropertiesMissing(HudiTableNotFound):
    """Neither hoodie.properties nor its backup exists: no table is there."""


class UnsupportedTableError(HudiError):
    """A valid Hudi table this project cannot serve (version, base format...)."""


class InstantNotFound(HudiError):
    """An instant named by the caller is not on the timeline."""


class CleanedFilesError(HudiError):
    """A requested view needs files that a clean already deleted."""


class MissingFileError(HudiError):
    """A file a completed instant wrote is not in storage (and nothing newer
    replaces it): serving the version before it would be silently stale."""

    def __init__(self, path: str, instant: str, action: str) -> None:
        self.path = path
        self.instant = instant
        super().__init__(f"{path}: written by the completed {action} {instant} but missing from storage")


class MetadataTableUnavailable(HudiError):
    """The metadata table is absent or cannot be used; `reason` says why."""

    def __init__(self, table_uri: str, reason: str) -> None:
        self.table_uri = table_uri
        self.reason = reason
        super().__init__(f"{table_uri}: {reason}")


class NoSchemaError(HudiError):
    """No commit records a schema and hoodie.properties has none (a table not written yet)."""


class MetadataTableAbsent(MetadataTableUnavailable):
    """The table has no metadata table to read (none built, or `files` not
    listed): listing storage is then the normal path, not a fallback."""


class MetadataTableBehind(MetadataTableUnavailable):
    """Completed data instants are missing from the metadata table (a writer
    that does not keep it committed since the last sync): its listing and
    statistics would leave their files out."""


class MetadataTableDamaged(MetadataTableUnavailable):
    """A completed metadata-table instant's log block cannot be read: the
    metadata table would list less than the table has. `path` names the file."""

    def __init__(self, table_uri: str, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(table_uri, f"metadata table damaged: {path}: {problem}")


class InvalidInstantTime(HudiBridgeError, ValueError):
    """Text given as an instant time is not one (yyyyMMddHHmmssSSS)."""

    def __init__(self, text: str, what: str, reason: str | None = None) -> None:
        self.text = text
        self.what = what
        super().__init__(f"{what} {text!r} {reason or 'is not an instant time (yyyyMMddHHmmssSSS, digits only)'}")


class InvalidStatsTable(HudiBridgeError, ValueError):
    """A statistics table does not follow `metadata.formats.stats_table`'s layout."""


class IndexLocked(HudiBridgeError):
    """Another metadata-table writer holds the table (or left a stale lock)."""


class IndexWriteError(HudiBridgeError):
    """The metadata table cannot be built or synced as asked (the message says why)."""


class WriterActive(IndexLocked):
    """A Hudi writer is writing the table now and no shared lock orders our writes after its own."""


class HudiLockError(IndexLocked):
    """Hudi's lock, as the table's writers configure it, cannot be taken (held past its wait, or not supported)."""
