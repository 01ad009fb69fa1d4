"""The Hudi table as stored: config, timeline, file naming, file-system view
and (in `metadata.mdt`) the metadata table."""

from metadata.commit_metadata import CleanMetadata, CommitMetadata, CompactionPlan, RollbackMetadata, WriteStat
from metadata.errors import (
    CleanedFilesError,
    HudiBridgeError,
    HudiError,
    HudiFormatError,
    HudiTableNotFound,
    InstantNotFound,
    InvalidInstantTime,
    MetadataTableAbsent,
    MetadataTableBehind,
    MetadataTableDamaged,
    MetadataTableUnavailable,
    MissingFileError,
    UnsafePathError,
    UnsupportedTableError,
)
from metadata.file_group import FileGroup, FileSlice
from metadata.fs_view import FileSystemView
from metadata.instant import Action, Instant, State
from metadata.mdt.metadata_table import MetadataTable
from metadata.table import HudiTable
from metadata.table_config import TableConfig, TableType
from metadata.timeline import Timeline

__all__ = [
    "Action", "HudiBridgeError", "InvalidInstantTime", "CleanMetadata", "CleanedFilesError", "CommitMetadata", "CompactionPlan", "FileGroup", "FileSlice",
    "FileSystemView", "HudiError", "HudiFormatError", "HudiTable", "HudiTableNotFound", "Instant",
    "InstantNotFound", "MetadataTable", "MetadataTableAbsent", "MetadataTableBehind", "MetadataTableDamaged", "MissingFileError", "UnsafePathError", "MetadataTableUnavailable", "RollbackMetadata", "State", "TableConfig", "TableType",
    "Timeline", "UnsupportedTableError", "WriteStat",
]
