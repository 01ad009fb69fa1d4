"""RFC-15's validate mode: read the listing both ways and report differences."""

from __future__ import annotations

from dataclasses import dataclass, field

from metadata.errors import MissingFileError
from metadata.file_naming import BaseFileName, LogFileName, classify
from metadata.listing import StorageListing
from metadata.mdt.listing import MetadataListing
from metadata.mdt.metadata_table import MetadataTable
from metadata.storage import StoredFile
from metadata.stored_table import StoredTable
from metadata.table import HudiTable


@dataclass
class ValidationReport:
    partitions_only_in_metadata: list[str] = field(default_factory=list)
    partitions_only_in_storage: list[str] = field(default_factory=list)
    files_only_in_metadata: dict[str, list[str]] = field(default_factory=dict)
    files_only_in_storage: dict[str, list[str]] = field(default_factory=dict)
    size_mismatches: dict[str, list[str]] = field(default_factory=dict)
    slice_differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(vars(self).values())

    def differences(self) -> list[str]:
        lines = [f"partition {p!r} only in the metadata table" for p in self.partitions_only_in_metadata]
        lines += [f"partition {p!r} only in storage" for p in self.partitions_only_in_storage]
        lines += [f"{p}/{n}: only in the metadata table" for p, names in self.files_only_in_metadata.items() for n in names]
        lines += [f"{p}/{n}: only in storage" for p, names in self.files_only_in_storage.items() for n in names]
        lines += [f"{p}/{d}" for p, items in self.size_mismatches.items() for d in items]
        return lines + self.slice_differences

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "differences": self.differences()}


def validate_metadata(path_or_table: HudiTable | str) -> ValidationReport:
    """Compare the MDT's files partition with a storage listing.

    Storage files of instants that never completed are left out first: the
    MDT rightly does not list them.
    """
    table = path_or_table if isinstance(path_or_table, HudiTable) else HudiTable.open(path_or_table, use_metadata=False)
    mdt = MetadataTable.open(table)
    storage = StorageListing(table.storage)
    report = ValidationReport()
    from_mdt, from_storage = set(mdt.partitions()), set(storage.partitions())
    report.partitions_only_in_metadata = sorted(from_mdt - from_storage)
    report.partitions_only_in_storage = sorted(p for p in from_storage - from_mdt if committed_files(table, storage.files_for([p])[p]))
    common = sorted(from_mdt & from_storage)
    mdt_files = mdt.files_for(common)
    stored = storage.files_for(common)
    extension = table.config.base_file_format.extension
    for partition in common:
        committed = {f.name: f.size for f in committed_files(table, stored[partition], extension)}
        listed = mdt_files[partition]
        only_mdt = sorted(set(listed) - set(committed))
        only_storage = sorted(set(committed) - set(listed))
        if only_mdt:
            report.files_only_in_metadata[partition] = only_mdt
        if only_storage:
            report.files_only_in_storage[partition] = only_storage
        sizes = [f"{n}: {listed[n]} bytes in the metadata table, {committed[n]} in storage"
                 for n in sorted(set(listed) & set(committed)) if listed[n] != committed[n] and not n.startswith(".")]
        if sizes:
            report.size_mismatches[partition] = sizes
    with_mdt = HudiTable(table.storage, table.config, table.timeline, listing=MetadataListing(mdt))
    with_storage = HudiTable(table.storage, table.config, table.timeline, listing=storage)
    via_mdt = {(s.partition, s.file_id): s.files for s in with_mdt.file_slices()}
    try:
        via_storage = {(s.partition, s.file_id): s.files for s in with_storage.file_slices()}
    except MissingFileError as exc:
        report.slice_differences.append(f"the storage listing cannot serve the latest slices: {exc}")
        return report
    for key in sorted(set(via_mdt) | set(via_storage)):
        if via_mdt.get(key) != via_storage.get(key):
            report.slice_differences.append(
                f"latest slice of {key[0]!r}/{key[1]}: metadata table {via_mdt.get(key)} vs storage {via_storage.get(key)}"
            )
    return report


def committed_files(table: StoredTable, files: list[StoredFile], extension: str = ".parquet") -> list[StoredFile]:
    """Base and log files whose writing instant completed (what the MDT lists)."""
    kept = []
    for f in files:
        parsed = classify(f.name, extension, f.relative_path)
        if isinstance(parsed, (BaseFileName, LogFileName)) and table.timeline.is_completed(parsed.instant_time):
            kept.append(f)
        elif isinstance(parsed, LogFileName) and f.name in table.timeline.written_file_names():
            # v6: a log written while its group awaits compaction is named after
            # the pending compaction; the commit that wrote it says it counts.
            kept.append(f)
    return kept
