"""The metadata-table writer's bytes are a function of its input: equal to
the recorded digests (tests/writer_bytes.py), and unchanged by how much it
holds in memory or how many files it reads at once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.writer_bytes import GOLDEN, written_bytes


def test_the_writer_writes_the_recorded_bytes(tmp_path: Path) -> None:
    recorded = json.loads(GOLDEN.read_text())
    written = written_bytes(tmp_path)
    assert len(written) > 400 and any("/expr_index_" in p for p in written) and any("/secondary_index_" in p for p in written)
    assert sorted(written) == sorted(recorded)
    changed = [p for p in written if written[p] != recorded[p]]
    assert not changed, f"{len(changed)} files differ from the recorded bytes, first {changed[:3]}"


def test_memory_budget_and_batches_do_not_change_the_bytes(tmp_path: Path) -> None:
    """Cells spilled to sorted runs past a tiny budget, statistics read a file at a time."""
    recorded = json.loads(GOLDEN.read_text())
    assert written_bytes(tmp_path, memory_budget=2_000, batch_files=1) == recorded
