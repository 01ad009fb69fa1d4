"""Sharing a table with Hudi's writers, without Spark (docs/concurrency.md):
writer options, liveness from heartbeats and pending instants, Hudi's
file-system and ZooKeeper locks, and what a metadata-table write of ours
does beside another writer's instants. `tests/test_live_writers.py` runs the
same beside Apache Hudi's own writer."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from metadata.concurrency import WriterActivity, WriterOptions, hudi_lock
from metadata.concurrency.locks import FileSystemLock, ZooKeeperLock
from metadata.concurrency.options import OptionError, parse_option
from metadata.errors import HudiLockError, IndexWriteError, WriterActive
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage
from metadata.table.stored_table import TableParts

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
FS_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
AN_HOUR_AGO = time.time() - 3600


def indexed_table(path: Path) -> TableBuilder:
    """A v8 table of two commits with the metadata table built after the first and synced."""
    builder = TableBuilder(str(path), SCHEMA, partition_fields=["p"], version=8)
    builder.write([{"id": i, "p": f"p{i % 2}", "v": i} for i in range(6)])
    MetadataTableWriter(str(path)).build()
    builder.write([{"id": i, "p": f"p{i % 2}", "v": 10 * i} for i in range(3)])
    MetadataTableWriter(str(path)).sync()
    return builder


def snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def age(paths: list[Path], when: float = AN_HOUR_AGO) -> None:
    for p in paths:
        os.utime(p, (when, when))


def test_writer_options_read_as_hudi_reads_them() -> None:
    options = WriterOptions.of({"hoodie.client.heartbeat.interval_in_ms": "5000"}, {"hoodie.client.heartbeat.tolerable.misses": "3"})
    assert options.heartbeat_window_seconds == 15.0
    assert WriterOptions().heartbeat_window_seconds == 120.0  # Hudi's defaults: 60 s x 2 misses
    assert WriterOptions().failed_writes_policy.value == "EAGER"
    assert WriterOptions({"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}).failed_writes_policy.value == "LAZY"
    assert WriterOptions({"hoodie.write.lock.provider": " "}).lock_provider is None
    with pytest.raises(OptionError, match="hoodie.client.heartbeat.interval_in_ms='soon': not a whole number"):
        _ = WriterOptions({"hoodie.client.heartbeat.interval_in_ms": "soon"}).heartbeat_window_seconds
    assert parse_option("hoodie.write.lock.provider = x ") == ("hoodie.write.lock.provider", "x")
    with pytest.raises(OptionError, match="give KEY=VALUE"):
        parse_option("hoodie.write.lock.provider")


def test_a_pending_instant_is_live_while_its_writer_shows_signs_of_life(tmp_path: Path) -> None:
    builder = indexed_table(tmp_path / "t")
    ts = builder.write([{"id": 9, "p": "p1", "v": 9}], complete=False)  # a writer at work: requested and inflight
    parts = TableParts.load(str(tmp_path / "t"))
    activity = WriterActivity(parts.storage, WriterOptions())
    live = activity.live(parts)
    assert [(i.instant_time, i.sign) for i in live] == [(ts, "timeline file")]
    age([p for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir() if p.name.startswith(ts)])
    assert activity.live(parts) == []  # an hour without a sign: past Hudi's 120 s window
    heartbeat = tmp_path / "t" / ".hoodie" / ".heartbeat" / ts
    heartbeat.parent.mkdir()
    heartbeat.write_bytes(b"")
    assert [(i.instant_time, i.sign) for i in activity.live(parts)] == [(ts, "heartbeat")]
    age([heartbeat], time.time() - 20)
    assert activity.live(parts) != []
    short = WriterActivity(parts.storage, WriterOptions({"hoodie.client.heartbeat.interval_in_ms": "5000"}))
    assert short.live(parts) == []  # 20 s old is past a 10 s window


def test_sync_beside_a_writer_at_work_without_a_lock_waits_then_refuses_touching_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = indexed_table(path)
    builder.write([{"id": 8, "p": "p0", "v": 8}])  # completed, for the sync to record
    builder.write([{"id": 9, "p": "p1", "v": 9}], complete=False)  # a Hudi writer at work now
    before = snapshot(path)
    started = time.monotonic()
    with pytest.raises(WriterActive, match=r"a Hudi writer is at work \(data instant \d{17} \(commit; timeline file \d+ s ago\)\) "
                                           r"and no lock provider is configured.*waited 1 s"):
        MetadataTableWriter(str(path), wait_seconds=1).sync()
    assert 1 <= time.monotonic() - started < 10
    assert snapshot(path) == before  # byte for byte
    age([p for p in (path / ".hoodie" / "timeline").iterdir() if ".inflight" in p.name or ".requested" in p.name])
    report = MetadataTableWriter(str(path), wait_seconds=1).sync()  # the writer is gone: the completed instant is synced
    assert len(report.instants) == 1
    assert MetadataTableWriter(str(path), wait_seconds=0).sync().instants == []  # nothing to sync: no writer waited for


def test_with_hudis_file_system_lock_a_sync_takes_it_and_does_not_wait_for_writers(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = indexed_table(path)
    builder.write([{"id": 8, "p": "p0", "v": 8}])
    builder.write([{"id": 9, "p": "p1", "v": 9}], complete=False)
    lock = {"hoodie.write.lock.provider": FS_PROVIDER, "hoodie.write.lock.wait_time_ms": "1000"}
    held = hudi_lock(Storage.open(str(path)), WriterOptions(lock), "t")
    assert isinstance(held, FileSystemLock) and held.path == str(path / ".hoodie" / "lock")  # Hudi's place for it
    with held:
        with pytest.raises(HudiLockError, match=r"Hudi's file-system lock .*/\.hoodie/lock is held \(.*hudi-bridge.*\); waited 1 s"):
            MetadataTableWriter(str(path), writer_options=lock).sync()
    assert not (path / ".hoodie" / "lock").exists()
    report = MetadataTableWriter(str(path), writer_options=lock, wait_seconds=0.1).sync()
    assert len(report.instants) == 1  # under Hudi's lock a writer at work records its commit only once it holds the lock: no wait
    assert not (path / ".hoodie" / "lock").exists()


def test_hudis_lock_settings_that_cannot_be_honoured_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    indexed_table(path)
    storage = Storage.open(str(path))
    with pytest.raises(HudiLockError, match="StorageBasedLockProvider: not supported by hudi-bridge yet"):
        hudi_lock(storage, WriterOptions({"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"}), "t")
    with pytest.raises(HudiLockError, match="HiveMetastoreBasedLockProvider: give hoodie.write.lock.hivemetastore.uris"):
        hudi_lock(storage, WriterOptions({"hoodie.write.lock.provider": HMS_PROVIDER, "hoodie.write.lock.hivemetastore.database": "d",
                                          "hoodie.write.lock.hivemetastore.table": "t"}), "t")
    with pytest.raises(HudiLockError, match="a lock provider hudi-bridge does not know"):
        hudi_lock(storage, WriterOptions({"hoodie.write.lock.provider": "com.example.MyLock"}), "t")
    outside = {"hoodie.write.lock.provider": FS_PROVIDER, "hoodie.write.lock.filesystem.path": str(tmp_path / "elsewhere")}
    with pytest.raises(HudiLockError, match="outside the table"):
        hudi_lock(storage, WriterOptions(outside), "t")  # from the table's own files: refused
    (tmp_path / "elsewhere").mkdir()
    given = hudi_lock(storage, WriterOptions(outside), "t", user_given=frozenset(outside))
    assert isinstance(given, FileSystemLock) and given.path == str(tmp_path / "elsewhere" / "lock")
    assert hudi_lock(storage, WriterOptions({"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}), "t") is None


def test_an_expired_file_system_lock_is_taken_and_a_link_is_never_followed(tmp_path: Path) -> None:
    path = tmp_path / "t"
    indexed_table(path)
    lock_file = path / ".hoodie" / "lock"
    lock_file.write_text("a writer that died")
    age([lock_file])
    options = WriterOptions({"hoodie.write.lock.provider": FS_PROVIDER, "hoodie.write.lock.filesystem.expire": "1",
                             "hoodie.write.lock.wait_time_ms": "500"})
    with hudi_lock(Storage.open(str(path)), options, "t") as held:
        assert "hudi-bridge" in lock_file.read_text()
        assert held is not None
    assert not lock_file.exists()
    secret = tmp_path / "secret"
    secret.write_text("aws_secret_access_key=abc")
    lock_file.symlink_to(secret)
    with pytest.raises(HudiLockError) as refused:
        with hudi_lock(Storage.open(str(path)), WriterOptions({"hoodie.write.lock.provider": FS_PROVIDER,
                                                                "hoodie.write.lock.wait_time_ms": "200"}), "t"):
            pass
    assert "aws_secret" not in str(refused.value)
    assert secret.read_text() == "aws_secret_access_key=abc" and lock_file.is_symlink()


def test_only_our_own_pending_instants_are_rolled_back(tmp_path: Path) -> None:
    """A killed run of ours left metadata instant A pending (named in our
    lock); another writer has metadata instant B pending and is alive. The
    next sync removes A and redoes its data instant; B is left to its writer."""
    path = tmp_path / "t"
    builder = indexed_table(path)
    mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    unsynced = builder.write([{"id": 7, "p": "p0", "v": 7}])  # completed, not in the metadata table yet
    for name in (f"{unsynced}.deltacommit.requested", f"{unsynced}.deltacommit.inflight"):
        (mdt_timeline / name).write_bytes(b"")  # ours, left by a killed run
    other = builder.write([{"id": 8, "p": "p1", "v": 8}], complete=False)  # Hudi's writer at work
    for name in (f"{other}.deltacommit.requested", f"{other}.deltacommit.inflight"):
        (mdt_timeline / name).write_bytes(b"")
    (path / ".hoodie" / ".hudi-bridge-index.lock").write_text(f"999999999@{os.uname().nodename} since then\npending {unsynced}\n")
    lock = {"hoodie.write.lock.provider": FS_PROVIDER}  # with the lock, the live writer is not waited for
    report = MetadataTableWriter(str(path), writer_options=lock).sync()
    assert report.instants == [unsynced]
    assert any(f"metadata instant {unsynced} of an earlier hudi-bridge run had not completed" in n for n in report.notes)
    assert any(f"metadata instant {other} (deltacommit) is pending, written by another writer: left to it" in n for n in report.notes)
    names = {p.name for p in mdt_timeline.iterdir()}
    assert {f"{other}.deltacommit.requested", f"{other}.deltacommit.inflight"} <= names
    assert [n for n in names if n.startswith(unsynced) and n.endswith(".deltacommit") and "_" in n]  # redone and completed
    assert not (path / ".hoodie" / ".hudi-bridge-index.lock").exists()


def test_an_instant_another_writer_rolled_back_is_never_completed(tmp_path: Path) -> None:
    """Hudi's single writer rolls back every pending metadata instant when it
    starts its own: if it does so while we write one, we fail cleanly rather
    than complete an instant whose files it deleted."""
    path = tmp_path / "t"
    indexed_table(path).write([{"id": 8, "p": "p0", "v": 8}])
    before = snapshot(path)
    mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"

    def rolled_back(step: str) -> None:
        if step.endswith(": before completion"):
            for p in mdt_timeline.glob(step.split(":")[0] + ".*"):
                p.unlink()

    with pytest.raises(IndexWriteError, match=r"metadata instant \d{17} was rolled back by another writer while hudi-bridge wrote it"):
        MetadataTableWriter(str(path), fault=rolled_back).sync()
    assert snapshot(path) == before


@pytest.mark.services
def test_zookeeper_locks_exclude_each_other_as_curators_mutex(zookeeper: str) -> None:
    from kazoo.client import KazooClient

    options = WriterOptions({"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
                             "hoodie.write.lock.zookeeper.url": zookeeper,
                             "hoodie.write.lock.zookeeper.base_path": "/hudi", "hoodie.write.lock.wait_time_ms": "700"})
    client = KazooClient(hosts=zookeeper)
    client.start(timeout=20)
    try:
        with ZooKeeperLock(options, "trips"):
            nodes = client.get_children("/hudi/trips")
            assert len(nodes) == 1 and nodes[0].startswith("_c_") and "-lock-" in nodes[0]  # Curator's protected node name
            with pytest.raises(HudiLockError, match=r"ZooKeeper lock /hudi/trips on 127\.0\.0\.1:\d+ is held; waited 0\.7 s"):
                with ZooKeeperLock(options, "trips"):
                    pass
        assert client.get_children("/hudi/trips") == []
        # A Curator contender already queued (as Hudi's writer's node) is ahead of us.
        client.create("/hudi/trips/_c_0b5e6a3e-1111-2222-3333-444455556666-lock-", b"hudi", ephemeral=True, sequence=True)
        with pytest.raises(HudiLockError, match="is held"):
            with ZooKeeperLock(options, "trips"):
                pass
    finally:
        client.stop()
        client.close()
    with pytest.raises(HudiLockError, match="cannot connect"):
        with ZooKeeperLock(WriterOptions({**options.values, "hoodie.write.lock.zookeeper.url": "127.0.0.1:1",
                                          "hoodie.write.lock.zookeeper.connection_timeout_ms": "500"}), "trips"):
            pass


HMS_PROVIDER = "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"


@pytest.mark.slow  # with the Hive sync tests, which start the Hive 4 metastore anyway
def test_hive_metastore_locks_exclude_each_other_as_hudis_provider_takes_them(hive4_metastore: Any, metastore: Any, tmp_path: Path) -> None:
    """Hudi's HiveMetastoreBasedLockProvider's lock (EXCLUSIVE, table level, through the metastore's transaction API),
    on Hive 4 with PostgreSQL (the embedded Hive 2.3 on Derby keeps no transaction tables: one line): ours waits while another holder (as Hudi's writer takes it) has it, refuses in one line
    after hoodie.write.lock.wait_time_ms, leaves no queued request behind, and takes it once it is free."""
    from hmsclient.genthrift.hive_metastore import ttypes

    from metadata.concurrency.hms_lock import HiveMetastoreLock, _connect

    options = WriterOptions({"hoodie.write.lock.provider": HMS_PROVIDER, "hoodie.write.lock.hivemetastore.database": "locks",
                             "hoodie.write.lock.hivemetastore.table": "trips", "hoodie.write.lock.hivemetastore.uris": hive4_metastore.uri,
                             "hoodie.write.lock.wait_time_ms": "1500", "hoodie.write.lock.heartbeat_interval_ms": "1000"})
    lock = hudi_lock(Storage.open(str(tmp_path)), options, "trips")
    assert isinstance(lock, HiveMetastoreLock)
    no_txn = WriterOptions({**options.values, "hoodie.write.lock.hivemetastore.uris": metastore.uri})
    with pytest.raises(HudiLockError, match=r"Hive metastore lock on locks\.trips at thrift://127\.0\.0\.1:\d+: Internal error processing lock"):
        with HiveMetastoreLock(no_txn):
            pass
    other = _connect(hive4_metastore.uri)
    try:
        held = other.lock(lock._request())  # another writer's lock, asked exactly as Hudi asks
        assert held.state == ttypes.LockState.ACQUIRED
        started = time.monotonic()
        with pytest.raises(HudiLockError, match=r"Hive metastore lock on locks\.trips at thrift://127\.0\.0\.1:\d+ is held; waited 1\.5 s"):
            with HiveMetastoreLock(options):
                pass
        assert time.monotonic() - started >= 1.5
        locks = other.show_locks(ttypes.ShowLocksRequest(dbname="locks", tablename="trips")).locks or []
        assert [entry.lockid for entry in locks] == [held.lockid]  # our queued requests were taken back
        other.unlock(ttypes.UnlockRequest(lockid=held.lockid))
        with HiveMetastoreLock(options) as ours:
            time.sleep(1.2)  # heartbeats keep it
            assert ours.lost is None
            queued = other.lock(lock._request())
            assert queued.state == ttypes.LockState.WAITING  # Hudi's writer now waits for us
            other.unlock(ttypes.UnlockRequest(lockid=queued.lockid))
        assert not (other.show_locks(ttypes.ShowLocksRequest(dbname="locks", tablename="trips")).locks or [])
    finally:
        other.close()


def test_validate_names_partition_stats_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that updated files and column_stats but not partition_stats
    (the corruption a sync racing a live writer left) drops committed rows
    from plans: `table validate` now says so, naming the partition and file."""
    import re

    from listers import scan
    from metadata.mdt.validate import validate_metadata
    from metadata.mdt.write.partitions.partition_stats import PartitionStatsWriter

    path = tmp_path / "t"
    builder = indexed_table(path)
    assert validate_metadata(str(path)).ok
    builder.write([{"id": 100, "p": "p0", "v": 1000}])
    monkeypatch.setattr(PartitionStatsWriter, "sync_records", lambda self, inputs: {})
    MetadataTableWriter(str(path)).sync()
    assert scan(str(path), where="v = 1000").to_table().num_rows == 0  # the drop
    report = validate_metadata(str(path))
    assert not report.ok
    stale = [d for d in report.stats_differences if d.startswith("partition_stats of ")]
    assert any(re.fullmatch(r"partition_stats of '[^']*p0': 'v' is \[0, 20\], which does not hold its max 1000 of its file \S+\.parquet: "
                            r"a plan would drop the partition's rows \(stale partition_stats\)", d) for d in stale), stale


def test_a_file_a_cleaner_removed_after_the_listing_has_no_stats_and_no_filter(tmp_path: Path) -> None:
    """A build lists the table, then reads each file's footer: a file a
    cleaner beside it removed in between gives no statistics and no bloom
    filter (the clean's commit records the removal); a file still there
    that does not read is still an error."""
    from metadata.errors import HudiFormatError
    from metadata.mdt.bloom_filters import bloom_filter_records
    from metadata.mdt.file_stats import blocks_counting, file_ranges

    path = tmp_path / "t"
    indexed_table(path)
    storage = Storage.open(str(path))
    gone = "p=p0/0000-gone_0-1-1_20240101000001000.parquet"
    assert file_ranges(storage, gone, ["v"], blocks_counting(None, frozenset())) == []
    assert list(bloom_filter_records(storage, [("p=p0", gone.split("/")[1])], "20240101000009000", ".parquet")) == []
    (path / "p=p0").mkdir(exist_ok=True)
    (path / gone).write_bytes(b"not parquet")
    with pytest.raises(HudiFormatError):
        file_ranges(storage, gone, ["v"], blocks_counting(None, frozenset()))
