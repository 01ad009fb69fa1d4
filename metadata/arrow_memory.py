"""The Arrow memory pool of the metadata-table read path.

A read of a million files' statistics makes hundreds of short-lived buffers
of megabytes each (cell spans, decoded strings, takes). Arrow's default pool,
mimalloc, returns freed pages to the system within milliseconds, so the next
buffer faults them in again and the kernel zeroes them once more. Where a
page fault is dear (virtual machines: about 2.7 µs per 4 KiB page measured on
the bench machine) that churn cost a second of a cold plan at 1M files;
jemalloc keeps freed pages for reuse. Medians of 5 alternating cold plans:
4.5 s with mimalloc throughout, 3.4 s with READ_POOL here (3.2 s with
jemalloc as the process default), and a second less system time.

The read path passes READ_POOL explicitly to its large allocations: the
process's default pool stays the user's choice, and a user who sets
ARROW_DEFAULT_MEMORY_POOL gets that pool here too.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable

import pyarrow as pa


def _read_pool() -> pa.MemoryPool:
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return pa.default_memory_pool()
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc (Windows wheels)
        return pa.system_memory_pool()


READ_POOL: pa.MemoryPool = _read_pool()


def release_unused() -> None:
    """Hand the free pages of the read pool, the default pool and, with glibc,
    the C heap (numpy's arrays) back to the system, after a large read whose
    tables are gone or about to be."""
    READ_POOL.release_unused()
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim` (None elsewhere: macOS, musl, Windows)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table with no rows: `schema.empty_table()` imports pandas (a fifth of a
    second on a cold path that needs none), this does not."""
    return pa.Table.from_batches([], schema=schema)
