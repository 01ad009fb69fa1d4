"""The compiled helpers of the metadata-table read (`_cells.c`: the HFile
cell walk and the record decoder), or None where they are not: installed
without a C compiler, on a big-endian machine (the decoder reads Avro's
little-endian floats in place), or switched off with HUDI_BRIDGE_NATIVE=0.
Each has a Python counterpart giving the same results, slower."""

from __future__ import annotations

import os
import sys
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("HUDI_BRIDGE_NATIVE", "1") == "0" or sys.byteorder != "little":
        return None
    try:
        from metadata.mdt import _cells
    except ImportError:
        return None
    return _cells


cells: ModuleType | None = _load()

__all__ = ["cells"]
