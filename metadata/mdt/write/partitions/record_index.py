"""The `record_index` partition: each record key's file group (RFC-08, the global index)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from metadata.mdt.file_groups import record_index_file_groups
from metadata.mdt.file_stats import blocks_counting
from metadata.mdt.record_builders import record_index_record
from metadata.mdt.record_keys import FileKeys, keys_of_files
from metadata.mdt.write.partitions.base import PartitionWriter, Records
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import Need, SyncInputs
from metadata.mdt.write.table_inputs import completed_instants, key_targets, latest_slices_from_storage, timeline_is_utc
from metadata.storage.paths import join
from metadata.table.file_naming import BaseFileName, LogFileName, classify
from metadata.table.record_key import RecordKeyRule
from metadata.timeline.instant import instant_epoch_millis


class RecordIndexWriter(PartitionWriter):
    needs: ClassVar[frozenset[Need]] = frozenset({Need.STORED_FILES})

    def initial_file_groups(self, snapshot: BuildSnapshot) -> int:
        """Hudi's estimate from the number of keys."""
        return record_index_file_groups(snapshot.key_count())

    def build_records(self, snapshot: BuildSnapshot, ts: str) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from record_index_entries(snapshot.file_keys(), timeline_is_utc(self.ctx.data.config))

    def sync_records(self, inputs: SyncInputs) -> Records:
        """The keys of the files the instant wrote that are still there (a
        removed one's keys are in newer files); after a rollback, the keys of
        the touched partitions' latest slices (a rolled-back clustering may
        have moved keys back)."""
        data, change, ts = self.ctx.data, inputs.change, inputs.ts
        targets = []
        if change.keyed:
            extension = data.config.base_file_format.extension
            for partition, names in inputs.stored_files().items():
                for name in names:
                    parsed = classify(name, extension, join(partition, name))
                    if isinstance(parsed, (BaseFileName, LogFileName)):
                        targets.append((join(partition, name), partition, parsed.file_id, ts))
        if change.rekeyed_partitions:
            targets += key_targets(latest_slices_from_storage(data, ts, sorted(change.rekeyed_partitions)))
        found = keys_of_files(self.ctx.storage, targets, blocks_counting(ts if change.keyed else None, completed_instants(data)),
                              RecordKeyRule.of(data.config))
        return dict(record_index_entries(found, timeline_is_utc(data.config)))


def record_index_entries(found: Sequence[FileKeys], utc: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, record_index record) of every key of these files, once each: a
    key in several files (a base file and its logs) takes the last file's place."""
    if not found:
        return
    keys = pa.chunked_array([f.keys for f in found], pa.string())
    owner = pa.chunked_array([pa.array(np.full(len(f.keys), n, np.int32)) for n, f in enumerate(found)], pa.int32())
    table = pa.table({"key": keys, "owner": owner}).drop_null()
    last = table.group_by("key", use_threads=False).aggregate([("owner", "max")])
    millis = [instant_epoch_millis(f.instant, utc) for f in found]
    for key, n in zip(last.column("key").to_pylist(), last.column("owner_max").to_pylist()):
        file = found[n]
        yield key, record_index_record(key, file.partition, file.file_id, millis[n])
