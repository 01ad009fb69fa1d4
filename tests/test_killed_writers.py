"""kill -9 of our own metadata-table writer at a known step (`tests.die_at_step`), and what the next runs do:
take the dead lock over, roll back what its journal names (even when the run that took it over dies too), and
leave a metadata table that agrees with storage."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer_lock import LOCK_PATH, WriterLock
from metadata.storage.storage import Storage
from metadata.table.stored_table import TableParts
from tests.die_at_step import killed_instant
from tests.test_index_writer import _builder, _rows

ROOT = Path(__file__).parent.parent


def _run(*args: str, die_at: str | None = None) -> subprocess.CompletedProcess[str]:
    module = ["tests.die_at_step", die_at] if die_at else ["engine_bridge"]
    return subprocess.run([sys.executable, "-m", *module, *args], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _journal(path: Path) -> list[str]:
    return [line for line in (path / LOCK_PATH).read_text().splitlines() if line.startswith("pending ")]


def _pending(path: Path) -> set[str]:
    return {str(i.requested_time) for i in TableParts.load(str(path / ".hoodie" / "metadata")).timeline.pending()}


def test_a_dead_holders_instants_stay_in_the_journal_until_rolled_back(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    storage = Storage.open(str(tmp_path))
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / LOCK_PATH).write_text(f"{dead.stdout.strip()}@{socket.gethostname()} since 2026-01-01T00:00:00\npending 001\n")
    lock = WriterLock(storage)
    lock.acquire()
    assert lock.left_pending == ["001"]
    assert _journal(tmp_path) == ["pending 001"]  # killed now, the next run still knows 001 is ours
    lock.record_pending("002")
    assert _journal(tmp_path) == ["pending 001", "pending 002"]
    lock.record_rolled_back()
    assert _journal(tmp_path) == ["pending 002"]
    lock.release()
    assert not (tmp_path / LOCK_PATH).exists()


def test_runs_killed_before_completing_are_rolled_back_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "MERGE_ON_READ")
    builder.write(_rows(0, 6, "sf"))
    assert _run("index", "build", str(path)).returncode == 0
    builder.write(_rows(3, 6, "la"))
    built = _run("index", "build", str(path), "--partitions", "bloom_filters", die_at="before completion")
    assert built.returncode == -9, built.stdout + built.stderr
    left = killed_instant(built.stdout)
    assert _journal(path) == [f"pending {left}"] and left in _pending(path)

    synced = _run("index", "sync", str(path), die_at="before completion")  # takes over, rolls back, dies in its own write
    assert synced.returncode == -9, synced.stdout + synced.stderr
    assert "took over the index lock of process" in synced.stderr, synced.stderr
    sync_left = killed_instant(synced.stdout)
    assert _journal(path) == [f"pending {sync_left}"], "the build's instant was rolled back before the sync died"
    assert _pending(path) == {sync_left}

    done = _run("index", "build", str(path), "--partitions", "bloom_filters")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"metadata instant {sync_left} of an earlier hudi-bridge run had not completed" in done.stdout, done.stdout
    assert not (path / LOCK_PATH).exists() and not _pending(path)
    synced_again = _run("index", "sync", str(path))
    assert synced_again.returncode == 0, synced_again.stdout + synced_again.stderr
    report = validate_metadata(str(path))
    assert report.ok, report.differences
