"""The metadata-table writer's bytes are a function of its input: equal to
the recorded digests (tests/writer_bytes.py), and unchanged by how much it
holds in memory or how many files it reads at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metadata.mdt.stats_engine import LocalStatsEngine
from tests.writer_bytes import GOLDEN, written_bytes


def test_the_writer_writes_the_recorded_bytes(tmp_path: Path) -> None:
    recorded = json.loads(GOLDEN.read_text())
    written = written_bytes(tmp_path)
    assert len(written) > 400 and any("/expr_index_" in p for p in written) and any("/secondary_index_" in p for p in written)
    assert sorted(written) == sorted(recorded)
    changed = [p for p in written if written[p] != recorded[p]]
    assert not changed, f"{len(changed)} files differ from the recorded bytes, first {changed[:3]}"


def test_memory_budget_and_batches_do_not_change_the_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells spilled to sorted runs past a tiny budget, statistics read a file
    at a time, the latest slices of a build's roll-ups resolved a partition at
    a time (and the listing let go behind them)."""
    from metadata.mdt.write import snapshot

    monkeypatch.setattr(snapshot, "RUN_PARTITIONS", 1)
    recorded = json.loads(GOLDEN.read_text())
    assert written_bytes(tmp_path, memory_budget=2_000, batch_files=1) == recorded


def test_statistics_read_by_processes_write_the_same_bytes(tmp_path: Path) -> None:
    """The local engine's process pool (what `index build` uses on a large
    table) hands back the same ranges and cells as its threads."""
    engine = LocalStatsEngine(processes=2, process_min_files=1)
    assert written_bytes(tmp_path, engine=engine) == json.loads(GOLDEN.read_text())
    assert engine._pool is not None  # the batches did go to the processes
