"""Incremental pull (RFC-04): what changed in (begin, end], from the timeline.

Only the commit metadata of the instants in range is read; only the
partitions they touched are looked at. Ranges use requested time on table
v6 and completion time on v8+ (begin exclusive, end inclusive). Rows are
then filtered on `_hoodie_commit_time` (which holds requested times, so on
v8+ the filter lists the instants in range).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metadata import CleanedFilesError, FileSlice, HudiTable, Instant
from metadata.errors import HudiBridgeError, HudiError
from metadata.timeline.instant import check_range


class IncrementalRangeError(HudiBridgeError):
    """The range cannot be served incrementally and fallback is off."""


@dataclass(frozen=True)
class IncrementalPlan:
    begin: str
    end: str | None
    instants: tuple[Instant, ...]
    partitions: tuple[str, ...]
    files: tuple[FileSlice, ...]
    row_filter: str
    full_scan: bool = False
    fallback_reason: str | None = None
    replaced: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "begin": self.begin,
            "end": self.end,
            "instants": [i.requested_time for i in self.instants],
            "partitions": list(self.partitions),
            "files": [s.to_dict() for s in self.files],
            "row_filter": self.row_filter,
            "full_scan": self.full_scan,
            "fallback_reason": self.fallback_reason,
        }


def range_key(table: HudiTable, instant: Instant) -> str:
    """Where an instant falls in an incremental range: completion time on v8+, requested time on v6."""
    if table.timeline.uses_completion_time:
        return instant.completion_time or instant.requested_time
    return instant.requested_time


def _row_filter(table: HudiTable, instants: list[Instant], commits: list[Instant], begin: str, end: str | None) -> str:
    """The rows of the instants in range, as a range on `_hoodie_commit_time` (never a list of the instants
    at hand: a full scan with it must not lose rows of instants outside the list). On v6 the range is the
    requested times'. On v8+ a range is of completion times while rows hold requested times: the range
    spans the instants' requested times, less those of `commits` inside it that completed outside it (a
    writer that overlapped another)."""
    if not table.timeline.uses_completion_time:  # right whatever instants are at hand (a full scan past an unreadable archive)
        last = instants[-1].requested_time if instants else end  # the last kept: max_commits may stop before `end`
        return f"_hoodie_commit_time > '{begin}'" + (f" AND _hoodie_commit_time <= '{last}'" if last else "")
    if not instants:
        return "FALSE"
    low, high = min(i.requested_time for i in instants), max(i.requested_time for i in instants)
    inside = {i.requested_time for i in instants}
    outside = sorted({i.requested_time for i in commits if low <= i.requested_time <= high and i.requested_time not in inside})
    text = f"_hoodie_commit_time = '{low}'" if low == high else f"_hoodie_commit_time >= '{low}' AND _hoodie_commit_time <= '{high}'"
    return text + (f" AND _hoodie_commit_time NOT IN ({', '.join(repr(t) for t in outside)})" if outside else "")


def incremental(
    path_or_uri: str | HudiTable,
    begin: str,
    end: str | None = None,
    max_commits: int | None = None,
    fallback_to_full_scan: bool = False,
    use_metadata: bool | None = None,
    strict: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> IncrementalPlan:
    """Plan the changes in (begin, end]; `max_commits` caps the instants (-1 or None: all).
    `strict`: a damaged metadata table is an error rather than a fallback to storage."""
    table = path_or_uri if isinstance(path_or_uri, HudiTable) else HudiTable.open(path_or_uri, use_metadata=use_metadata, strict=strict,
                                                                                                storage_options=storage_options)
    if not table.config.populate_meta_fields:
        raise IncrementalRangeError(
            f"{table.base_uri}: incremental queries need the _hoodie_commit_time meta field, which this table does not write "
            "(hoodie.populate.meta.fields=false), so Apache Hudi refuses them too; read a snapshot, or the change feed "
            "(hudi-bridge changes), whose record keys the key generator computes")
    begin, end = check_range(begin, end)
    timeline = table.timeline
    commits, problem = timeline.commits(), None
    first = timeline.first_active_time()
    if first is not None and begin < first and timeline.has_archived_instants:
        try:  # the range reaches into the archive: read it, as Hudi 1.x's readers do
            commits = [*timeline.archived_commits(), *commits]
        except HudiError as exc:
            problem = f"begin {begin} is before the active timeline (starts at {first}) and the archived timeline cannot be read ({exc})"
            if timeline.uses_completion_time or not fallback_to_full_scan:
                # v8+: which requested times completed in range is in the archive, so no row filter is known to be right
                raise IncrementalRangeError(f"{table.base_uri}: cannot pull ({begin}, {end or 'latest'}] incrementally: {problem}"
                                            + ("" if timeline.uses_completion_time else "; allow a full-table scan with the same row "
                                               "filter (hoodie.datasource.read.incr.fallback.fulltablescan.enable)")) from None
    in_range = sorted(
        (i for i in commits if range_key(table, i) > begin and (end is None or range_key(table, i) <= end)),
        key=lambda i: range_key(table, i),
    )
    if max_commits is not None and max_commits >= 0:
        in_range = in_range[:max_commits]
    end_instant = in_range[-1] if in_range else None
    row_filter = _row_filter(table, in_range, commits, begin, end)
    empty = [i for i in in_range if timeline.is_empty(i)]
    if problem is None and empty:
        problem = f"{timeline.instant_file(empty[0])} is empty, so which files it wrote is unknown"
    files: list[FileSlice] = []
    partitions: list[str] = []
    replaced: set[tuple[str, str]] = set()
    if problem is None and in_range:
        touched: dict[str, set[str]] = {}
        for instant in in_range:
            meta = timeline.commit_metadata(instant)
            for stat in meta.write_stats():
                if stat.file_id:
                    touched.setdefault(stat.partition_path, set()).add(stat.file_id)
            replaced |= meta.replaced_file_groups()
            for partition in meta.partition_to_replace_file_ids:
                touched.setdefault(partition, set())
        partitions = sorted(touched)
        try:
            view = table.view(_as_of_for(table, end_instant))
            for s in view.latest_file_slices(partitions):
                if s.file_id in touched.get(s.partition, set()) and (s.partition, s.file_id) not in replaced:
                    files.append(s)
        except CleanedFilesError as exc:
            problem = f"a file written in range has been cleaned ({exc})"
    if problem is not None:
        if not fallback_to_full_scan:
            raise IncrementalRangeError(
                f"{table.base_uri}: cannot pull ({begin}, {end or 'latest'}] incrementally: {problem}; "
                "allow a full-table scan with the same row filter (hoodie.datasource.read.incr.fallback.fulltablescan.enable)"
            )
        files = table.file_slices()
        partitions = sorted({s.partition for s in files})
        return IncrementalPlan(begin, end, tuple(in_range), tuple(partitions), tuple(files), row_filter, True, problem,
                               tuple(sorted(replaced)))
    return IncrementalPlan(begin, end, tuple(in_range), tuple(partitions), tuple(sorted(files, key=lambda s: (s.partition, s.file_id))),
                           row_filter, replaced=tuple(sorted(replaced)))


def _as_of_for(table: HudiTable, end_instant: Instant | None) -> str | None:
    """The view that holds every instant in the range and nothing after it
    (None: the latest view).

    On v8+ a range ends at a completion time; instants requested before it
    may complete later, so take the latest requested time among the
    instants that completed by then. On v6 that is the end instant itself.
    A range that ends in the archived timeline reads the latest slices of
    the file groups it wrote (a view as of then would need the archive's
    cleans): the rows written in range that live on, as Hudi 1.x returns."""
    first = table.timeline.first_active_time()
    if end_instant is None or (first is not None and end_instant.requested_time < first):
        return None
    limit = range_key(table, end_instant)
    done = [i.requested_time for i in table.timeline.completed() if range_key(table, i) <= limit]
    latest = table.timeline.latest_completed()
    as_of = max(done) if done else None
    return None if latest is not None and as_of == latest.requested_time else as_of


HIVE_MODE = "hoodie.{table}.consume.mode"
HIVE_START = "hoodie.{table}.consume.start.timestamp"
HIVE_MAX_COMMITS = "hoodie.{table}.consume.max.commits"
HIVE_COMMIT = "hoodie.{table}.consume.commit"


def incremental_from_hive_conf(path_or_uri: str | HudiTable, table_name: str, conf: dict[str, str]) -> IncrementalPlan | None:
    """Map Hive's session keys to a plan; None when the table is consumed as a snapshot."""
    mode = conf.get(HIVE_MODE.format(table=table_name), "SNAPSHOT").upper()
    if mode != "INCREMENTAL":
        return None
    begin = conf.get(HIVE_START.format(table=table_name))
    if not begin:
        raise IncrementalRangeError(f"{HIVE_MODE.format(table=table_name)}=INCREMENTAL needs {HIVE_START.format(table=table_name)}")
    max_commits = int(conf.get(HIVE_MAX_COMMITS.format(table=table_name), "1"))
    return incremental(path_or_uri, begin, None, None if max_commits < 0 else max_commits)
