"""HudiTable: the entry point for reading one table."""

from __future__ import annotations

import json
import threading
from typing import Any

import pyarrow.fs as pafs

from metadata.errors import HudiError, MetadataTableUnavailable
from metadata.file_group import FileSlice
from metadata.fs_view import FileSystemView
from metadata.instant import Instant
from metadata.listing import FileListing, StorageListing
from metadata.storage import Storage
from metadata.table_config import TableConfig
from metadata.timeline import Timeline


class HudiTable:
    """A Hudi table at a path or URI.

    `use_metadata`: None uses the metadata table when the table lists its
    `files` partition; True requires it; False lists storage.
    """

    def __init__(self, storage: Storage, config: TableConfig, timeline: Timeline, use_metadata: bool | None = None) -> None:
        self.storage = storage
        self.config = config
        self.timeline = timeline
        self.use_metadata = use_metadata
        self._views: dict[str | None, FileSystemView] = {}
        self._listing: FileListing | None = None
        self._lock = threading.Lock()
        self.listing_note: str = ""

    @classmethod
    def open(
        cls,
        path_or_uri: str,
        filesystem: pafs.FileSystem | None = None,
        use_metadata: bool | None = None,
    ) -> "HudiTable":
        storage = Storage.open(path_or_uri, filesystem)
        config = TableConfig.load(storage)
        timeline = Timeline.load(storage, config)
        return cls(storage, config, timeline, use_metadata)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def base_uri(self) -> str:
        return self.storage.uri

    # Listing source -----------------------------------------------------------
    @property
    def listing(self) -> FileListing:
        with self._lock:
            if self._listing is None:
                self._listing = self._choose_listing()
            return self._listing

    def _choose_listing(self) -> FileListing:
        if self.use_metadata is False:
            self.listing_note = "storage listing (metadata table not requested)"
            return StorageListing(self.storage)
        from metadata.mdt.listing import metadata_listing_or_reason

        listing, reason = metadata_listing_or_reason(self)
        if listing is not None:
            self.listing_note = "metadata table files partition"
            return listing
        if self.use_metadata:
            raise MetadataTableUnavailable(reason)
        self.listing_note = f"storage listing ({reason})"
        return StorageListing(self.storage)

    # Views ----------------------------------------------------------------------
    def view(self, as_of: str | None = None) -> FileSystemView:
        with self._lock:
            existing = self._views.get(as_of)
        if existing is not None:
            return existing
        view = FileSystemView(self.config, self.timeline, self.listing, as_of)
        with self._lock:
            return self._views.setdefault(as_of, view)

    def partitions(self, as_of: str | None = None) -> list[str]:
        if not self.config.is_partitioned:
            return [""] if self.view(as_of).latest_file_slices([""]) else []
        return self.view(as_of).partitions()

    def file_slices(self, partition: str | None = None, as_of: str | None = None) -> list[FileSlice]:
        view = self.view(as_of)
        return view.latest_file_slices(None if partition is None else [partition])

    # Schema -------------------------------------------------------------------------
    def avro_schema(self) -> dict[str, Any]:
        text = self.timeline.latest_schema()
        if not text:
            raise HudiError(f"{self.storage.uri}: no commit records a schema and hoodie.properties has no create schema")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise HudiError(f"{self.storage.uri}: the table's Avro schema is not valid JSON ({exc.msg} at {exc.pos})") from None

    def latest_instant(self) -> Instant | None:
        return self.timeline.latest_completed()
