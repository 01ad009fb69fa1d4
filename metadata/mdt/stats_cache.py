"""Decoded statistics kept for reuse, inside a process and across processes.

A `MetadataTable` reads one fixed state of the metadata table (its reader
loads the timeline once), so a transposed stats table it decoded stays true
for its whole life: a second plan on the same lister reuses it instead of
decoding the records again. Bounded by bytes, least recently used first out.

`PersistentStatsCache` keeps such tables as Arrow IPC files in a folder,
named by a digest of what they were read from: the metadata-table files of
the partition's latest slices (names and sizes) and its valid instants. A
commit, compaction or rebuild changes that digest, so a stale table is never
read; it is simply not found.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

log = logging.getLogger(__name__)

DEFAULT_STATS_CACHE_BYTES = 512 * 1024 * 1024
STATE_KEY = b"hudi-bridge.state"  # schema metadata: the digest of the metadata-table state a whole table was read from


def with_state(table: pa.Table, digest: str | None) -> pa.Table:
    """The table saying which state it was read from (None: it is a part of one, say nothing)."""
    metadata = dict(table.schema.metadata or {})
    metadata.pop(STATE_KEY, None)
    if digest is not None:
        metadata[STATE_KEY] = digest.encode()
    return table.replace_schema_metadata(metadata or None)


def state_of(table: pa.Table) -> str | None:
    value = (table.schema.metadata or {}).get(STATE_KEY)
    return value.decode() if value is not None else None


class StatsCache:
    def __init__(self, max_bytes: int = DEFAULT_STATS_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._tables: OrderedDict[Hashable, pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_build(self, key: Hashable, build: Callable[[], pa.Table]) -> pa.Table:
        with self._lock:
            table = self._tables.get(key)
            if table is not None:
                self._tables.move_to_end(key)
                self.hits += 1
                return table
            self.misses += 1
        table = build()
        self.put(key, table)
        return table

    def put(self, key: Hashable, table: pa.Table) -> None:
        """Keep a table (not when larger than the whole budget; the least recently used go first)."""
        size = table.nbytes
        if size > self.max_bytes:
            return  # larger than the whole budget: not kept
        with self._lock:
            if key in self._tables:
                return
            self._tables[key] = table
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = self._tables.popitem(last=False)
                self._bytes -= evicted.nbytes

    def holds(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._tables

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()
            self._bytes = 0


class PersistentStatsCache:
    """Transposed stats tables as Arrow IPC files below `folder`."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    @staticmethod
    def digest(parts: list[str]) -> str:
        return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]

    def get_or_build(self, digest: str, build: Callable[[], pa.Table], kind: str = "stats") -> pa.Table:
        """The table cached under `kind` and the digest, else built and cached."""
        path = self.folder / f"{kind}-{digest}.arrow"
        if path.exists():
            try:
                with pa.memory_map(str(path)) as source:
                    return ipc.open_file(source).read_all()
            except (OSError, pa.ArrowInvalid) as exc:
                log.warning("stats cache file %s does not read (%s); statistics are read again", path, exc)
        table = build()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
            with pa.OSFile(str(temp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            temp.replace(path)  # readers see the whole file or none
        except OSError as exc:
            log.warning("statistics not cached in %s: %s", self.folder, exc)
        return table
