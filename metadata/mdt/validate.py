"""RFC-15's validate mode: read the listing both ways and report differences;
then check column_stats against the Parquet footers of the base files."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from metadata.errors import MetadataTableDamaged, MissingFileError
from metadata.mdt import keys
from metadata.mdt.bloom_filters import footer_filters, stored_bloom_filters
from metadata.mdt.expression_index import IndexExpressions
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.listing import MetadataListing
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.records import ColumnStats
from metadata.mdt.stats_engine import LocalStatsEngine, StatsEngine, engine_ranges
from metadata.mdt.validate_expressions import check_expression_indexes
from metadata.mdt.validate_keys import check_key_indexes
from metadata.storage.listing import StorageListing
from metadata.storage.paths import StoredFile
from metadata.table.file_naming import BaseFileName, LogFileName, classify, is_log_file_name
from metadata.table.hudi_table import HudiTable
from metadata.table.stored_table import StoredTable
from metadata.timeline.commit_metadata import WriteStat
from metadata.timeline.instant import Action


@dataclass
class ValidationReport:
    partitions_only_in_metadata: list[str] = field(default_factory=list)
    partitions_only_in_storage: list[str] = field(default_factory=list)
    files_only_in_metadata: dict[str, list[str]] = field(default_factory=dict)
    files_only_in_storage: dict[str, list[str]] = field(default_factory=dict)
    size_mismatches: dict[str, list[str]] = field(default_factory=dict)
    slice_differences: list[str] = field(default_factory=list)
    stats_differences: list[str] = field(default_factory=list)
    bloom_differences: list[str] = field(default_factory=list)
    index_differences: list[str] = field(default_factory=list)  # record, secondary and expression indexes
    damaged_records: list[str] = field(default_factory=list)  # files records that cannot be read (their partitions left out)
    stats_files_checked: int = field(default=0, compare=False)
    bloom_files_checked: int = field(default=0, compare=False)
    index_entries_checked: int = field(default=0, compare=False)
    expression_files_checked: int = field(default=0, compare=False)
    notes: list[str] = field(default_factory=list, compare=False)  # what was found right, and said
    # Completed data instants the metadata table does not hold yet, and the differences they explain (a sync fixes them).
    behind: list[str] = field(default_factory=list)
    behind_differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(v for k, v in vars(self).items() if not k.endswith("_checked") and k != "notes")


    def differences(self) -> list[str]:
        lines = [f"partition {p!r} only in the metadata table" for p in self.partitions_only_in_metadata]
        lines += [f"partition {p!r} only in storage" for p in self.partitions_only_in_storage]
        lines += [f"{p}/{n}: only in the metadata table" for p, names in self.files_only_in_metadata.items() for n in names]
        lines += [f"{p}/{n}: only in storage" for p, names in self.files_only_in_storage.items() for n in names]
        lines += [f"{p}/{d}" for p, items in self.size_mismatches.items() for d in items]
        return self.damaged_records + lines + self.slice_differences + self.stats_differences + self.bloom_differences + self.index_differences

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "behind": list(self.behind), "behind_differences": list(self.behind_differences),
                "differences": self.differences(), "stats_files_checked": self.stats_files_checked,
                "bloom_files_checked": self.bloom_files_checked, "index_entries_checked": self.index_entries_checked,
                "expression_files_checked": self.expression_files_checked,
                "notes": list(self.notes)}

    def set_aside_behind(self, instants: list[str], stats: list[WriteStat], deletes_files: bool) -> None:
        """Move the differences the unsynced instants explain (partitions and
        files they wrote, slices of file groups they wrote; files they removed,
        when one of them removes files) to `behind_differences`."""
        self.behind = instants
        if not instants:
            return
        written = {(s.path or "").rsplit("/", 1)[-1] for s in stats}
        groups = {s.file_id for s in stats}
        for partition in [p for p in self.partitions_only_in_storage if p in {s.partition_path for s in stats}]:
            self.partitions_only_in_storage.remove(partition)
            self.behind_differences.append(f"partition {partition!r} only in storage")
        for partition, names in list(self.files_only_in_storage.items()):
            explained = [n for n in names if n in written]
            self.behind_differences += [f"{partition}/{n}: only in storage" for n in explained]
            rest = [n for n in names if n not in written]
            if rest:
                self.files_only_in_storage[partition] = rest
            else:
                del self.files_only_in_storage[partition]
        explained_slices = [d for d in self.slice_differences if any(f"/{group}:" in d for group in groups)]
        self.behind_differences += explained_slices
        self.slice_differences = [d for d in self.slice_differences if d not in explained_slices]
        if deletes_files:
            for partition, names in self.files_only_in_metadata.items():
                self.behind_differences += [f"{partition}/{n}: only in the metadata table" for n in names]
            self.behind_differences += [f"partition {p!r} only in the metadata table" for p in self.partitions_only_in_metadata]
            self.files_only_in_metadata, self.partitions_only_in_metadata = {}, []


def validate_metadata(path_or_table: HudiTable | str, check_stats: bool = True, engine: StatsEngine | None = None,
                      index_expressions: IndexExpressions | None = None) -> ValidationReport:
    """Compare the MDT's files partition with a storage listing and, when
    `check_stats`, its column_stats with the base files' Parquet footers.

    Storage files of instants that never completed are left out first: the
    MDT rightly does not list them.
    """
    table = path_or_table if isinstance(path_or_table, HudiTable) else HudiTable.open(path_or_table, use_metadata=False)
    mdt = MetadataTable.open(table)
    storage = StorageListing(table.storage)
    report = ValidationReport()
    behind = mdt.reader.unsynced_data_instants()
    from_mdt, from_storage = set(mdt.partitions()), set(storage.partitions())
    report.partitions_only_in_metadata = sorted(from_mdt - from_storage)
    report.partitions_only_in_storage = sorted(p for p in from_storage - from_mdt if committed_files(table, storage.files_for([p])[p]))
    common = sorted(from_mdt & from_storage)
    try:
        mdt_files = mdt.files_for(common)
    except MetadataTableDamaged:
        mdt_files = _readable_records(mdt, common, report)
        common = [p for p in common if p in mdt_files]
    stored = storage.files_for(common)
    extension = table.config.base_file_format.extension
    for partition in common:
        committed = {f.name: f.size for f in committed_files(table, stored[partition], extension)}
        listed = mdt_files[partition]
        only_mdt = sorted(set(listed) - set(committed))
        only_storage = sorted(set(committed) - set(listed))
        if only_mdt:
            report.files_only_in_metadata[partition] = only_mdt
        if only_storage:
            report.files_only_in_storage[partition] = only_storage
        sizes = [f"{n}: {listed[n]} bytes in the metadata table, {committed[n]} in storage"
                 for n in sorted(set(listed) & set(committed)) if listed[n] != committed[n] and not n.startswith(".")]
        if sizes:
            report.size_mismatches[partition] = sizes
    file_stats = _live_stats(mdt, MdtPartition.COLUMN_STATS) if check_stats and MdtPartition.COLUMN_STATS in table.config.metadata_partitions else {}
    present = {p: {f.name for f in stored[p]} for p in common}
    on_both = {p: {n: size for n, size in mdt_files[p].items() if n in present[p]} for p in common}  # files both listings hold
    if file_stats and not table.config.base_file_format.has_parquet_footers:
        report.notes.append(f"column_stats of base files not compared: {table.config.base_file_format.value} base files have no "
                            "Parquet footer to compare them with (Hudi keeps no statistics for them)")
    elif file_stats:
        _check_column_stats(table, file_stats, on_both, {p: set(mdt_files[p]) for p in common}, extension,
                            engine or LocalStatsEngine(), report)
    if check_stats:
        bases = {p: {n for n in names if n.endswith(extension) and not n.startswith(".")} for p, names in on_both.items()}
        expressions = check_expression_indexes(table, mdt, bases, index_expressions)
        report.index_differences += expressions.differences
        report.notes += expressions.notes
        report.expression_files_checked = expressions.files_checked
    if check_stats and MdtPartition.BLOOM_FILTERS in table.config.metadata_partitions:
        _check_bloom_filters(table, mdt, {p: set(names) for p, names in on_both.items()}, extension, report)
    if report.damaged_records:  # the slices the metadata table gives cannot be known; the rest was compared above
        return report
    with_mdt = HudiTable(table.storage, table.config, table.timeline, listing=MetadataListing(mdt, strict=True))
    with_storage = HudiTable(table.storage, table.config, table.timeline, listing=storage)
    latest_slices = with_mdt.file_slices()
    via_mdt = {(s.partition, s.file_id): s.files for s in latest_slices}
    try:
        via_storage = {(s.partition, s.file_id): s.files for s in with_storage.file_slices()}
    except MissingFileError as exc:
        report.slice_differences.append(f"the storage listing cannot serve the latest slices: {exc}")
        return report
    if check_stats and MdtPartition.PARTITION_STATS in table.config.metadata_partitions:
        latest: dict[str, list[str]] = {}
        for (partition, _), files in via_mdt.items():
            latest.setdefault(partition, []).extend(name.rsplit("/", 1)[-1] for name in files)
        _check_partition_stats(mdt, file_stats, latest, report, with_mdt.view().pending_compaction_partitions())
    for key in sorted(set(via_mdt) | set(via_storage)):
        if via_mdt.get(key) != via_storage.get(key):
            report.slice_differences.append(
                f"latest slice of {key[0]!r}/{key[1]}: metadata table {via_mdt.get(key)} vs storage {via_storage.get(key)}"
            )
    stats = [stat for i in behind if i.action.writes_data for stat in table.timeline.commit_metadata(i).write_stats()]
    removes = any(i.action in (Action.CLEAN, Action.ROLLBACK, Action.RESTORE, Action.REPLACE_COMMIT) for i in behind)
    report.set_aside_behind([i.requested_time for i in behind], stats, removes)
    if check_stats:
        keyed = check_key_indexes(table, mdt, latest_slices, {s.file_id for s in stats})
        report.index_differences += keyed.differences
        report.index_entries_checked = keyed.keys_checked
        report.behind_differences += keyed.behind
        report.notes += keyed.notes
    return report


def _readable_records(mdt: MetadataTable, partitions: list[str], report: ValidationReport) -> dict[str, dict[str, int]]:
    """The files records that read, one partition at a time; those that do not are reported."""
    readable = {}
    for partition in partitions:
        try:
            readable[partition] = mdt.files(partition)
        except MetadataTableDamaged as exc:
            report.damaged_records.append(f"{exc.path}: {exc.problem} (partition {partition!r} not compared)")
    return readable


def _check_column_stats(table: HudiTable, file_stats: dict[tuple[str, str], dict[str, ColumnStats]], listed: dict[str, dict[str, int]],
                        in_files_partition: dict[str, set[str]], extension: str, engine: StatsEngine,
                        report: ValidationReport) -> None:
    """Every live base file's column_stats records against its footer
    (`listed`: files both the files partition and storage hold).

    Hudi's stats come untruncated from the footers, so they must be equal.
    Log files are left out: their stats come from the records of the blocks
    that counted when each was written, which a later read cannot redo.
    """
    live_ids = {keys.partition_index_id(p): p for p in listed}
    held = {(live_ids[partition_id], name): columns for (partition_id, name), columns in file_stats.items() if partition_id in live_ids}
    columns = sorted({c for per_file in held.values() for c in per_file})
    if not columns:
        return
    base_files = {(p, name): f"{p}/{name}" if p else name
                  for p, names in listed.items() for name in names if name.endswith(extension) and not name.startswith(".")}
    for (p, name) in sorted(base_files):
        if (p, name) not in held:
            if _row_count(table, base_files[p, name]) == 0:  # Hudi writes no column_stats for a file without rows
                report.notes.append(f"{base_files[p, name]}: no column_stats record, and none is needed: the file holds no rows")
            else:
                report.stats_differences.append(f"{base_files[p, name]}: no column_stats record (indexed: {', '.join(columns)})")
    for (p, name) in sorted(held):
        if name not in in_files_partition.get(p, set()):
            report.stats_differences.append(f"{p}/{name}: live column_stats of a file the files partition does not list")
    to_read = sorted((p, n) for p, n in base_files if (p, n) in held)
    found = engine_ranges(engine, table.storage.uri, [(base_files[k], None) for k in to_read], columns, None, frozenset(),
                          table.storage.storage_options)
    by_file: dict[str, dict[str, ColumnRange]] = {}
    for r in found:
        by_file.setdefault(r.file_name, {})[r.column] = r
    for p, name in to_read:
        report.stats_files_checked += 1
        footer = by_file.get(name, {})
        for column, stats in sorted(held[p, name].items()):
            report.stats_differences.extend(_stat_differences(base_files[p, name], column, stats, footer.get(column)))


def _live_stats(mdt: MetadataTable, partition: MdtPartition) -> dict[tuple[str, str], dict[str, ColumnStats]]:
    """(partition id, file name or partition) -> column -> the live stats record, of a stats partition."""
    held: dict[tuple[str, str], dict[str, ColumnStats]] = {}
    for key, record in mdt.reader.read(partition, KeyQuery()).items():
        stats = record.column_stats
        if stats is not None and not stats.is_deleted:
            held.setdefault((keys.partition_id_of(key), stats.file_name), {})[stats.column_name] = stats
    return held


def _check_partition_stats(mdt: MetadataTable, per_file: dict[tuple[str, str], dict[str, ColumnStats]], latest: dict[str, list[str]],
                           report: ValidationReport, compacting: set[str]) -> None:
    """Each partition's partition_stats against the column_stats of its latest
    slices' files: a partition's range must hold every file's, or a plan
    trusting it drops the partition's rows (what a partition_stats left behind
    by a writer that did not update it does). Files without column_stats are
    checked against the footers by `_check_column_stats`. `per_file`: the
    live column_stats records (`_live_stats`). In `compacting` partitions (a
    pending compaction's), Hudi's ranges leave out the slice being compacted
    and plans do not use them: a note, not a difference."""
    if not per_file:
        report.notes.append("partition_stats not checked: there is no column_stats to check them against")
        return
    per_partition = {partition_id: columns for (partition_id, _), columns in _live_stats(mdt, MdtPartition.PARTITION_STATS).items()}
    for partition, names in sorted(latest.items()):
        partition_id = keys.partition_index_id(partition)
        held = per_partition.get(partition_id)
        if held is None:
            continue  # no partition_stats: a plan keeps the partition
        for column, stats in sorted(held.items()):
            files = [(name, f[column]) for name in names if (f := per_file.get((partition_id, name))) and column in f]
            for name, file_stats in files:
                outside = _outside(stats, file_stats)
                if outside and partition in compacting:
                    report.notes.append(f"partition_stats of {partition!r}: {column!r} leaves out {outside} of {name}, in a file group "
                                        "a pending compaction compacts (as Hudi rolls them up); plans keep the partition")
                    break
                if outside:
                    report.stats_differences.append(
                        f"partition_stats of {partition!r}: {column!r} is [{stats.min_value!r}, {stats.max_value!r}], which does not "
                        f"hold {outside} of its file {name}: a plan would drop the partition's rows (stale partition_stats)")
                    break


def _outside(partition: ColumnStats, file: ColumnStats) -> str | None:
    """What of a file's range a partition's range does not hold (None: it holds it all)."""
    try:
        if file.min_value is not None and (partition.min_value is None or file.min_value < partition.min_value):
            return f"its min {file.min_value!r}"
        if file.max_value is not None and (partition.max_value is None or file.max_value > partition.max_value):
            return f"its max {file.max_value!r}"
    except TypeError:  # values of types that do not compare (an evolved column): nothing is said
        return None
    return None


def _row_count(table: HudiTable, relative: str) -> int | None:
    """A base file's row count from its footer (None: it does not read)."""
    try:
        with table.storage.open_random_access(relative) as handle:
            return int(pq.ParquetFile(handle).metadata.num_rows)
    except (OSError, pa.ArrowInvalid):
        return None


def _check_bloom_filters(table: HudiTable, mdt: MetadataTable, listed: dict[str, set[str]], extension: str,
                         report: ValidationReport) -> None:
    """Every live base file's bloom_filters record against its footer's
    filter: the same type code and the same serialized text."""
    bases = sorted((p, n) for p, names in listed.items() for n in names if n.endswith(extension) and not n.startswith("."))
    held = stored_bloom_filters(mdt, bases)
    wheres = [f"{p}/{name}" if p else name for p, name in bases]
    for (p, name), where, footer in zip(bases, wheres, footer_filters(table.storage, wheres)):
        report.bloom_files_checked += 1
        if held.get((p, name)) != footer:
            if footer is None:
                report.bloom_differences.append(f"{where}: a bloom_filters record, but no filter in the footer")
            elif (p, name) not in held:
                report.bloom_differences.append(f"{where}: no bloom_filters record")
            else:
                report.bloom_differences.append(f"{where}: bloom_filters record differs from the footer's filter "
                                                f"({held[p, name].type_code} vs {footer.type_code})")


def _stat_differences(where: str, column: str, held: ColumnStats, footer: ColumnRange | None) -> list[str]:
    if footer is None:
        if held.min_value is None and held.max_value is None:
            return []  # a column the file does not have: Hudi writes empty stats
        return [f"{where}: column_stats of {column!r} hold [{held.min_value!r}, {held.max_value!r}] "
                f"but the file's footer has no such column"]
    pairs = {"min": (held.min_value, footer.min_value), "max": (held.max_value, footer.max_value),
             "nullCount": (held.null_count, footer.null_count), "valueCount": (held.value_count, footer.value_count)}
    if footer.min_value is None and footer.max_value is None and held.null_count is not None and held.null_count == held.value_count:
        del pairs["min"], pairs["max"]  # all NULL: Hudi records its reader's defaults (False, 0, 0.0) as bounds, which say nothing
    why = ""
    if any(isinstance(v, float) and math.isnan(v) for v in (footer.min_value, footer.max_value)):
        why = (" (a NaN: parquet-mr then writes no float bounds and Hudi records 0.0 for both; plans do not use a float range "
               "of [0.0, 0.0])")
    return [f"{where}: {column!r} {what} is {a!r} in column_stats, {b!r} in the footer{why}"
            for what, (a, b) in pairs.items() if not _same_value(a, b)]


def _same_value(a: Any, b: Any) -> bool:
    """Equal as values: decimals of different scales, naive UTC vs aware timestamps."""
    if isinstance(a, datetime) and isinstance(b, datetime):
        return _as_utc(a) == _as_utc(b)
    if isinstance(a, int) and isinstance(b, datetime) and not isinstance(a, bool):
        return _same_value(b, a)
    if isinstance(a, datetime) and isinstance(b, int) and not isinstance(b, bool):
        # A timestamp Hudi keeps as its long: microseconds or milliseconds since the epoch, as the column's unit is.
        micros = (_as_utc(a) - EPOCH) // timedelta(microseconds=1)
        return b in (micros, micros // 1000)
    if isinstance(a, (Decimal, int, float)) and isinstance(b, (Decimal, int, float)) and not isinstance(a, bool):
        return Decimal(str(a)) == Decimal(str(b)) if isinstance(a, Decimal) or isinstance(b, Decimal) else a == b
    return bool(a == b)


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def committed_files(table: StoredTable, files: list[StoredFile], extension: str = ".parquet") -> list[StoredFile]:
    """Base, log and change-data log files whose writing instant completed
    (what the MDT lists: Hudi lists a commit's CDC logs there too)."""
    kept = []
    timeline = table.timeline
    # A v6 log is named by its slice's base instant, not its writer: an archived base says its writer completed only
    # when no write is pending now.
    v6_logs_of_archived_bases = table.config.version < 8 and not any(i.action.writes_data for i in timeline.pending())
    for f in files:
        parsed = classify(f.name, extension, f.relative_path)
        if parsed is None and is_log_file_name(f.name) and not f.name.endswith(".crc"):
            parsed = LogFileName.parse(f.name, f.relative_path)  # a change-data log: no slice reads it, the MDT lists it
        if isinstance(parsed, (BaseFileName, LogFileName)) and timeline.is_completed(parsed.instant_time):
            kept.append(f)
        elif isinstance(parsed, (BaseFileName, LogFileName)) and timeline.completed_or_archived(parsed.instant_time) and (
                isinstance(parsed, BaseFileName) or table.config.version >= 8 or v6_logs_of_archived_bases):
            kept.append(f)  # written by an archived commit
        elif isinstance(parsed, LogFileName) and f.name in table.timeline.written_file_names():
            # v6: a log written while its group awaits compaction is named after
            # the pending compaction; the commit that wrote it says it counts.
            kept.append(f)
    return kept
