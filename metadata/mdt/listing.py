"""The metadata table's files partition as a FileListing (RFC-15: no storage listing)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from metadata.errors import HudiError
from metadata.storage import StoredFile, join

if TYPE_CHECKING:
    from metadata.mdt.metadata_table import MetadataTable
    from metadata.table import HudiTable


class MetadataListing:
    source = "metadata table"

    def __init__(self, mdt: "MetadataTable") -> None:
        self.mdt = mdt
        self._partitions: list[str] | None = None
        self._files: dict[str, list[StoredFile]] = {}
        self._lock = threading.Lock()

    def partitions(self) -> list[str]:
        with self._lock:
            if self._partitions is None:
                self._partitions = self.mdt.partitions()
            return list(self._partitions)

    def files_for(self, partitions: list[str]) -> dict[str, list[StoredFile]]:
        with self._lock:
            missing = [p for p in partitions if p not in self._files]
        if missing:
            found = self.mdt.files_for(missing)
            with self._lock:
                for partition, files in found.items():
                    self._files[partition] = sorted(
                        (StoredFile(join(partition, name), size) for name, size in files.items()),
                        key=lambda f: f.relative_path,
                    )
        with self._lock:
            return {p: self._files[p] for p in partitions}


def metadata_listing_or_reason(table: "HudiTable") -> tuple[MetadataListing | None, str]:
    """The MDT listing, or None and why it cannot be used."""
    from metadata.mdt.metadata_table import MetadataTable

    try:
        return MetadataListing(MetadataTable.open(table)), ""
    except HudiError as exc:
        reason = str(exc)
        prefix = f"{table.base_uri}: "
        return None, reason[len(prefix):] if reason.startswith(prefix) else reason
