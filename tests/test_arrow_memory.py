"""The read path's Arrow pool: jemalloc (or the system allocator) unless the
user chose a pool, and the read path's strings really come from it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from metadata import arrow_memory
from metadata.mdt.hfile_cells import PADDING, spans_to_binary


def test_the_read_pool_keeps_freed_pages_unless_the_user_chose_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert arrow_memory._read_pool().backend_name in ("jemalloc", "system")
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    assert arrow_memory._read_pool().backend_name == pa.default_memory_pool().backend_name


def test_cell_spans_are_copied_into_the_read_pool() -> None:
    data = np.frombuffer(b"key1value1key2value2" * 50_000 + bytes(PADDING), dtype=np.uint8)
    starts = np.arange(0, 1_000_000, 10, dtype=np.int64)
    before = arrow_memory.READ_POOL.bytes_allocated()
    strings = spans_to_binary(data, starts, np.full(len(starts), 4, dtype=np.int64))
    assert strings.to_pylist()[:4] == [b"key1", b"key2", b"key1", b"key2"]
    assert arrow_memory.READ_POOL.bytes_allocated() - before >= 4 * len(starts)
