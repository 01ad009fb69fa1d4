"""A table as stored: its storage, config and timeline, before any listing.

The file-system view and the metadata table both start from these three
parts; neither needs a `HudiTable`, which adds the listing on top (as
hudi-rs hands its file-system view the metadata table rather than the
other way round).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import pyarrow.fs as pafs

from metadata.storage.storage import Storage
from metadata.table.config import TableConfig
from metadata.timeline.active import Timeline


class StoredTable(Protocol):
    """Anything that holds a table's storage, config and timeline."""

    @property
    def storage(self) -> Storage: ...

    @property
    def config(self) -> TableConfig: ...

    @property
    def timeline(self) -> Timeline: ...


@dataclass(frozen=True)
class TableParts:
    storage: Storage
    config: TableConfig
    timeline: Timeline

    @classmethod
    def load(cls, path_or_uri: str, filesystem: pafs.FileSystem | None = None,
             storage_options: Mapping[str, str] | None = None) -> TableParts:
        return cls.load_storage(Storage.open(path_or_uri, filesystem, storage_options))

    @classmethod
    def load_storage(cls, storage: Storage) -> TableParts:
        config = TableConfig.load(storage)
        return cls(storage, config, Timeline.load(storage, config))
