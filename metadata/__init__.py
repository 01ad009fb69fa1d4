"""The Hudi table as stored, a package per concept:

- `storage/`: where the bytes are (local disks, object stores), options and secrets;
- `formats/`: Hudi's file formats (log blocks, Avro schemas, bloom filters, CDC logs);
- `timeline/`: instants, the active and archived timelines, commit metadata;
- `table/`: config, keys and partitions, the file-system view, `HudiTable`;
- `mdt/`: the metadata table, read (`mdt/`) and written (`mdt/write/`);
- `concurrency/`: sharing a table with Hudi's writers (heartbeats, locks);
- `util/`: values and helpers; `errors`: the one error hierarchy;
- `sample_tables/`: tables written for tests, benches and the demo.

The names below are the package's API; the module paths of before the cut
still import, with a DeprecationWarning (`_moved`)."""

from metadata import _moved
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
from metadata.mdt.metadata_table import MetadataTable
from metadata.table.config import TableConfig, TableType
from metadata.table.file_group import FileGroup, FileSlice
from metadata.table.fs_view import FileSystemView
from metadata.table.hudi_table import HudiTable
from metadata.timeline.active import Timeline
from metadata.timeline.commit_metadata import CleanMetadata, CommitMetadata, CompactionPlan, RollbackMetadata, WriteStat
from metadata.timeline.instant import Action, Instant, State

__all__ = [
    "Action", "HudiBridgeError", "InvalidInstantTime", "CleanMetadata", "CleanedFilesError", "CommitMetadata", "CompactionPlan", "FileGroup", "FileSlice",
    "FileSystemView", "HudiError", "HudiFormatError", "HudiTable", "HudiTableNotFound", "Instant",
    "InstantNotFound", "MetadataTable", "MetadataTableAbsent", "MetadataTableBehind", "MetadataTableDamaged", "MissingFileError", "UnsafePathError", "MetadataTableUnavailable", "RollbackMetadata", "State", "TableConfig", "TableType",
    "Timeline", "UnsupportedTableError", "WriteStat",
]

_moved.install()
