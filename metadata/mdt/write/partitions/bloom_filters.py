"""The `bloom_filters` partition: each base file's footer bloom filter (RFC-27)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from metadata.mdt.bloom_filters import bloom_filter_records, removed_base_file_bloom_records
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs


class BloomFiltersWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.STORED_FILES})

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Stamped with the building instant, as Hudi's initialisation does."""
        yield from bloom_filter_records(self.ctx.storage, snapshot.file_names(), ts, self.ctx.data.config.base_file_format.extension)

    def sync_records(self, inputs: SyncInputs) -> Records:
        extension = self.ctx.data.config.base_file_format.extension
        out: Records = dict(bloom_filter_records(self.ctx.storage, [(p, n) for p, names in inputs.stored_files().items() for n in names],
                                                 inputs.ts, extension))
        out.update(removed_base_file_bloom_records([(p, n) for p, names in inputs.change.deleted.items() for n in names], inputs.ts,
                                                   extension))
        return out
