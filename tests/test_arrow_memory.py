"""The read path's Arrow pool: jemalloc (or the system allocator) unless the
user chose a pool, and the read path's strings really come from it; glibc's
heap thresholds fixed by the first compiled decode, unless told not to."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from metadata.mdt import native
from metadata.mdt.hfile_cells import PADDING, spans_to_binary
from metadata.util import arrow_memory
from tests.conftest import REPO


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


def _steady_heap_in_a_new_process(env: dict[str, str]) -> list[str]:
    code = ("from metadata.util import arrow_memory; print(arrow_memory.steady_heap(), arrow_memory._glibc('mallopt') is not None)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=REPO).stdout.split()


def test_a_read_fixes_glibcs_heap_thresholds_unless_told_not_to() -> None:
    env = {k: v for k, v in os.environ.items() if k != "HUDI_BRIDGE_STEADY_HEAP"}
    fixed, glibc = _steady_heap_in_a_new_process(env)
    assert fixed == glibc  # fixed wherever glibc's mallopt is there (this machine's Linux), and nowhere else
    assert _steady_heap_in_a_new_process({**env, "HUDI_BRIDGE_STEADY_HEAP": "0"})[0] == "False"


DECODE_ONE_RECORD = """
import pyarrow as pa
from metadata.util import arrow_memory
from metadata.mdt import columnar
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.keys import column_stats_key
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import range_record, record_schema_json
from metadata.mdt.records import parse_schema_cached
key = column_stats_key("a", "p=0", "f.parquet")
schema = record_schema_json(9)
record = encode_record(range_record(key, ColumnRange("f.parquet", "a", pa.int64(), 1, 2, 0, 1), 9), schema)
before = arrow_memory.steady_heap.cache_info().currsize
columnar.decode_many([record], parse_schema_cached(schema))
print(before, arrow_memory.steady_heap.cache_info().currsize)
"""


def test_the_compiled_decoder_fixes_them_before_its_first_columns() -> None:
    if native.cells is None:
        pytest.skip("the compiled module was not built (no C compiler at install)")
    out = subprocess.run([sys.executable, "-c", DECODE_ONE_RECORD], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"]
