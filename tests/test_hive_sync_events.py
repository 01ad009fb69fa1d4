"""Partition events of a sync, on builder-made tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hive_sync.model import LAST_COMMIT_COMPLETION_TIME_SYNC, LAST_COMMIT_TIME_SYNC
from hive_sync.partition_events import EventKind, partition_events, partition_location
from hive_sync.target import sync_marker
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_first_full_then_incremental_events(tmp_path) -> None:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, partition_fields=["p"], version=8)
    first = builder.write([{"id": i, "p": f"p{i % 3}"} for i in range(9)])
    table = HudiTable.open(path)
    full = partition_events(table, {}, None)
    assert [(e.kind, e.values) for e in full] == [(EventKind.ADD, (f"p{i}",)) for i in range(3)]
    metastore = {e.values: e.location for e in full}
    metastore[("stale",)] = partition_location(table, "p=stale")
    builder.write([{"id": 100, "p": "p7"}, {"id": 1, "p": "p1"}])
    builder.delete_partitions(["p=p2"])
    table = HudiTable.open(path)
    events = partition_events(table, metastore, first)
    assert [(e.kind, e.partition) for e in events] == [(EventKind.DROP, "p=p2"), (EventKind.ADD, "p=p7")]
    metastore[("p0",)] = "file:///elsewhere/p=p0"
    full_again = partition_events(table, metastore, None)
    kinds = {(e.kind, e.values) for e in full_again}
    assert (EventKind.UPDATE, ("p0",)) in kinds
    assert (EventKind.DROP, ("stale",)) in kinds
    assert (EventKind.DROP, ("p2",)) in kinds
    assert (EventKind.ADD, ("p7",)) in kinds
    assert partition_events(table, {e.values: e.location for e in partition_events(table, {}, None)}, None) == []


def test_non_partitioned_has_no_events(tmp_path) -> None:
    builder = TableBuilder(str(tmp_path / "t"), SCHEMA, version=6)
    builder.write([{"id": 1, "p": "x"}])
    assert partition_events(HudiTable.open(str(tmp_path / "t")), {}, None) == []


@pytest.mark.parametrize("version", [6, 8])
def test_write_completing_after_a_sync_with_an_older_requested_time_is_not_missed(tmp_path, version: int) -> None:
    """A writer requested before the last synced commit but completed after
    it: Hudi's requested-time marker would skip its partition forever."""
    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, partition_fields=["p"], version=version)
    builder.write([{"id": 0, "p": "base"}])
    slow = builder.write([{"id": 1, "p": "late"}], complete=False)
    builder.write([{"id": 2, "p": "fast"}])
    table = HudiTable.open(path)
    marker = sync_marker(table)
    if version == 6:
        # The marker stops before the pending write.
        assert marker == {LAST_COMMIT_TIME_SYNC: table.timeline.commits()[0].requested_time}
    else:
        assert marker[LAST_COMMIT_TIME_SYNC] > slow
    metastore = {e.values: e.location for e in partition_events(table, {}, None)}
    assert set(metastore) == {("base",), ("fast",)}
    builder.complete(slow)
    table = HudiTable.open(path)
    events = partition_events(table, metastore, marker[LAST_COMMIT_TIME_SYNC], marker.get(LAST_COMMIT_COMPLETION_TIME_SYNC))
    assert [(e.kind, e.values) for e in events] == [(EventKind.ADD, ("late",))]


def test_a_relative_table_path_is_registered_absolute(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hive_sync.partition_events import table_location

    builder = TableBuilder(str(tmp_path / "rel"), SCHEMA, partition_fields=["p"])
    builder.write([{"id": 1, "p": "a"}])
    monkeypatch.chdir(tmp_path)
    table = HudiTable.open("rel")
    assert table_location(table) == f"file:{tmp_path}/rel"
    [event] = partition_events(table, {}, None)
    assert event.location == f"file:{tmp_path}/rel/p=a"
    assert table_location(HudiTable.open(f"file://{tmp_path}/rel")) == f"file:{tmp_path}/rel"
