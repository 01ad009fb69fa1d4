"""Where the file-system view gets its file names from.

`StorageListing` lists storage. The metadata table offers the same
interface (`metadata.mdt.listing.MetadataListing`), so the view and its
callers do not change when the source does.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
import pyarrow as pa

from metadata.errors import StoredFileNotFound
from metadata.storage.paths import StoredFile, join
from metadata.storage.storage import Storage
from metadata.table.file_naming import PARTITION_METADATA_PREFIX
from metadata.util import arrow_values
from metadata.util.text_enum import TextEnum

METAFOLDER = ".hoodie"
LISTING_THREADS = 16  # folders listed at once on an object store


class ListingSource(TextEnum):
    STORAGE = "storage"
    METADATA_TABLE = "metadata table"


class FileListing(Protocol):
    """A source of partition names and the files in each partition."""

    @property
    def source(self) -> ListingSource: ...

    @property
    def note(self) -> str:
        """How files are listed, and why when it is not the first choice."""

    @property
    def warning(self) -> str | None:
        """Why this listing is a fallback from a metadata table that should have served (None: it is not)."""

    def partitions(self) -> list[str]:
        """Partition paths ("" for a non-partitioned table)."""

    def files_for(self, partitions: list[str]) -> dict[str, list[StoredFile]]:
        """Files of each named partition (paths relative to the table base)."""

    def file_names_for(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        """File name -> size of each named partition: `files_for` without
        building a StoredFile per file (what a plan filters before building)."""

    def file_table(self, partitions: list[str]) -> pa.Table:
        """The files of the named partitions as one table (FILE_TABLE_SCHEMA),
        without a Python object per file: what a plan filters by statistics."""


class StorageListing:
    """Lists partitions by walking storage for partition metadata files.

    A folder holding `.hoodie_partition_metadata*` is a partition, as in
    Hudi's own storage listing, which walks every folder but `.hoodie` (a
    partition value may start with a dot). Files seen while walking are kept, so listing files later
    costs no second call for those folders.
    """

    source = ListingSource.STORAGE

    def __init__(self, storage: Storage, why: str = "", warning: str | None = None) -> None:
        self.storage = storage
        self.note = f"storage listing ({why})" if why else "storage listing"
        self.warning = warning
        self._files: dict[str, list[StoredFile]] = {}
        self._partitions: list[str] | None = None
        self._lock = threading.Lock()

    def partitions(self) -> list[str]:
        with self._lock:
            if self._partitions is None:
                self._partitions = self._walk()
            return list(self._partitions)

    def _walk(self) -> list[str]:
        if self.storage.is_object_store:
            return self._walk_flat()
        found: list[str] = []
        pending = [""]
        while pending:
            folder = pending.pop()
            files, folders = self.storage.list_dir(folder)
            if any(f.name.startswith(PARTITION_METADATA_PREFIX) for f in files):
                found.append(folder)
                self._keep(folder, files)
                if folder:
                    continue  # a partition holds no partitions below it
            pending.extend(join(folder, sub) for sub in folders if sub != METAFOLDER)
        return sorted(found)

    def _walk_flat(self) -> list[str]:
        """The walk's answer from one flat listing of the table (an object
        store answers 1,000 keys a request, a folder at a time would be a
        request per partition): the same partitions, with their own files."""
        by_folder: dict[str, list[StoredFile]] = {}
        for stored in self.storage.list_tree():
            folder = stored.relative_path.rpartition("/")[0]
            by_folder.setdefault(folder, []).append(stored)
        partitions: set[str] = set()
        for folder in sorted(by_folder):  # a folder comes after every folder above it
            parts = folder.split("/") if folder else []
            if METAFOLDER in parts:
                continue  # the walk never enters a .hoodie folder
            if any("/".join(parts[:n]) in partitions for n in range(1, len(parts))):
                continue  # a partition holds no partitions below it
            files = by_folder[folder]
            if any(f.name.startswith(PARTITION_METADATA_PREFIX) for f in files):
                partitions.add(folder)
                self._keep(folder, files)
        return sorted(partitions)

    def _keep(self, partition: str, files: list[StoredFile]) -> None:
        """Hold a partition's files seen by the walk (so listing it later costs no call)."""
        self._files[partition] = files

    def files_for(self, partitions: list[str]) -> dict[str, list[StoredFile]]:
        with self._lock:
            missing = [p for p in partitions if p not in self._files]
        if missing:
            # Independent listings: on an object store, side by side to hide each one's latency.
            with ThreadPoolExecutor(max_workers=LISTING_THREADS if self.storage.is_object_store else 1) as pool:
                listed = list(pool.map(lambda partition: self.storage.list_dir(partition)[0], missing))
            with self._lock:
                for partition, files in zip(missing, listed):
                    self._files.setdefault(partition, files)
        with self._lock:
            return {partition: self._files[partition] for partition in partitions}

    def file_names_for(self, partitions: list[str]) -> dict[str, dict[str, int]]:
        return {p: {f.name: f.size for f in files} for p, files in self.files_for(partitions).items()}

    def file_table(self, partitions: list[str]) -> pa.Table:
        return file_table_of(self.file_names_for(partitions))


def partition_created_time(storage: Storage, partition: str) -> str | None:
    """The instant that made a partition's folder: `commitTime` in its
    `.hoodie_partition_metadata` (Hudi's `readPartitionCreatedCommitTime`).
    None when the folder has no such text file or it names no instant."""
    try:
        text = storage.read_bytes(join(partition, PARTITION_METADATA_PREFIX)).decode("utf-8", "replace")
    except StoredFileNotFound:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "commitTime" and value.strip().isdigit():
            return value.strip()
    return None


FILE_TABLE_SCHEMA = pa.schema([("partition", pa.string()), ("fileName", pa.string()), ("size", pa.int64())])


def file_table_of(names: Mapping[str, Mapping[str, int]], schema: pa.Schema = FILE_TABLE_SCHEMA) -> pa.Table:
    """A table (partition or record key, file name, size; FILE_TABLE_SCHEMA
    unless told) of file names and sizes per partition."""
    return pa.table([arrow_values.strings([p for p, files in names.items() for _ in files]),
                     arrow_values.strings([n for files in names.values() for n in files]),
                     arrow_values.from_numpy(np.fromiter((s for files in names.values() for s in files.values()), np.int64))],
                    schema=schema)


def names_of(table: pa.Table, partitions: list[str]) -> dict[str, dict[str, int]]:
    """File name -> size per partition of a FILE_TABLE_SCHEMA table (each of
    `partitions` present, if empty), built a batch at a time (the Python
    objects of a million rows are not all made at once)."""
    result: dict[str, dict[str, int]] = {p: {} for p in partitions}
    for batch in table.to_batches(max_chunksize=65536):
        for partition, name, size in zip(*(column.to_pylist() for column in batch.columns)):
            result[partition][name] = size
    return result
