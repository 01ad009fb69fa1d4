"""The table: its config, keys and partitions, and which files make it up.

- `hudi_table`: `HudiTable`, the entry point for reading one table;
- `config`: `hoodie.properties`;
- `stored_table`: storage, config and timeline, before any listing;
- `fs_view_building`, `fs_view`, `file_group`, `file_naming`: the file-system view (built, then asked), its file groups and slices, and file names;
- `partition_path`, `key_generator`, `record_key`: partition paths and record keys as Hudi's key generators write them;
- `slice_rows`: the merged rows of file slices;
- `table_summary`: a table in plain values (the CLI's and the service's table pages).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metadata.table.config import TableConfig, TableType
    from metadata.table.file_group import FileGroup, FileSlice
    from metadata.table.fs_view import FileSystemView
    from metadata.table.hudi_table import HudiTable
    from metadata.table.stored_table import TableParts

_OFFERED = {"HudiTable": "hudi_table", "TableConfig": "config", "TableType": "config", "FileGroup": "file_group", "FileSlice": "file_group",
            "FileSystemView": "fs_view", "TableParts": "stored_table"}
__all__ = ["FileGroup", "FileSlice", "FileSystemView", "HudiTable", "TableConfig", "TableParts", "TableType"]


def __getattr__(name: str) -> Any:
    # Loaded when asked: the timeline and the metadata table import parts of this package, and must not load all of it.
    module = _OFFERED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
