"""File-group pruning through record keys: the record index and secondary
indexes (Hudi's RecordLevelIndexSupport and SecondaryIndexSupport).

The predicate pins record keys (`key = v`, `key IN (...)`, or values of a
column with a secondary index); the record index names the one file group
that holds each. That is sound only when no key is held twice, which is
shown, not assumed (`duplicate_key_risk`), and only for file groups all of
whose files the index has synced: any other group stays.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from listers.index_support.base import FileIndexSupport, FileListing, Groups, PlanContext, within
from listers.index_support.keys import index_texts
from metadata import FileSlice, MetadataTable
from metadata.formats.stats_table import FILE_NAME, PARTITION
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.indexes import (
    record_index_is_global,
    record_keys_with_values,
    record_locations,
    record_locations_anywhere,
    secondary_indexes,
)
from metadata.mdt.key_uniqueness import unique_keys
from metadata.table.file_naming import LogFileName, file_id_of
from metadata.util import arrow_values

# Writes that look every key up before writing it, or add no keys.
KEY_UNIQUE_OPERATIONS = frozenset({
    "UPSERT", "UPSERT_PREPPED", "DELETE", "DELETE_PREPPED", "DELETE_PARTITION", "COMPACT", "LOG_COMPACT", "CLUSTER",
})
# The instant in a base file name (`id_token_instant.ext`) or a log file name (`.id_instant.log.N_token`).
_FILE_INSTANT = r"^(?:\..*_(?P<log>\d{14,})\.(?:log|archive)\.|[^_]*_[^_]*_(?P<base>\d{14,}))"


class _KeyIndex(FileIndexSupport):
    """Keys -> the file groups holding them; groups the index may not cover stay."""

    def __init__(self) -> None:
        self.keys: set[str] | None = None
        self.allowed: set[tuple[str, str]] | None = None
        self.trusted = ""

    def _keys(self, ctx: PlanContext, mdt: MetadataTable) -> set[str] | None:
        raise NotImplementedError

    def usable(self, ctx: PlanContext) -> bool:
        mdt = ctx.mdt
        if mdt is None or MdtPartition.RECORD_INDEX not in ctx.table.config.metadata_partitions:
            return False
        partitioned = not record_index_is_global(mdt)
        if partitioned and self.name != MdtPartition.RECORD_INDEX:
            ctx.not_used.append(f"{self.name}: secondary indexes are read through a global record index; this one is partitioned")
            return False
        self.keys = self._keys(ctx, mdt)
        given = ctx.key_groups if isinstance(self, RecordIndex) else None
        if self.keys is None and given is None:
            return False
        risk, self.trusted = duplicate_key_risk(ctx)
        if risk is not None:
            ctx.not_used.append(f"{self.name}: {risk}")
            return False
        allowed: set[tuple[str, str]] = set()
        lookup = ctx.key_lookup
        if self.keys is not None and lookup is not None and lookup.wanted(self.keys):
            allowed = lookup.locate(sorted(self.keys))
            self.trusted += f"; {len(self.keys)} keys (over {lookup.threshold}) looked up {lookup.where}"
        elif self.keys is not None and partitioned:  # a key once per data partition: every location of it
            allowed = record_locations_anywhere(mdt, sorted(self.keys))
            self.trusted += "; partitioned record index (every data partition's entry of a key kept)"
        elif self.keys is not None:
            allowed = set(record_locations(mdt, sorted(self.keys)).values())
        if given is not None:  # the groups of a key set looked up elsewhere (a Spark join): both must hold
            allowed = set(given) if self.keys is None else allowed & given
            self.trusted += f"; {len(given)} file group(s) hold the keys looked up on Spark"
        self.allowed = allowed
        return True

    def _covered(self, ctx: PlanContext) -> frozenset[str]:
        assert ctx.mdt is not None
        return ctx.mdt.reader.synced_data_instants()

    def prune_groups(self, ctx: PlanContext, listing: FileListing, groups: Groups | None) -> Groups | None:
        """The groups holding a key, and every group with a file the index has
        not synced (read off the file names, without building slices)."""
        assert self.allowed is not None
        found: Groups = {}
        for partition, file_id in self.allowed:
            found.setdefault(partition, set()).add(file_id)
        files = listing.table
        names = files.column(FILE_NAME)
        instants = pc.extract_regex(names.combine_chunks() if isinstance(names, pa.ChunkedArray) else names, _FILE_INSTANT)
        log_instant, base_instant = instants.field("log"), instants.field("base")
        instant = pc.if_else(pc.not_equal(log_instant, arrow_values.EMPTY_STRING), log_instant, base_instant)
        synced = pc.fill_null(pc.is_in(instant, arrow_values.array(sorted(self._covered(ctx)), pa.string())), arrow_values.FALSE)
        if ctx.table.config.timeline_layout_version < 2:  # v6 log names carry the base instant, not the writer's
            synced = pc.and_(synced, pc.equal(log_instant, arrow_values.EMPTY_STRING))
        unsynced = files.filter(pc.invert(synced))
        for partition, name in zip(unsynced.column(PARTITION).to_pylist(), unsynced.column(FILE_NAME).to_pylist()):
            found.setdefault(partition, set()).add(file_id_of(name))
        return within(found, groups)

    def prune_slices(self, ctx: PlanContext, slices: list[FileSlice]) -> tuple[list[FileSlice], str] | None:
        assert self.allowed is not None
        covered = self._covered(ctx)
        kept = [s for s in slices if (s.partition, s.file_id) in self.allowed or not _covered_by_index(ctx, s, covered)]
        pinned = f"{len(self.keys)} record key(s)" if self.keys is not None else "record keys of a DataFrame"
        return kept, f"{pinned} in {len(self.allowed)} file group(s); {self.trusted}"


class RecordIndex(_KeyIndex):
    name = MdtPartition.RECORD_INDEX.value

    def _keys(self, ctx: PlanContext, mdt: MetadataTable) -> set[str] | None:
        return ctx.record_keys


class SecondaryIndexes(_KeyIndex):
    """Every secondary index on a column the predicate pins: record keys with
    the pinned values (all of them, where several columns are pinned)."""

    name = "secondary_index"

    def _keys(self, ctx: PlanContext, mdt: MetadataTable) -> set[str] | None:
        keys: set[str] | None = None
        used = []
        for index in secondary_indexes(mdt):
            texts = index_texts(ctx.predicate, index.column, days=True)
            if texts is not None:
                found = record_keys_with_values(mdt, index, texts)
                keys = found if keys is None else keys & found
                used.append(index.value)
        if used:
            self.name = " + ".join(used)
        return keys


def duplicate_key_risk(ctx: PlanContext) -> tuple[str | None, str]:
    """(why a key might live in more than one file group, or None; how it was
    ruled out). The record index keeps one location per key, so it prunes
    soundly only when no key is held twice: every write looked keys up
    (upserts, deletes, table services), or the counts show it
    (`metadata.mdt.key_uniqueness`); an insert or bulk insert may write a key
    a second time. `assume_unique_keys` trusts the index, as Apache Hudi does."""
    if ctx.assume_unique_keys:
        return None, "assume_unique_keys"
    timeline = ctx.table.timeline
    risk = None
    if timeline.has_archived_instants:
        risk = "the archived timeline is not read, so whether an insert wrote a key twice is unknown"
    else:
        for instant in timeline.commits():
            operation = (timeline.commit_metadata(instant).operation_type or "").upper()
            if operation not in KEY_UNIQUE_OPERATIONS:
                risk = (f"{instant.requested_time} is {operation.lower() or 'a commit with no operation type'}, which may "
                        "write a key another file group holds")
                break
    if risk is None:
        return None, "every commit looked keys up"
    assert ctx.mdt is not None
    proof = unique_keys(ctx.mdt, ctx.table.file_slices)
    if proof.shown:
        return None, proof.reason
    return (f"{risk}, and {proof.reason}; the index keeps one location per key "
            "(assume_unique_keys trusts it, as Apache Hudi does)"), ""


def _covered_by_index(ctx: PlanContext, s: FileSlice, covered: frozenset[str]) -> bool:
    """The index holds every write of this slice: all its files are from instants it synced."""
    if s.base_instant not in covered:
        return False
    if not s.log_files:
        return True
    if ctx.table.config.timeline_layout_version < 2:
        return False  # v6 log names carry the base instant, not the writer's
    return all(LogFileName.parse(name).instant_time in covered for name in s.log_file_names)
