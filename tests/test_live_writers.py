"""hudi-bridge beside a live Apache Hudi writer (docs/concurrency.md).

Hudi 1.0.2's Spark writer upserts commit after commit into a table with its
metadata table on, as a pipeline does, while hudi-bridge's commands run
beside it in a loop, as a cron job would. Without a lock, `index sync` used to
take the writer's in-flight metadata instant for a failed one and remove it
mid-commit: 8 of 8 Hudi commits failed, and a metadata table could be left
that dropped committed rows. Here, per run: no Hudi commit fails; every
command beside it answers or refuses in one line; afterwards every committed
row is found by our plans and by Hudi's own data skipping, `table validate`
agrees, and nothing of ours is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from listers import scan
from metadata import HudiTable
from metadata.table.stored_table import TableParts
from tests.die_at_step import killed_instant
from tests.hudi_oracle import HUDI_VERSION, LiveWriter, missing_setup
from tests.needs import require

pytestmark = [pytest.mark.services]

# What a command beside a live writer may answer besides success: each a one-line refusal.
REFUSALS = ("is not a Hudi table", "no metadata table to sync", "a Hudi writer is at work", "is held; waited",
            "the table has no completed commit yet")
FS_LOCK = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
           "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
           "hoodie.cleaner.policy.failed.writes": "LAZY"}
STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true"}


@pytest.fixture(scope="module")
def hudi() -> None:
    require(missing_setup(), "the live-writer tests")


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine_bridge", *args], capture_output=True, text=True, timeout=timeout)


def options_args(options: dict[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("--hoodie-option", f"{key}={value}")]


def beside(writer: LiveWriter, commands: list[list[str]]) -> list[tuple[list[str], int, str]]:
    """Run `commands` round and round until Hudi's writer has written every commit."""
    runs = []
    while not writer.done():
        for command in commands:
            result = cli(*command)
            runs.append((command, result.returncode, (result.stdout + result.stderr).strip()))
            if writer.done():
                break
    return runs


def check_beside(runs: list[tuple[list[str], int, str]]) -> None:
    """Every command answered, or refused in one line naming why; none failed otherwise."""
    assert runs, "nothing ran beside the writer"
    for command, code, output in runs:
        assert "Traceback" not in output, (command, output)
        if code != 0:
            errors = [line for line in output.splitlines() if line.startswith("error: ")]
            assert code == 2 and len(errors) == 1, (command, code, output)
            assert any(reason in errors[0] for reason in REFUSALS), (command, output)


def check_after(path: Path, record: dict[str, Any], options: dict[str, str]) -> None:
    """Every Hudi commit completed; then our sync completes, validate agrees,
    our plans and Hudi's data skipping find every committed row, and nothing
    of ours is left (no lock, no pending metadata instant)."""
    failed = [c for c in record["commits"] if not c["ok"]]
    assert not failed, failed
    synced = cli("index", "sync", str(path), *options_args(options))
    assert synced.returncode == 0, synced.stdout + synced.stderr
    validated = cli("table", "validate", str(path))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "agree" in validated.stdout
    for row in record["live"]:
        found = scan(str(path), where=f"id = {row['id']} AND v = {row['v']}", columns=["id", "v"]).to_table().to_pylist()
        assert found == [{"id": row["id"], "v": row["v"]}], row
    assert record.get("read_error") is None, record.get("read_error")
    assert record["hudi_snapshot_ids"] == sorted(r["id"] for r in record["live"])
    missed = [key for key, count in record["hudi_found"].items() if count != 1]
    assert not missed, f"Hudi's data skipping missed committed keys {missed}"
    assert not (path / ".hoodie" / ".hudi-bridge-index.lock").exists()
    assert not (path / ".hoodie" / "lock").exists()  # Hudi's file-system lock: released by both
    mdt = TableParts.load(str(path / ".hoodie" / "metadata"))
    assert not [str(i) for i in mdt.timeline.pending() if not i.is_compaction], "a metadata instant was left pending"


def test_index_sync_in_a_loop_beside_a_live_writer_fails_no_commit(hudi: None, tmp_path: Path) -> None:
    """The issue's scenario, smaller: a single Hudi writer (no lock provider),
    COPY_ON_WRITE with column and partition statistics; `index sync`, a plan,
    the change feed and an incremental pull run beside it. Hudi's writer
    keeps the metadata table itself, so our sync says so and writes nothing."""
    path = tmp_path / "live"
    writer = LiveWriter(path, "COPY_ON_WRITE", 3, STATS)
    runs = beside(writer, [["index", "sync", str(path)], ["plan", str(path), "--where", "id = 3"],
                           ["changes", str(path), "--begin", "0", "--json"], ["incremental", str(path), "--begin", "0", "--json"]])
    record = writer.finish()
    check_beside(runs)
    assert any("kept by the writer" in output for command, code, output in runs if command[0] == "index"), runs
    assert not any("was removed" in output for _, _, output in runs)
    check_after(path, record, {})


@pytest.mark.slow
def test_the_issues_scenario_beside_hudi_1_2_0(tmp_path: Path) -> None:
    """The scenario again with the newest Hudi served here (1.2.0, table version 9): 4 commits, no lock provider,
    `index sync` and a plan in a loop beside the writer."""
    require(missing_setup("1.2.0"), "the live-writer tests on Hudi 1.2.0")
    path = tmp_path / "live"
    writer = LiveWriter(path, "COPY_ON_WRITE", 4, STATS, release="1.2.0")
    runs = beside(writer, [["index", "sync", str(path)], ["plan", str(path), "--where", "id = 3"]])
    record = writer.finish()
    check_beside(runs)
    assert HudiTable.open(str(path)).config.version == 9
    assert not any("was removed" in output for _, _, output in runs)
    check_after(path, record, {})


@pytest.mark.slow
def test_an_index_hudi_1_2_deletes_when_it_is_disabled_is_gone_from_our_reads(tmp_path: Path) -> None:
    """Hudi 1.2.0 writes two commits with column and partition statistics, then one with both disabled: it deletes
    those metadata-table partitions (hoodie.metadata.auto.delete.partitions). Our listings and plans follow: no stage
    reads them, every committed row is found, validate agrees, and `index sync` writes nothing of them back."""
    require(missing_setup("1.2.0"), "the live-writer tests on Hudi 1.2.0")
    path = tmp_path / "live"
    LiveWriter(path, "COPY_ON_WRITE", 2, STATS, release="1.2.0").finish()
    assert {"column_stats", "partition_stats"} <= set(HudiTable.open(str(path)).config.metadata_partitions)
    built = cli("index", "build", str(path), "--partitions", "bloom_filters")  # one the writer has not enabled: we say so
    assert built.returncode == 0 and "hoodie.metadata.index.bloom.filter.enable=true" in built.stdout + built.stderr, built.stdout
    off = {"hoodie.metadata.index.column.stats.enable": "false", "hoodie.metadata.index.partition.stats.enable": "false"}
    record = LiveWriter(path, "COPY_ON_WRITE", 1, off, first=2, release="1.2.0").finish()
    table = HudiTable.open(str(path))
    assert not {"column_stats", "partition_stats"} & set(table.config.metadata_partitions)
    assert not (path / ".hoodie" / "metadata" / "column_stats").exists()
    explained = cli("plan", str(path), "--where", "id = 3", "--explain")
    assert explained.returncode == 0 and "not used: column_stats: not built for this table" in explained.stdout, explained.stdout
    check_after(path, record, {})
    assert not {"column_stats", "partition_stats"} & set(HudiTable.open(str(path)).config.metadata_partitions)


@pytest.mark.slow
def test_soak_with_hudis_file_system_lock(hudi: None, tmp_path: Path) -> None:
    """MERGE_ON_READ with inline compaction and cleaning, Hudi's writer in
    optimistic concurrency with the file-system lock provider; beside it
    `index sync`, `index compact --force`, `index build` of bloom_filters
    (a partition the writer then keeps too) and plans, all given the same lock."""
    path = tmp_path / "live"
    writer_options = {**STATS, **FS_LOCK, "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
                      "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2"}
    writer = LiveWriter(path, "MERGE_ON_READ", 5, writer_options)
    lock = options_args(FS_LOCK)
    pulled = tmp_path / "pulled"
    pull = ["pull", str(path), "--to", str(pulled), "--checkpoint", str(tmp_path / "pull-checkpoint.json")]
    runs = beside(writer, [["index", "sync", str(path), *lock], ["index", "compact", str(path), "--force", *lock],
                           ["index", "build", str(path), "--partitions", "bloom_filters", *lock],
                           ["plan", str(path), "--where", "id = 5"], pull])
    record = writer.finish()
    check_beside(runs)
    assert any(code == 0 for command, code, _ in runs if command[:2] == ["index", "compact"]), runs
    check_after(path, record, FS_LOCK)
    last = cli(*pull, timeout=600)
    assert last.returncode == 0, last.stdout + last.stderr
    assert latest_pulled(pulled) == {row["id"]: row["v"] for row in record["live"]}  # no commit missed by the pulls beside it


def latest_pulled(out: Path) -> dict[int, int]:
    """id -> v of each id's latest version among every range pulled under `out`."""
    import pyarrow.parquet as pq

    latest: dict[int, tuple[str, int]] = {}
    for file in out.rglob("*.parquet"):
        rows = pq.read_table(file, columns=["_hoodie_commit_time", "id", "v"]).to_pylist()
        for row in rows:
            if row["id"] not in latest or latest[row["id"]][0] < row["_hoodie_commit_time"]:
                latest[row["id"]] = (row["_hoodie_commit_time"], row["v"])
    return {key: v for key, (_, v) in latest.items()}


def zk_lock_options(zookeeper: str) -> dict[str, str]:
    return {**FS_LOCK, "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
            "hoodie.write.lock.zookeeper.url": zookeeper,  # Hudi 1.0.2 connects to the URL as it is: the port goes in it
            "hoodie.write.lock.zookeeper.base_path": "/hudi-locks", "hoodie.write.lock.zookeeper.lock_key": "live"}


@pytest.mark.slow
def test_soak_with_hudis_zookeeper_lock(hudi: None, zookeeper: str, tmp_path: Path) -> None:
    """Hudi's writer and hudi-bridge both take Hudi's ZooKeeper lock (Curator's
    mutex on one side, kazoo's recipe with Curator's node names on the other)."""
    soak_under_a_shared_lock(tmp_path / "live", zk_lock_options(zookeeper))


def soak_under_a_shared_lock(path: Path, lock_options: dict[str, str], readers: tuple[list[str], ...] = (),
                             release: str = HUDI_VERSION) -> dict[str, Any]:
    """A COPY_ON_WRITE writer (Hudi `release`) of 4 commits under `lock_options`, `index sync` and `index compact
    --force` beside it under the same lock, and `readers` too: no commit fails, a compaction of ours got in between,
    and everything agrees after. Hudi's writer's record."""
    writer = LiveWriter(path, "COPY_ON_WRITE", 4, {**STATS, **lock_options}, release=release)
    lock = options_args(lock_options)
    runs = beside(writer, [["index", "sync", str(path), *lock], ["index", "compact", str(path), "--force", *lock], *readers])
    record = writer.finish()
    check_beside(runs)
    assert any(code == 0 for command, code, _ in runs if command[:2] == ["index", "compact"]), runs
    check_after(path, record, lock_options)
    return record


@pytest.mark.slow
def test_soak_with_hudi_1_2s_zookeeper_lock(zookeeper: str, tmp_path: Path) -> None:
    """The ZooKeeper soak beside the newest Hudi served here (1.2.0, table version 9)."""
    require(missing_setup("1.2.0"), "the live-writer tests on Hudi 1.2.0")
    soak_under_a_shared_lock(tmp_path / "live", zk_lock_options(zookeeper), release="1.2.0")
    assert HudiTable.open(str(tmp_path / "live")).config.version == 9


@pytest.mark.slow
def test_soak_with_hudis_hive_metastore_lock(hudi: None, hive4_metastore: Any, tmp_path: Path) -> None:
    """Hudi's writer and hudi-bridge both take Hudi's Hive metastore lock, on a Hive 4 metastore (PostgreSQL):
    Hudi through its Hive 2.3 client, we through the same transaction API. Hive sync into that metastore and
    verified plans (which read the slices they rule out) run in the loop too; a last sync then marks the table
    synced up to Hudi's last commit, and one more has nothing to do."""
    hms_lock = {**FS_LOCK, "hoodie.write.lock.provider": "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider",
                "hoodie.write.lock.hivemetastore.database": "locks", "hoodie.write.lock.hivemetastore.table": "live",
                "hoodie.write.lock.hivemetastore.uris": hive4_metastore.uri}
    path = tmp_path / "live"
    hive_sync = ["sync", str(path), "--database", "soak", "--metastore-uri", hive4_metastore.uri]
    soak_under_a_shared_lock(path, hms_lock, (hive_sync, ["plan", str(path), "--where", "v < 30", "--verify"]))
    last = cli(*hive_sync, "--json")  # marks what the loop's last sync did not reach (or, when it came after Hudi's last commit, nothing)
    assert last.returncode == 0, last.stdout + last.stderr
    from hive_sync.hms import HmsClient

    with HmsClient(hive4_metastore.uri) as client:
        registered = client.get_table("soak", "live")
    latest = HudiTable.open(str(path)).timeline.latest_completed()
    assert latest is not None and registered is not None and registered.last_synced == latest.requested_time, last.stdout
    again = cli(*hive_sync, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["noop"], again.stdout + again.stderr


@pytest.mark.slow
def test_a_killed_hudi_writer_is_left_to_hudi_until_its_heartbeat_expires(hudi: None, zookeeper: str, tmp_path: Path) -> None:
    """kill -9 of Hudi's writer mid-commit (multi-writer mode: heartbeats, the
    ZooKeeper lock, whose node goes with the dead writer's session). While its
    heartbeat is fresh, our compaction waits and refuses in one line and
    touches nothing; once it expired, ours goes on without rolling back the
    dead writer's instant (Hudi's), and Hudi's next writer rolls it back and commits."""
    path = tmp_path / "live"
    heartbeat = {"hoodie.client.heartbeat.interval_in_ms": "3000", "hoodie.client.heartbeat.tolerable.misses": "2"}
    zk_lock = {**zk_lock_options(zookeeper), "hoodie.write.lock.zookeeper.session_timeout_ms": "6000"}
    writer = LiveWriter(path, "COPY_ON_WRITE", 40, {**STATS, **zk_lock, **heartbeat})
    timeline = path / ".hoodie" / "timeline"
    deadline = time.monotonic() + 600
    done: list[str] = []
    under_way: list[str] = []
    while time.monotonic() < deadline and not writer.done():  # two commits done and a third under way
        names = [p.name for p in timeline.iterdir()] if timeline.is_dir() else []
        done = [n for n in names if n.endswith(".commit") and "_" in n]
        completed = {n.split("_")[0] for n in done}
        under_way = [n for n in names if n.endswith(".inflight") and n.split(".")[0] not in completed]
        if len(done) >= 2 and under_way:
            break
        time.sleep(0.02)
    writer.kill()
    ts = under_way[0].split(".")[0]
    assert not [n for n in os.listdir(timeline) if n.startswith(ts + "_")], "the writer was not killed mid-commit"
    pending = sorted(n for n in os.listdir(timeline) if n.startswith(ts + "."))
    before = sorted(str(p) for p in path.rglob("*"))
    # A compaction of ours, no lock given: the dead writer's heartbeat is fresh, so it waits, then refuses.
    refused = cli("--timeout", "2", "index", "compact", str(path), "--force", *options_args(heartbeat))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"a Hudi writer is at work (data instant {ts}" in refused.stderr, refused.stderr
    assert len([line for line in refused.stderr.splitlines() if line.startswith("error: ")]) == 1, refused.stderr
    assert sorted(str(p) for p in path.rglob("*")) == before  # nothing was touched
    time.sleep(8)  # past the heartbeat window (2 x 3 s)
    went_on = cli("index", "compact", str(path), "--force", *options_args(heartbeat))
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    assert "deferred: data instants" in went_on.stdout  # the failed instant stays until Hudi rolls it back
    assert sorted(n for n in os.listdir(timeline) if n.startswith(ts + ".")) == pending  # Hudi's to roll back, not ours
    after = LiveWriter(path, "COPY_ON_WRITE", 2, {**STATS, **zk_lock, **heartbeat}, first=len(done))
    record = after.finish()
    assert not [n for n in os.listdir(timeline) if n.startswith(ts)], "Hudi's next writer rolled the failed instant back"
    check_after(path, record, zk_lock)


def kill_before_completing(path: Path, command: list[str]) -> str:
    """Run a command of ours and kill -9 it when its metadata-table instant is written but not yet completed
    (`tests.die_at_step`): the instant it left pending, named in its journal. "" when it finished without one."""
    with open(path.parent / "killed.log", "a") as log:  # what the killed runs said before they died
        done = subprocess.run([sys.executable, "-m", "tests.die_at_step", "before completion", *command], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, timeout=300,
                              cwd=Path(__file__).parent.parent)
        log.write(done.stdout)
    killed = killed_instant(done.stdout)
    assert done.returncode == -9 if killed else done.returncode == 0, done.stdout
    if killed:
        journal = (path / ".hoodie" / ".hudi-bridge-index.lock").read_text()
        assert f"pending {killed}" in journal, journal
    return killed


@pytest.mark.slow
def test_our_writer_killed_mid_write_beside_hudi_leaves_hudi_committing_and_our_next_run_completes(
        hudi: None, zookeeper: str, tmp_path: Path) -> None:
    """kill -9 of `index build` and of `index compact` while each has its metadata-table instant pending, with
    Hudi's writer committing beside them under the same ZooKeeper lock (whose node goes with our dead session):
    Hudi's next commits succeed, and our next runs take over the dead lock, roll back the instant they left
    and complete; then everything agrees."""
    path = tmp_path / "live"
    zk_lock = {**zk_lock_options(zookeeper), "hoodie.write.lock.zookeeper.session_timeout_ms": "6000"}
    lock = options_args(zk_lock)
    writer = LiveWriter(path, "COPY_ON_WRITE", 6, {**STATS, **zk_lock})
    while not (path / ".hoodie" / "hoodie.properties").is_file() or not HudiTable.open(str(path)).timeline.completed():
        assert not writer.done(), writer.log.read_text()[-2000:]
        time.sleep(0.2)
    build = ["index", "build", str(path), "--partitions", "bloom_filters", *lock]
    killed = [kill_before_completing(path, build), kill_before_completing(path, ["index", "compact", str(path), "--force", *lock])]
    assert all(killed), f"a command finished without a metadata-table instant to leave: {killed}"
    journal = (path / ".hoodie" / ".hudi-bridge-index.lock").read_text().splitlines()
    assert [line for line in journal if line.startswith("pending ")] == [f"pending {killed[-1]}"], journal
    runs = beside(writer, [["index", "build", str(path), "--partitions", "bloom_filters", *lock],
                           ["index", "compact", str(path), "--force", *lock]])
    record = writer.finish()
    check_beside(runs)
    assert any(code == 0 and "bloom_filters" in output for command, code, output in runs if command[1] == "build"), runs
    said = "\n".join([(path.parent / "killed.log").read_text(), *(output for _, _, output in runs)])
    # Each later run took the dead lock over and rolled back what its journal named: the killed compaction the
    # build's instant (and died before it could say so), a run beside Hudi the compaction's.
    assert f"metadata instant {killed[-1]} of an earlier hudi-bridge run had not completed" in said, said
    assert "took over the index lock of process" in said, said
    check_after(path, record, zk_lock)
    pending = {str(i.requested_time) for i in TableParts.load(str(path / ".hoodie" / "metadata")).timeline.pending()}
    assert not pending & set(killed), pending
    assert "bloom_filters" in HudiTable.open(str(path)).config.metadata_partitions
