"""Module paths from before `metadata/` was cut into packages by concept
(`util/`, `storage/`, `formats/`, `timeline/`, `table/`): each still
imports, as the module it became, with a DeprecationWarning naming the new
path. They go in the release after next; `metadata.storage`,
`metadata.timeline` and `metadata.table` stay, as the packages' own names.
Names a long module handed to a new one when it was split stay importable
from the old module the same way (`moved_attribute`)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

MOVED = {
    "metadata.arrow_values": "metadata.util.arrow_values",
    "metadata.arrow_memory": "metadata.util.arrow_memory",
    "metadata.text_enum": "metadata.util.text_enum",
    "metadata.time_zone": "metadata.util.time_zone",
    "metadata.datetime_pattern": "metadata.util.datetime_pattern",
    "metadata.varint": "metadata.util.varint",
    "metadata.fingerprints": "metadata.util.fingerprints",
    "metadata.read_ahead": "metadata.util.read_ahead",
    "metadata.process": "metadata.util.process",
    "metadata.storage_options": "metadata.storage.options",
    "metadata.listing": "metadata.storage.listing",
    "metadata.spilled_listing": "metadata.storage.spilled_listing",
    "metadata.secrets": "metadata.storage.secrets",
    "metadata.log_format": "metadata.formats.log_format",
    "metadata.avro_schema": "metadata.formats.avro_schema",
    "metadata.bloom_filter": "metadata.formats.bloom_filter",
    "metadata.stats_table": "metadata.formats.stats_table",
    "metadata.cdc": "metadata.formats.cdc",
    "metadata.instant": "metadata.timeline.instant",
    "metadata.instant_content": "metadata.timeline.instant_content",
    "metadata.timeline_models": "metadata.timeline.models",
    "metadata.commit_metadata": "metadata.timeline.commit_metadata",
    "metadata.archived_timeline": "metadata.timeline.archived",
    "metadata.table_config": "metadata.table.config",
    "metadata.stored_table": "metadata.table.stored_table",
    "metadata.fs_view": "metadata.table.fs_view",
    "metadata.file_group": "metadata.table.file_group",
    "metadata.file_naming": "metadata.table.file_naming",
    "metadata.partition_path": "metadata.table.partition_path",
    "metadata.key_generator": "metadata.table.key_generator",
    "metadata.record_key": "metadata.table.record_key",
    "metadata.slice_rows": "metadata.table.slice_rows",
    "metadata.table_summary": "metadata.table.table_summary",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} is now {MOVED[spec.name]}; the old path goes in the release after next", DeprecationWarning,
                      stacklevel=2)
        return importlib.import_module(MOVED[spec.name])  # the module itself: its own name, spec and attributes kept

    def exec_module(self, module: ModuleType) -> None:
        pass  # imported already


def install() -> None:
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())


def moved_attribute(module: str, name: str, moved: Mapping[str, str]) -> Any:
    """For a module's `__getattr__`: a name it offered before a split, from the module it moved to, with a
    DeprecationWarning (AttributeError for any other name)."""
    target = moved.get(name)
    if target is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is now {target}.{name}; the old path goes in the release after next", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(target), name)
