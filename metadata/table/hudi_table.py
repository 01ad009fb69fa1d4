"""HudiTable: the entry point for reading one table."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs

from metadata.mdt.listing import MetadataListing, choose_listing
from metadata.mdt.metadata_table import MetadataTable
from metadata.storage.listing import FileListing
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig
from metadata.table.file_group import FileSlice
from metadata.table.fs_view import FileSystemView
from metadata.table.stored_table import TableParts
from metadata.timeline.active import Timeline
from metadata.timeline.instant import Instant, check_instant_time


class HudiTable:
    """A Hudi table at a path or URI: its storage, config and timeline, and
    the listing its file-system views read files from.

    `listing` injects the source (the metadata table's or storage's); when
    absent it is chosen on first use by `use_metadata`: None uses the
    metadata table when the table lists its `files` partition, True
    requires it, False lists storage. With `strict`, a damaged metadata
    table is an error instead of a fallback to storage (the listing note
    says why it fell back).
    """

    def __init__(
        self,
        storage: Storage,
        config: TableConfig,
        timeline: Timeline,
        listing: FileListing | None = None,
        use_metadata: bool | None = None,
        strict: bool = False,
    ) -> None:
        self.storage = storage
        self.config = config
        self.timeline = timeline
        self.use_metadata = use_metadata
        self.strict = strict
        self._views: dict[str | None, FileSystemView] = {}
        self._listing = listing
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path_or_uri: str,
        filesystem: pafs.FileSystem | None = None,
        use_metadata: bool | None = None,
        strict: bool = False,
        storage_options: Mapping[str, str] | None = None,
    ) -> HudiTable:
        """`storage_options` configure an object store as deltalake and hudi-rs take them
        (`metadata.storage.options`: endpoint, keys, region, Hadoop's fs.s3a.* names)."""
        parts = TableParts.load(path_or_uri, filesystem, storage_options)
        return cls(parts.storage, parts.config, parts.timeline, use_metadata=use_metadata, strict=strict)

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
                self._listing = choose_listing(self, self.use_metadata, self.strict)
            return self._listing

    @property
    def listing_note(self) -> str:
        return self.listing.note

    @property
    def metadata_table(self) -> MetadataTable | None:
        """The metadata table the listing reads, if it reads one."""
        listing = self.listing
        return listing.mdt if isinstance(listing, MetadataListing) else None

    def close(self) -> None:
        """Release the files the metadata table keeps open (the table stays usable)."""
        mdt = self.metadata_table if self._listing is not None else None
        if mdt is not None:
            mdt.close()

    # Views ----------------------------------------------------------------------
    def view(self, as_of: str | None = None) -> FileSystemView:
        if as_of is not None:
            check_instant_time(as_of, "as-of instant")  # before the listing is chosen (and its warnings said)
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
        return self.timeline.avro_schema()

    def latest_instant(self) -> Instant | None:
        return self.timeline.latest_completed()
