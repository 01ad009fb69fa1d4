"""A metadata table `files` partition for builder-made tables (table v8).

As Hudi does, each data-table instant first appends a delta commit to the
metadata table (an HFILE_DATA log block with the files it added or deleted),
then completes on the data table. The table is initialised at instant
00000000000000000 with a base HFile.
"""

from __future__ import annotations

from collections.abc import Callable

from metadata.formats.log_format import BlockType, HeaderKey, LogBlock, encode_block
from metadata.mdt.record_builders import files_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.records import ALL_PARTITIONS_KEY
from metadata.mdt.write.hfile_writer import write_hfile
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.config import BaseFileFormat, TableConfig, TableType
from metadata.table.partition_path import to_metadata_partition
from metadata.timeline.instant_content import encode_avro_instant
from metadata.timeline.models import commit_metadata_schema

FILE_GROUP = "files-0000-0"
INIT_INSTANT = "00000000000000000"


class FilesPartitionWriter:
    def __init__(self, data_storage: Storage, table_name: str, clock: Callable[[], str]) -> None:
        self.storage = data_storage.child(".hoodie/metadata")
        self.clock = clock
        self.token = 0
        config = TableConfig.new(
            f"{table_name}_metadata", TableType.MERGE_ON_READ, 8,
            record_key_fields=("key",), base_file_format=BaseFileFormat.HFILE, populate_meta_fields=False,
            extra={
                "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
                # Readers (Hudi, hudi-rs) recognise a metadata table by its merge settings.
                "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
                "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                "hoodie.archivelog.folder": "history",
            },
        )
        config.write(self.storage)
        self.timeline_path = config.timeline_path
        self.storage.write_bytes("files/.hoodie_partition_metadata", b"#partition metadata\ncommitTime=00000000000000000\npartitionDepth=1\n")
        cells = [(ALL_PARTITIONS_KEY.encode(), encode_record(files_record(ALL_PARTITIONS_KEY, {}, all_partitions=True)))]
        base = f"{FILE_GROUP}_0-0-0_{INIT_INSTANT}.hfile"
        data = write_hfile(cells, METADATA_RECORD_SCHEMA_JSON)
        self.storage.write_bytes(join("files", base), data)
        self._complete(INIT_INSTANT, {"files": [(base, len(data))]})

    def _complete(self, ts: str, written: dict[str, list[tuple[str, int]]]) -> None:
        stats = {
            p: [{"fileId": FILE_GROUP, "path": join(p, name), "prevCommit": "null", "numWrites": 1, "partitionPath": p,
                 "fileSizeInBytes": size, "totalWriteBytes": size}
                for name, size in files]
            for p, files in written.items()
        }
        record = {"partitionToWriteStats": stats, "compacted": False, "extraMetadata": {"schema": METADATA_RECORD_SCHEMA_JSON},
                  "version": 1, "operationType": "UPSERT_PREPPED"}
        self.storage.write_bytes(f"{self.timeline_path}/{ts}.deltacommit.requested", b"")
        self.storage.write_bytes(f"{self.timeline_path}/{ts}.deltacommit.inflight", b"")
        completion = self.clock()
        self.storage.write_bytes(f"{self.timeline_path}/{ts}_{completion}.deltacommit", encode_avro_instant(commit_metadata_schema(False), record))

    def record(self, ts: str, added: dict[str, dict[str, int]], deleted: dict[str, list[str]] | None = None,
               dropped_partitions: set[str] | None = None, new_partitions: set[str] | None = None) -> None:
        """One delta commit on the metadata table for data instant `ts`."""
        records = {}
        partitions = set(added) | set(deleted or {})
        for partition in partitions:
            entries = {name: (size, False) for name, size in added.get(partition, {}).items()}
            entries.update(dict.fromkeys((deleted or {}).get(partition, []), (0, True)))
            key = to_metadata_partition(partition)
            records[key] = files_record(key, entries)
        listed = {to_metadata_partition(p): (0, False) for p in (new_partitions or set())}
        listed.update({to_metadata_partition(p): (0, True) for p in (dropped_partitions or set())})
        if listed:
            records[ALL_PARTITIONS_KEY] = files_record(ALL_PARTITIONS_KEY, listed, all_partitions=True)
        if not records:
            return
        cells = sorted((key.encode(), encode_record(rec)) for key, rec in records.items())
        block = LogBlock(
            BlockType.HFILE_DATA,
            {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: METADATA_RECORD_SCHEMA_JSON},
            write_hfile(cells, METADATA_RECORD_SCHEMA_JSON),
        )
        self.token += 1
        name = f".{FILE_GROUP}_{ts}.log.1_0-{self.token}-{self.token}"
        data = encode_block(block)
        self.storage.write_bytes(join("files", name), data)
        self._complete(ts, {"files": [(name, len(data))]})

