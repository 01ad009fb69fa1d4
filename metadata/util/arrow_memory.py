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
    return _glibc("malloc_trim")


def _glibc(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


# glibc's mallopt parameters, and the thresholds a read fixes them at
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
HEAP_MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for the threshold it moves
HEAP_TRIM_THRESHOLD = 64 << 20  # twice it, as glibc sets it when it moves the other


@functools.cache
def steady_heap() -> bool:
    """Fix glibc's mmap and trim thresholds, once for the process: whether
    they were (False: not glibc, or HUDI_BRIDGE_STEADY_HEAP=0).

    The compiled decoder's columns come from the C heap, hundreds of KiB
    each, thousands a plan. glibc maps a block that large unless it has seen
    one freed (then its threshold rises to that size), so whether the
    columns are reused or mapped, faulted in and unmapped each time depended
    on what else the process happened to free first: a 10M plan's reading
    thread faulted 1.3 million pages in one build and 0.46 million in the
    next. Fixed, they are reused; `release_unused` still hands free pages
    back (malloc_trim)."""
    if os.environ.get("HUDI_BRIDGE_STEADY_HEAP", "1") == "0":
        return False
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD))


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table with no rows: `schema.empty_table()` imports pandas (a fifth of a
    second on a cold path that needs none), this does not."""
    return pa.Table.from_batches([], schema=schema)
