"""Reading the metadata table consistently (reference sections 4, 5 and 9).

For each MDT partition: the latest file slice of every file group at or
before the latest completed MDT instant; its base HFile, then its log blocks
oldest first, keeping only blocks of valid instants (a completed data-table
instant or an MDT-only instant, not after the latest completed MDT instant)
and dropping blocks a rollback command block cancels. Records of one key
merge as section 5 says. Lookups by key or key prefix read only the HFile
blocks that can hold them.
"""

from __future__ import annotations

import logging
import posixpath
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from metadata._moved import moved_attribute
from metadata.errors import (
    HudiError,
    HudiFormatError,
    MetadataTableAbsent,
    MetadataTableDamaged,
    MetadataTableUnavailable,
    PropertiesMissing,
)
from metadata.formats.log_format import BlockType, LogBlock, decode_avro_records, decode_delete_keys, scan_log_blocks
from metadata.mdt.file_groups import SECONDARY_INDEX_PREFIX, MdtPartition, file_group_indexes
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.index_defs import index_definitions, routes_by_secondary_key
from metadata.mdt.key_query import KeyQuery, RawCells
from metadata.mdt.records import MetadataRecord, decode_record, merge_records, record_from_dict
from metadata.mdt.synced_instants import synced_data_instants, unsynced_data_instants, valid_mdt_instants
from metadata.storage.listing import StorageListing
from metadata.table.file_group import FileSlice
from metadata.table.file_naming import LogFileName
from metadata.table.fs_view import FileSystemView
from metadata.table.stored_table import StoredTable, TableParts
from metadata.timeline.instant import Action, Instant

log = logging.getLogger(__name__)

METADATA_FOLDER = ".hoodie/metadata"


def _apply_changes(current: MetadataRecord | None, changes: list[MetadataRecord | None]) -> MetadataRecord | None:
    """A key's record after its log changes, oldest first: a delete drops it,
    a record merges into what is there (reference section 5)."""
    for change in changes:
        current = None if change is None else merge_records(current, change)
    return current


@dataclass
class _LogContent:
    blocks: list[LogBlock]
    problems: list[HudiFormatError]


# Partitions whose records Hudi routes to a file group by the hash of the whole key.
_KEY_ROUTED = frozenset(p.value for p in MdtPartition)


def _ends_secondary_key(prefix: str) -> bool:
    """Whether a prefix is a whole `<escaped value>$` (its last '$' not escaped)."""
    if not prefix.endswith("$"):
        return False
    backslashes = len(prefix[:-1]) - len(prefix[:-1].rstrip("\\"))
    return backslashes % 2 == 0


class MetadataTableReader:
    """Merged reads of one data table's metadata table."""

    def __init__(self, data_table: StoredTable) -> None:
        self.data_table = data_table
        base_uri = data_table.storage.uri
        storage = data_table.storage.child(METADATA_FOLDER)
        try:  # read, not looked up first: on an object store a look-up is a request of its own
            self.mdt = TableParts.load_storage(storage)
        except PropertiesMissing:
            raise MetadataTableAbsent(base_uri, f"no metadata table at {METADATA_FOLDER}") from None
        except HudiError as exc:
            raise MetadataTableUnavailable(base_uri, f"metadata table unreadable ({exc})") from exc
        latest = self.mdt.timeline.latest_completed()
        if latest is None:
            raise MetadataTableUnavailable(base_uri, "metadata table has no completed instant")
        self.latest_instant = latest.requested_time
        # Not by reading every delta commit (two requests each on an object store): see file_slices.
        self.view = FileSystemView(self.mdt.config, self.mdt.timeline, StorageListing(storage), self.latest_instant,
                                   check_committed_bases=False)
        self.problems: list[HudiFormatError] = []
        self._lock = threading.Lock()
        self._readers: dict[str, HFileReader] = {}
        self._logs: dict[str, _LogContent] = {}
        self._inner: dict[tuple[str, int], HFileReader] = {}  # HFILE_DATA blocks, parsed once with their block cache
        self._v6_writers: dict[str, set[str]] | None = None
        self._valid = valid_mdt_instants(self.data_table, self.mdt, self.latest_instant)
        self._synced: frozenset[str] | None = None

    # Which log blocks count -----------------------------------------------------------
    def synced_data_instants(self) -> frozenset[str]:
        """Completed data-table instants whose changes the metadata table holds:
        those with their own delta commit, and those a build's snapshot took in."""
        if self._synced is None:
            self._synced = synced_data_instants(self.data_table, self.mdt, self._valid)
        return self._synced

    def unsynced_data_instants(self) -> list[Instant]:
        """Completed data instants newer than every one the metadata table holds (`synced_instants.unsynced_data_instants`)."""
        return unsynced_data_instants(self.data_table, self._valid, self.synced_data_instants)

    def close(self) -> None:
        """Close the HFiles opened for reads; a later read opens them again."""
        with self._lock:
            readers, self._readers = list(self._readers.values()), {}
            self._inner = {}
        for reader in readers:
            reader.close()

    @property
    def valid_instants(self) -> frozenset[str]:
        """MDT instants whose writes count (with completion times where the timeline has them)."""
        completion = {i.requested_time: i.completion_time or "" for i in self.mdt.timeline.completed()}
        return frozenset(f"{ts}:{completion.get(ts, '')}" for ts in self._valid)

    def is_valid_block(self, block: LogBlock) -> bool:
        return block.instant_time is not None and block.instant_time in self._valid

    # File slices --------------------------------------------------------------------------
    def file_slices(self, mdt_partition: str) -> list[FileSlice]:
        """The partition's latest slices. Every file group starts with a base
        file (or an empty initialisation) and a compaction writes a new one,
        so only a slice without a base file, or with one older than the
        newest compaction, can hide a missing base file: the commits are read
        for those alone (usually none)."""
        slices = self.view.latest_file_slices([mdt_partition])
        doubted = [s for s in slices if s.base_file is None or s.base_instant < self._newest_compaction]
        if doubted:
            self.view.check_slices(doubted)
        return slices

    @cached_property
    def _newest_compaction(self) -> str:
        return max((i.requested_time for i in self.mdt.timeline.completed() if i.action is Action.COMMIT), default="")

    def slices_holding(self, mdt_partition: str, query: KeyQuery) -> list[FileSlice]:
        """The slices that can hold the query's keys (`routed`)."""
        return [file_slice for file_slice, _ in self.routed(mdt_partition, query)]

    @cached_property
    def _index_definitions(self) -> dict[str, dict[str, object]]:
        return index_definitions(self.data_table.storage, self.data_table.config.raw)

    def routed(self, mdt_partition: str, query: KeyQuery) -> list[tuple[FileSlice, KeyQuery]]:
        """The slices that can hold the query's keys, each with the part of
        the query routed to it. Hudi's writer routes each record of these
        partitions to file group `mapRecordKeyToFileGroupIndex(key, groups)`
        (Java's String hash), so exact keys are read from their own groups
        only: one of the record index's 10+ groups, not all, and a 100,000-key
        lookup gives each group its own tenth. Secondary indexes route by the
        `<escaped value>$` prefix instead, so a lookup of a value reads one
        group too. Other prefix queries, groups not numbered 0..n-1, and a
        partition of one group (`files`: nothing to hash) read every slice
        with the whole query."""
        slices = self.file_slices(mdt_partition)
        if len(slices) <= 1:  # the files partition's 10,000 partition keys of a 1M listing were hashed to its one group
            return [(s, query) for s in slices]
        if mdt_partition in _KEY_ROUTED and query.keys is not None:
            routed_by, exact = query.keys, True
            prefix = MdtPartition(mdt_partition).file_group_prefix
        elif mdt_partition.startswith(SECONDARY_INDEX_PREFIX) and query.prefixes and all(_ends_secondary_key(p) for p in query.prefixes) \
                and routes_by_secondary_key(self._index_definitions.get(mdt_partition)):
            routed_by, exact = set(query.prefixes), False  # Hudi 1.1 routes secondary-index records by their "<escaped value>$" prefix
            prefix = mdt_partition.replace("_", "-") + "-"
        else:
            return [(s, query) for s in slices]
        by_index = {s.file_id: s for s in slices}
        numbered = [by_index.get(f"{prefix}{i:04d}-0") for i in range(len(slices))]
        if None in numbered:
            return [(s, query) for s in slices]
        groups: dict[int, list[str]] = {}
        ordered = list(routed_by)
        for key, index in zip(ordered, file_group_indexes(ordered, len(slices))):
            groups.setdefault(index, []).append(key)
        return [(numbered[i], KeyQuery(keys=keys) if exact else KeyQuery(prefixes=keys))  # type: ignore[misc]
                for i, keys in sorted(groups.items())]

    def _hfile(self, relative: str) -> HFileReader:
        with self._lock:
            reader = self._readers.get(relative)
        if reader is None:
            reader = HFileReader.open(self.mdt.storage, relative)
            with self._lock:
                reader = self._readers.setdefault(relative, reader)
        return reader

    def _log(self, relative: str) -> _LogContent:
        with self._lock:
            content = self._logs.get(relative)
        if content is None:
            path = self.mdt.storage.full_path(relative)
            with self.mdt.storage.open_ranges(relative) as handle:
                # Blocks of instants that do not count are skipped unread.
                result = scan_log_blocks(lambda offset, length: handle.read_at(length, offset), handle.size(), path, self.is_valid_block)
            content = _LogContent(result.blocks, result.problems)
            self._check_complete(relative, content)
            for problem in result.problems:
                log.warning("metadata table log: %s (a block of an instant that did not complete; earlier blocks are used)", problem)
            with self._lock:
                self._logs[relative] = content
                self.problems.extend(result.problems)
        return content

    def _check_complete(self, relative: str, content: _LogContent) -> None:
        """Every valid instant that wrote this log file must have its blocks in
        it; otherwise the metadata table would silently list less. A torn
        block of an instant that never completed is harmless."""
        found = {block.instant_time for block in content.blocks}
        missing = sorted(self._writers_of(relative) - found)
        if not missing:
            return
        problems = "; ".join(p.problem + (f" at offset {p.offset}" if p.offset is not None else "") for p in content.problems)
        raise MetadataTableDamaged(
            self.data_table.storage.uri,
            self.mdt.storage.full_path(relative),
            f"no readable block of completed instant(s) {', '.join(missing)}" + (f" ({problems})" if problems else " (the file is empty or ends early)"),
        )

    def _writers_of(self, relative: str) -> set[str]:
        """Valid instants that wrote a log file. From table version 8 a log file
        is named by the delta commit that wrote it; before, commit metadata says."""
        if self.mdt.config.version >= 8:
            try:
                written_by = LogFileName.parse(posixpath.basename(relative)).instant_time
            except HudiFormatError:
                return set()
            return {written_by} & self._valid
        with self._lock:
            if self._v6_writers is None:
                writers: dict[str, set[str]] = {}
                for instant in self.mdt.timeline.completed():
                    if instant.requested_time in self._valid and instant.action.writes_data:
                        for _partition, _file_id, path in self.mdt.timeline.written_files(instant):
                            if path:
                                writers.setdefault(path, set()).add(instant.requested_time)
                self._v6_writers = writers
            return set(self._v6_writers.get(relative, set()))

    def _valid_blocks(self, file_slice: FileSlice) -> list[tuple[str, LogBlock]]:
        kept: list[tuple[str, LogBlock]] = []
        for relative in file_slice.log_files:
            for block in self._log(relative).blocks:
                if not self.is_valid_block(block):
                    log.debug("skipping %s block of instant %s in %s", block.block_type.name, block.instant_time, relative)
                    continue
                if block.is_rollback:
                    target = block.target_instant_time
                    kept = [(p, b) for p, b in kept if b.instant_time != target]
                    continue
                kept.append((relative, block))
        return kept

    # Records ------------------------------------------------------------------------------
    def read(self, mdt_partition: str, query: KeyQuery) -> dict[str, MetadataRecord]:
        """Merged records of one MDT partition that the query selects."""
        merged: dict[str, MetadataRecord] = {}
        for records in self.read_each_slice(mdt_partition, query):
            for key, record in records.items():
                merged[key] = merge_records(merged.get(key), record)
        return merged

    def read_each_slice(self, mdt_partition: str, query: KeyQuery) -> Iterator[dict[str, MetadataRecord]]:
        """The records each slice holds for the query, its logs merged in, slice by slice."""
        for file_slice, part in self.routed(mdt_partition, query):
            base, changes = self._slice_contents(file_slice, part)
            records = {} if base is None else base.records_of()
            for key, changed in changes.items():
                current = _apply_changes(records.pop(key, None), changed)
                if current is not None:
                    records[key] = current
            yield records

    def key_count(self, mdt_partition: str) -> int:
        """Live keys of a partition: each base HFile's entry count (from its
        trailer, not its blocks), corrected by what the slice's valid log
        blocks add and delete (a point lookup in the base per changed key)."""
        total = 0
        for file_slice in self.file_slices(mdt_partition):
            base, changes = self._slice_contents(file_slice, KeyQuery())
            total += base.reader.entry_count if base is not None else 0
            for key, changed in changes.items():
                held_before = base is not None and base.value_of(key) is not None
                total += int(changed[-1] is not None) - int(held_before)
        return total

    def slice_split(self, file_slice: FileSlice, query: KeyQuery) -> tuple[RawCells | None, dict[str, MetadataRecord]]:
        """One slice's part of `read_split`: its base cells no log block
        touches (undecoded), and the keys its logs changed, merged."""
        base, changes = self._slice_contents(file_slice, query)
        older = base.records_of(list(changes)) if base is not None and changes else {}
        merged: dict[str, MetadataRecord] = {}
        for key, changed in changes.items():
            current = _apply_changes(older.get(key), changed)
            if current is not None:
                merged[key] = current
        return (base.without(changes) if base is not None and changes else base), merged

    def prefetch(self, mdt_partition: str, query: KeyQuery) -> None:
        """Start inflating the base-file blocks a loose prefix query will scan
        (`read_split` then takes them): for a caller that reads one query
        after another, from one thread."""
        if query.keys is not None or not query.loose:
            return
        for file_slice, part in self.routed(mdt_partition, query):
            if file_slice.base_file:
                self._hfile(file_slice.base_file).prefetch_covering(part.scan_prefixes())

    def open_base_files(self, mdt_partition: str) -> None:
        """Open the partition's base HFiles and read their block indexes (a
        plan about to read them, on the thread that will)."""
        for file_slice in self.file_slices(mdt_partition):
            if file_slice.base_file:
                self._hfile(file_slice.base_file).data_index  # noqa: B018 - read and kept by the reader

    def read_split(self, mdt_partition: str, query: KeyQuery) -> tuple[list[RawCells], dict[str, MetadataRecord]]:
        """`read` split for columnar decoding: the cells of base HFiles whose
        key no log block touches, undecoded (one RawCells per file), and every
        other key merged by `read`'s rules."""
        raw: list[RawCells] = []
        merged: dict[str, MetadataRecord] = {}
        for file_slice, part in self.routed(mdt_partition, query):
            base, changed = self.slice_split(file_slice, part)
            for key, current in changed.items():
                merged[key] = merge_records(merged.get(key), current)
            if base is not None:
                raw.append(base)
        return raw, merged

    def _slice_contents(self, file_slice: FileSlice, query: KeyQuery) -> tuple[RawCells | None, dict[str, list[MetadataRecord | None]]]:
        """The base HFile's selected cells, undecoded, and per key the changes
        of the slice's valid log blocks in order (None: deleted)."""
        base = None
        if file_slice.base_file:
            reader = self._hfile(file_slice.base_file)
            schema = reader.schema_json()
            if schema is None:
                raise HudiFormatError(reader.path, "HFile file info has no 'schema'")
            base = RawCells(reader, query, schema)
        changes: dict[str, list[MetadataRecord | None]] = {}
        for relative, block in self._valid_blocks(file_slice):
            for key, record in self._block_records(block, self.mdt.storage.full_path(relative), query):
                changes.setdefault(key, []).append(record)
        return base, changes

    def _block_records(self, block: LogBlock, where: str, query: KeyQuery) -> Iterator[tuple[str, MetadataRecord | None]]:
        if block.block_type is BlockType.HFILE_DATA:
            with self._lock:
                inner = self._inner.get((where, block.offset))
            if inner is None:
                inner = HFileReader.from_bytes(block.content, f"{where} (HFILE_DATA block at offset {block.offset})")
                with self._lock:
                    self._inner[(where, block.offset)] = inner
            schema = block.schema or inner.schema_json()
            if schema is None:
                raise HudiFormatError(where, "HFILE_DATA block has no schema", offset=block.offset)
            for row, value in query.scan(inner):
                key = row.decode("utf-8")
                yield key, decode_record(key, value, schema, where)
        elif block.block_type is BlockType.DELETE:
            for deleted, _partition in decode_delete_keys(block, where):
                if deleted is not None and query.matches(deleted):
                    yield deleted, None
        elif block.block_type is BlockType.AVRO_DATA:
            for data in decode_avro_records(block, where):
                key = data.get("key") or ""
                if query.matches(key):
                    yield key, record_from_dict(data, where)
        elif block.block_type is BlockType.CORRUPT:
            log.warning("%s: corrupt block at offset %d skipped", where, block.offset)


# Names this module offered before it was split, for one release.
_MOVED = {"FEW_KEYS": "metadata.mdt.key_query", "BUILT_THROUGH": "metadata.mdt.synced_instants", "PENDING_AT_BUILD": "metadata.mdt.synced_instants", "BuildCoverage": "metadata.mdt.synced_instants", "build_coverage": "metadata.mdt.synced_instants"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
