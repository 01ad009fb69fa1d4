"""Whether a table's record keys are unique, shown from the table rather than
assumed (issue 26).

The record index keeps one location per key, so pruning with it is sound
only when no key lives in two file groups. Apache Hudi trusts that; an
insert or bulk insert can break it. The proof: the latest file slices hold
N live records (each base file's record count, from the write stat of the
commit that wrote it) and the record index holds N keys. Every live record
has its key in the index and the index holds each key once, so N records
with N distinct keys means no key is held twice. Where a count is not known
(a slice with log files, a base file whose commit was archived or recorded
no write stat) nothing is shown, and the reason says which.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.stats_cache import PersistentStatsCache
from metadata.table.file_group import FileSlice
from metadata.timeline.active import Timeline
from metadata.util import arrow_values

_CACHED = 64  # table states whose answer is kept in this process
_cache: OrderedDict[tuple[str, str, frozenset[str]], KeyUniqueness] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class KeyUniqueness:
    shown: bool
    reason: str  # what showed it, or what kept it from being shown
    live_records: int | None = None
    index_keys: int | None = None


def live_record_count(timeline: Timeline, slices: list[FileSlice]) -> tuple[int | None, str]:
    """The records the latest slices hold, or None and why it is unknown."""
    completed = {i.requested_time: i for i in timeline.completed()}
    total = 0
    for piece in slices:
        where = f"{piece.partition}/{piece.file_id}" if piece.partition else piece.file_id
        if piece.log_files:
            return None, f"file slice {where} has log files, whose live record count no commit records"
        instant = completed.get(piece.base_instant)
        if instant is None or piece.base_file_name is None:
            return None, f"the commit that wrote file slice {where} ({piece.base_instant}) is not on the active timeline"
        stats = [s for s in timeline.commit_metadata(instant).write_stats()
                 if s.file_id == piece.file_id and s.file_name == piece.base_file_name]
        if not stats:
            return None, f"commit {instant.requested_time} has no write stat for {piece.base_file_name}"
        total += stats[0].num_writes
    return total, ""


def unique_keys(mdt: MetadataTable, latest_slices: Callable[[], list[FileSlice]]) -> KeyUniqueness:
    """Whether the table's keys are shown unique, from all its latest slices
    (every partition's: a key held twice anywhere breaks a lookup anywhere),
    asked for only when this table state has no answer yet."""
    reader = mdt.reader
    state = (reader.data_table.storage.uri, reader.latest_instant, reader.valid_instants)
    with _lock:
        if state in _cache:
            _cache.move_to_end(state)
            return _cache[state]
    cache = mdt.persistent_cache
    if cache is None:
        answer = _prove(mdt, latest_slices)
    else:  # a later process (a plan on an object store) reads the answer instead of every index group's trailer
        digest = PersistentStatsCache.digest(["key uniqueness", state[0], state[1], *sorted(state[2])])
        answer = _from_row(cache.get_or_build(digest, lambda: _to_row(_prove(mdt, latest_slices)), "keys"))
    with _lock:
        _cache[state] = answer
        while len(_cache) > _CACHED:
            _cache.popitem(last=False)
    return answer


def _prove(mdt: MetadataTable, latest_slices: Callable[[], list[FileSlice]]) -> KeyUniqueness:
    reader = mdt.reader
    records, why = live_record_count(reader.data_table.timeline, latest_slices())
    if records is None:
        return KeyUniqueness(False, why)
    keys = reader.key_count(MdtPartition.RECORD_INDEX.value)
    if keys == records:
        return KeyUniqueness(True, f"keys shown unique: {records} live records, {keys} index keys", records, keys)
    return KeyUniqueness(False, f"the latest file slices hold {records} records but the index {keys} keys: "
                                f"a key may be held twice", records, keys)


def _to_row(answer: KeyUniqueness) -> pa.Table:
    return pa.table({"shown": [answer.shown], "reason": [answer.reason],
                     "live_records": arrow_values.array([answer.live_records], pa.int64()), "index_keys": arrow_values.array([answer.index_keys], pa.int64())})


def _from_row(table: pa.Table) -> KeyUniqueness:
    row = table.to_pylist()[0]
    return KeyUniqueness(bool(row["shown"]), str(row["reason"]), row["live_records"], row["index_keys"])
