"""The files of a metadata partition's file groups: HFile base files (a
build's, a compaction's, a rebuild's), the log files a sync appends, their
names and how many file groups a partition has. Each file is written whole."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from metadata.formats.log_format import BlockType, HeaderKey, LogBlock, encode_block, encode_delete_records
from metadata.mdt.file_groups import MetadataPartition, file_group_id, file_group_index
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.write.cell_spill import CellSpill
from metadata.mdt.write.hfile_writer import HFileWriter
from metadata.mdt.write.routed_cells import RoutedCell
from metadata.mdt.write.transaction import MetadataTransaction
from metadata.storage.paths import join
from metadata.table.file_naming import BaseFileName, LogFileName, classify

Written = list[tuple[str, str, int]]  # (file group, path in the metadata table, bytes)


class FileGroupFiles:
    def __init__(self, tx: MetadataTransaction, memory_budget: int) -> None:
        self.tx = tx
        self.storage = tx.mdt_storage
        self.memory_budget = memory_budget  # bytes of encoded cells held before sorted runs spill to disk

    @property
    def file_info(self) -> dict[bytes, bytes]:
        return {b"schema": self.tx.schema_json.encode()}

    def hfile(self, cells: list[tuple[bytes, bytes]]) -> bytes:
        """An HFile of these cells (sorted), in memory, as a log block carries it."""
        hfile = HFileWriter()
        hfile.add_all(cells)
        return hfile.finish(self.file_info)

    def existing_groups(self, partition: MetadataPartition) -> set[str]:
        if not self.storage.exists(partition.value):
            return set()
        files, _ = self.storage.list_dir(partition.value)
        groups = set()
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, (BaseFileName, LogFileName)):
                groups.add(parsed.file_id)
        return groups

    def file_group_count(self, partition: MetadataPartition) -> int:
        return len(self.existing_groups(partition)) or partition.default_file_groups

    def write_initial(self, partition: MetadataPartition, ts: str, groups: int, cells: Iterable[RoutedCell], written: Written) -> int:
        """A new partition: its marker, then per file group an empty delete
        block (as Hudi initialises) and an HFile of its cells; the cells written."""
        self.storage.write_bytes(join(partition.value, ".hoodie_partition_metadata"),
                                 f"#partition metadata\ncommitTime={ts}\npartitionDepth=1\n".encode())
        count = 0
        for index, spill in self._spill(groups, cells).items():
            fg = file_group_id(partition, index)
            empty_log = join(partition.value, f".{fg}_{ts}.log.1_0-0-0")
            data = encode_block(LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: ts}, encode_delete_records([])))
            self.storage.write_bytes(empty_log, data)
            written.append((fg, empty_log, len(data)))
            if spill.count:
                base = join(partition.value, f"{fg}_{self.tx.write_token()}_{ts}.hfile")
                written.append((fg, base, self._write_hfile(base, spill)))
                count += spill.count
            self.tx.fault(f"{partition.value}: after file group {index}")
        return count

    def write_bases(self, partition: MetadataPartition, ts: str, groups: int, cells: Iterable[RoutedCell],
                    written: Written, step: str) -> int:
        """One HFile per file group (empty ones too: each replaces its group's
        old slice), cells routed by Hudi's key hash; returns the cells written."""
        spills = self._spill(groups, cells)
        for index, spill in spills.items():
            fg = file_group_id(partition, index)
            name = join(partition.value, f"{fg}_{self.tx.write_token()}_{ts}.hfile")
            written.append((fg, name, self._write_hfile(name, spill)))
            self.tx.fault(f"{step}: after {partition.value}/{index}")
        return sum(spill.count for spill in spills.values())

    def write_logs(self, partition: MetadataPartition, ts: str, records: Mapping[str, dict[str, Any] | bytes], written: Written) -> int:
        """A sync's records of one partition: an HFile data block per file group
        they hash to, in a new log file; the records written."""
        groups = self.file_group_count(partition)
        cells: dict[int, list[tuple[bytes, bytes]]] = {}
        for key, record in records.items():
            value = record if isinstance(record, bytes) else encode_record(record, self.tx.schema_json)
            cells.setdefault(file_group_index(partition.routing_key(key), groups), []).append((key.encode(), value))
        for index, group_cells in sorted(cells.items()):
            fg = file_group_id(partition, index)
            name = join(partition.value, self._log_name(partition, fg, ts))
            block = LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: self.tx.schema_json},
                             self.hfile(sorted(group_cells)))
            data = encode_block(block)
            self.storage.write_bytes(name, data)
            written.append((fg, name, len(data)))
            self.tx.fault(f"{ts}: after log {partition.value}/{index}")
        return len(records)

    def _log_name(self, partition: MetadataPartition, fg: str, ts: str) -> str:
        """v8+: one log file per writing instant. v6: a new log version in the
        latest slice (appending to a file would leave half a block on a crash)."""
        if self.tx.version >= 8:
            return f".{fg}_{ts}.log.1_{self.tx.write_token()}"
        files, _ = self.storage.list_dir(partition.value)
        base_instant, version = "", 0
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, BaseFileName) and parsed.file_id == fg and parsed.instant_time > base_instant:
                base_instant, version = parsed.instant_time, 0
        for f in files:
            parsed = classify(f.name, ".hfile", f.relative_path)
            if isinstance(parsed, LogFileName) and parsed.file_id == fg and parsed.instant_time >= base_instant:
                if parsed.instant_time > base_instant:
                    base_instant, version = parsed.instant_time, 0
                version = max(version, parsed.version)
        return f".{fg}_{base_instant or ts}.log.{version + 1}_{self.tx.write_token()}"

    def _spill(self, groups: int, cells: Iterable[RoutedCell]) -> dict[int, CellSpill]:
        """Cells gathered per file group, sorted within the memory budget."""
        spills = {i: CellSpill(max(1, self.memory_budget // groups)) for i in range(groups)}
        for index, key, value in cells:
            spills[index].add(key, value)
        return spills

    def _write_hfile(self, name: str, spill: CellSpill) -> int:
        """An HFile of the spill's cells in key order, written whole; its size."""
        with self.storage.write_stream(name) as out:
            hfile = HFileWriter(sink=out)
            hfile.add_all(spill.sorted_cells())
            return hfile.close(self.file_info)
