"""Change feeds in Apache Hudi's CDC query format, derived from the timeline.

Hudi answers a CDC query (`hoodie.datasource.query.incremental.format=cdc`)
only for tables written with `hoodie.table.cdc.enabled`. This derives the
same feed for any table: for each commit in (begin, end], the file groups
it changed are read as they were just before it and just after it, and the
rows are compared per record (partition path and record key):

- a record only after is an insert (`i`), only before a delete (`d`);
- a record in both whose values differ is an update (`u`), with both images;
- a key held more than once (inserts may write a key twice) is paired
  version by version (`pair_versions`).

So a compaction or a clustering, which rewrite records unchanged, give no
change; an insert overwrite deletes the records it replaced. Rows have
Hudi's CDC columns, all strings: `op`, `ts_ms` (the commit's instant),
`before` and `after` (the row as JSON, meta fields included, null where
there is no image), in commit order, then by partition and key.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa

from listers.incremental import _as_of_for, range_key
from metadata import CleanedFilesError, FileSlice, HudiTable, Instant
from metadata.errors import HudiBridgeError
from metadata.formats.cdc import CdcMode, read_cdc_records
from metadata.mdt.record_keys import RECORD_KEY_FIELD
from metadata.table.record_key import PARTITION_PATH_FIELD, RecordKeyError, RecordKeyRule
from metadata.table.slice_rows import changed_slices, conform, merged_rows, rows_of_slices, table_read_schema
from metadata.timeline.instant import Action, check_range
from metadata.util import arrow_values
from metadata.util.arrow_memory import empty_table
from metadata.util.text_enum import TextEnum

CDC_SCHEMA = pa.schema([("op", pa.string()), ("ts_ms", pa.string()), ("before", pa.string()), ("after", pa.string())])
# Where a record lives, not what it holds: a compaction or clustering changes it alone.
NOT_COMPARED = frozenset({"_hoodie_file_name"})


class ChangeOp(TextEnum):
    INSERT = "i"
    UPDATE = "u"
    DELETE = "d"


class ChangeFeedError(HudiBridgeError):
    """A change feed that cannot be derived (the message names the commit and why)."""


@dataclass(frozen=True)
class CommitChange:
    """What one commit changed: its file groups' slices before and after it,
    and the change-data logs it wrote per file group (CDC-enabled tables)."""

    instant: Instant
    before: tuple[FileSlice, ...]
    after: tuple[FileSlice, ...]
    cdc_logs: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (partition, file id, log paths)


def plan_changes(table: HudiTable, begin: str, end: str | None = None) -> list[CommitChange]:
    """The commits in (begin, end] (requested time on v6, completion time on
    v8+, as incremental pulls count them) and the slices each changed."""
    begin, end = check_range(begin, end)
    timeline = table.timeline
    ordered = sorted(timeline.completed(), key=lambda i: range_key(table, i))
    planned = []
    for n, instant in enumerate(ordered):
        key = range_key(table, instant)
        if key <= begin or (end is not None and key > end) or not _changes_data(instant):
            continue
        partitions = _touched_partitions(table, instant)
        if not partitions:
            continue
        if n == 0 and timeline.has_archived_instants:
            # The state before the first active instant is the archive's last, and a view of it would need the archived
            # cleans: answering from nothing would call every row of this commit's file groups an insert.
            raise ChangeFeedError(f"{table.base_uri}: the changes of {instant.action} {instant.requested_time}, the first instant of the "
                                  "active timeline, need the table as it was before it, in the archived timeline, which time travel "
                                  f"does not reach; begin at or after {key}")
        try:
            before = _slices(table, ordered[n - 1] if n else None, partitions)
            after = _slices(table, instant, partitions)
        except CleanedFilesError as exc:
            raise ChangeFeedError(f"{table.base_uri}: the changes of {instant.action} {instant.requested_time} need files a clean "
                                  f"removed ({exc}); begin after it") from None
        gone, came = changed_slices(before, after)
        planned.append(CommitChange(instant, tuple(gone), tuple(came), _cdc_logs(table, instant)))
    return planned


def changes(path_or_uri: str | HudiTable, begin: str, end: str | None = None,
            storage_options: Mapping[str, str] | None = None) -> pa.Table:
    """The change feed of (begin, end] as one Arrow table of CDC_SCHEMA."""
    table = path_or_uri if isinstance(path_or_uri, HudiTable) else HudiTable.open(path_or_uri, storage_options=storage_options)
    batches = [batch for change in plan_changes(table, begin, end) if (batch := commit_changes(table, change)).num_rows]
    return pa.concat_tables(batches) if batches else empty_table(CDC_SCHEMA)


def commit_changes(table: HudiTable, change: CommitChange, use_cdc_logs: bool = True) -> pa.Table:
    """The CDC rows of one commit: from its change-data logs where it wrote
    them (images the logging mode leaves out are read from the slices before
    and after, as Hudi's HoodieCDCRDD fills them), derived elsewhere."""
    mode = CdcMode.of_table(table.config.raw) if use_cdc_logs else None
    logged = {(p, file_id): paths for p, file_id, paths in change.cdc_logs} if mode is not None else {}
    changed: list[tuple[tuple[str, str], Row | None, Row | None]] = []
    schema = table_read_schema(table)
    before = _by_record(table, [s for s in change.before if (s.partition, s.file_id) not in logged], schema)
    after = _by_record(table, [s for s in change.after if (s.partition, s.file_id) not in logged], schema)
    for key in before.keys() | after.keys():
        changed += [(key, old, new) for old, new in pair_versions(before.get(key, []), after.get(key, []))]
    if mode is not None:
        for group, paths in logged.items():
            changed += _logged_changes(table, change, group, paths, mode)
    ops, befores, afters = [], [], []
    for _, old, new in sorted(changed, key=lambda entry: entry[0]):
        ops.append(ChangeOp.INSERT if old is None else ChangeOp.DELETE if new is None else ChangeOp.UPDATE)
        befores.append(None if old is None else _json(old))
        afters.append(None if new is None else _json(new))
    ts = change.instant.requested_time
    return pa.table({"op": arrow_values.array([op.value for op in ops], pa.string()), "ts_ms": arrow_values.array([ts] * len(ops), pa.string()),
                     "before": arrow_values.array(befores, pa.string()), "after": arrow_values.array(afters, pa.string())}, schema=CDC_SCHEMA)


Row = dict[str, Any]


def pair_versions(old: list[Row], new: list[Row]) -> list[tuple[Row | None, Row | None]]:
    """The changes of one record between two states. A key is normally held
    once; a table whose inserts wrote a key twice holds it more often, so
    versions equal in both states are set aside first, the rest paired in a
    fixed order as updates, and what is left over is inserted or deleted."""
    if len(old) <= 1 and len(new) <= 1:  # a key held once (the rule): no ordering to fix
        if old and new and _same(old[0], new[0]):
            return []
        return [(old[0] if old else None, new[0] if new else None)] if old or new else []
    left = sorted(old, key=_json)
    right = sorted(new, key=_json)
    for row in list(left):
        same = next((i for i, other in enumerate(right) if _same(row, other)), None)
        if same is not None:
            left.remove(row)
            right.pop(same)
    paired: list[tuple[Row | None, Row | None]] = list(zip(left, right))
    paired += [(row, None) for row in left[len(right):]]
    paired += [(None, row) for row in right[len(left):]]
    return paired


def _logged_changes(table: HudiTable, change: CommitChange, group: tuple[str, str], paths: tuple[str, ...],
                    mode: CdcMode) -> list[tuple[tuple[str, str], Row | None, Row | None]]:
    """One file group's changes as its change-data logs record them."""
    partition, file_id = group
    records = [r for path in paths for r in read_cdc_records(table.storage.read_bytes(path), table.storage.display_path(path))]
    needs_before, needs_after = mode is CdcMode.OP_KEY_ONLY, mode is not CdcMode.DATA_BEFORE_AFTER
    old = _by_key(rows_of_slices(table, [s for s in change.before if (s.partition, s.file_id) == group])) if needs_before else {}
    new = _by_key(rows_of_slices(table, [s for s in change.after if (s.partition, s.file_id) == group])) if needs_after else {}
    out: list[tuple[tuple[str, str], Row | None, Row | None]] = []
    for record in records:
        key = record.record_key or ""
        image_before = None if record.op == ChangeOp.INSERT.value else (old.get(key) if needs_before else record.before)
        image_after = None if record.op == ChangeOp.DELETE.value else (new.get(key) if needs_after else record.after)
        out.append(((partition, key), image_before, image_after))
    return out


def _by_key(rows: pa.Table | None) -> dict[str, Row]:
    return {} if rows is None else {r[RECORD_KEY_FIELD]: r for r in rows.to_pylist()}


def _cdc_logs(table: HudiTable, instant: Instant) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """The change-data logs a commit's write stats list, per file group. A compaction's are none: Hudi 1.2 writes
    `.cdc` logs when it compacts, but a compaction changes no record, and Hudi's CDC query reads none of them."""
    if not instant.action.writes_data or CdcMode.of_table(table.config.raw) is None or _is_compaction(table, instant):
        return ()
    return tuple((stat.partition_path, stat.file_id, tuple(path for path, _ in stat.cdc_stats))
                 for stat in table.timeline.commit_metadata(instant).write_stats() if stat.cdc_stats)


def _is_compaction(table: HudiTable, instant: Instant) -> bool:
    return instant.is_compaction or (table.config.is_mor and instant.action is Action.COMMIT)  # a MOR table commits compactions alone


def _changes_data(instant: Instant) -> bool:
    return instant.action.writes_data or instant.action in (Action.ROLLBACK, Action.RESTORE)


def _touched_partitions(table: HudiTable, instant: Instant) -> list[str]:
    timeline = table.timeline
    if instant.action in (Action.ROLLBACK, Action.RESTORE):
        if instant.action is Action.RESTORE:
            return table.view().partitions()  # a restore may take any partition back
        return sorted(p for p, names in timeline.rollback_metadata(instant).deleted_files.items() if names)
    meta = timeline.commit_metadata(instant)
    return sorted({stat.partition_path for stat in meta.write_stats()} | set(meta.partition_to_replace_file_ids))


def _slices(table: HudiTable, instant: Instant | None, partitions: list[str]) -> list[FileSlice]:
    """The latest slices of these partitions just after `instant` (None: before the first)."""
    if instant is None:
        return []
    return table.view(_as_of_for(table, instant)).latest_file_slices(partitions)


def _by_record(table: HudiTable, slices: list[FileSlice], schema: pa.Schema) -> dict[tuple[str, str], list[Row]]:
    """The slices' rows read through the table's schema (so a value stored
    as another type before the schema evolved compares equal), by partition
    and record key. On a table without meta fields the key is computed by its
    key generator and shown in the images' `_hoodie_record_key`, with the
    partition in `_hoodie_partition_path`."""
    rule = RecordKeyRule.of(table.config)
    found: dict[tuple[str, str], list[Row]] = {}
    for piece in slices:
        where = table.storage.display_path(piece.base_file or (piece.log_files[0] if piece.log_files else piece.partition))
        rows = merged_rows(table, piece)
        if not rows.num_rows:
            continue
        rows = conform(rows, schema, where)
        try:
            keys = rule.keys_of(rows, where)
        except RecordKeyError as exc:
            raise ChangeFeedError(str(exc)) from None
        if rule.virtual:
            rows = rows.set_column(rows.schema.get_field_index(RECORD_KEY_FIELD), RECORD_KEY_FIELD, keys)
            rows = rows.set_column(rows.schema.get_field_index(PARTITION_PATH_FIELD), PARTITION_PATH_FIELD,
                                   arrow_values.strings([piece.partition] * rows.num_rows))
        for key, row in zip(keys.to_pylist(), rows.to_pylist()):
            found.setdefault((piece.partition, key), []).append(row)
    return found


def _same(old: Row, new: Row) -> bool:
    return all(_equal(old.get(k), new.get(k)) for k in old.keys() | new.keys() if k not in NOT_COMPARED)


def _equal(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)  # NaN is not a change


def _json(row: dict[str, Any]) -> str:
    return json.dumps(row, default=_json_value, separators=(",", ":"), ensure_ascii=False)


def _json_value(value: Any) -> Any:
    """Values JSON has no type for: dates and times in ISO form, decimals as exact text, bytes in Base64."""
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON")

