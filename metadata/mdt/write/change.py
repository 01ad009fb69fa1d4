"""What one data instant did to the table's files, as a sync reads it."""

from __future__ import annotations

from dataclasses import dataclass, field

from metadata.errors import IndexWriteError
from metadata.table.stored_table import TableParts
from metadata.timeline.instant import Action, Instant


@dataclass
class TableChange:
    """Files added and deleted by one data instant, per partition."""

    added: dict[str, dict[str, int]]
    deleted: dict[str, set[str]]
    dropped_partitions: set[str]
    keyed: bool = False  # the added files' keys go to the record index (not for a compaction: keys stay put)
    rekeyed_partitions: set[str] = field(default_factory=set)  # record-index locations to write again

    @property
    def touched_partitions(self) -> list[str]:
        """Partitions whose latest slices changed and still exist (their partition-level records are written again)."""
        return sorted((set(self.added) | set(self.deleted)) - self.dropped_partitions)

    @property
    def changes_files(self) -> bool:
        return bool(self.added or self.deleted)

    @classmethod
    def of(cls, data: TableParts, instant: Instant) -> TableChange | None:
        timeline = data.timeline
        if instant.action.writes_data:
            added: dict[str, dict[str, int]] = {}
            for stat in timeline.commit_metadata(instant).write_stats():
                added.setdefault(stat.partition_path, {})[stat.file_name] = stat.file_size_in_bytes or 0
                for path, size in stat.cdc_stats:  # change-data logs: Hudi's files partition lists them too
                    added[stat.partition_path][path.rpartition("/")[2]] = size
            return cls(added, {}, set(), keyed=not instant.is_compaction)
        if instant.action is Action.CLEAN:
            clean = timeline.clean_metadata(instant)
            return cls({}, clean.deleted_file_names(), clean.deleted_partitions())
        if instant.action is Action.ROLLBACK:
            rollback = timeline.rollback_metadata(instant)
            deleted = {p: set(names) for p, names in rollback.deleted_files.items() if names}
            return cls({}, deleted, set(), rekeyed_partitions=set(deleted))
        if instant.action is Action.RESTORE:
            raise IndexWriteError(f"{timeline.instant_file(instant)}: a restore is not synced incrementally; "
                                  "rebuild the metadata table with `hudi-bridge index build --rebuild`")
        return None
