"""The compiled helpers of the metadata-table read (`_cells.c`: the HFile
cell walk and the record decoder), or None where they are not: installed
without a C compiler, on a big-endian machine (the decoder reads Avro's
little-endian floats in place), or switched off with HUDI_BRIDGE_NATIVE=0.
Each has a Python counterpart giving the same results, slower.

`inflates_blocks()`: whether the compiled part also inflates data blocks,
with libdeflate's decompressor, which the `deflate` package's library
exports (looked up by name, once, on the first block read)."""

from __future__ import annotations

import functools
import os
import sys
import threading
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt


def _load() -> ModuleType | None:
    if os.environ.get("HUDI_BRIDGE_NATIVE", "1") == "0" or sys.byteorder != "little":
        return None
    try:
        from metadata.mdt import _cells
    except ImportError:
        return None
    return _cells


cells: ModuleType | None = _load()

_LIBDEFLATE_FUNCTIONS = ("libdeflate_alloc_decompressor", "libdeflate_free_decompressor", "libdeflate_gzip_decompress_ex")


@functools.cache
def inflates_blocks() -> bool:
    """Whether `cells.inflate_blocks` can inflate gzip blocks: the compiled
    part is there and libdeflate's functions were found."""
    if cells is None:
        return False
    try:
        import ctypes

        from deflate import _deflate
    except ImportError:
        return False
    try:
        library = ctypes.CDLL(_deflate.__file__)  # loaded already: the same handle
        addresses = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in _LIBDEFLATE_FUNCTIONS]
    except (OSError, AttributeError):  # a build of the package that does not export them
        return False
    if not all(addresses):
        return False
    cells.use_inflater(*addresses)
    return True


def lets_gil_go() -> bool:
    """Whether a long compiled call lets the GIL go here: off the main
    thread only. A plan's reading thread decodes while the main thread
    evaluates; letting it go on the main thread too made a 1M plan 0.97x
    but raised its peak past 500 MiB at times (docs/benchmarks-history.md, stop 60)."""
    return threading.current_thread() is not threading.main_thread()


def int64s(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """As contiguous int64s (what `cells` reads), copied only when they are not."""
    return np.ascontiguousarray(values, dtype=np.int64)


__all__ = ["cells", "inflates_blocks", "int64s", "lets_gil_go"]
