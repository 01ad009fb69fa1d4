"""The traps: each turns a copy of the base table into a hostile one.

A trap may say what some commands must print (`says`): the promise it
checks beyond the ones every cell keeps (no traceback, no secret shown, one
line when refused, no MemoryError under the cap, the canary intact).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECRET = "aws_secret_access_key=SEKRIT"
LATE = "20240101000015000"  # an instant time after every one the base table holds

# Each command, with {t} for the table. Those that write come last; `index drop` last of all.
COMMANDS: dict[str, list[str]] = {
    "show": ["table", "show", "{t}"],
    "partitions": ["table", "partitions", "{t}"],
    "files": ["table", "files", "{t}"],
    "validate": ["table", "validate", "{t}"],
    "plan": ["plan", "{t}", "--where", "fare > 1"],
    "incremental": ["incremental", "{t}", "--begin", "0"],
    "changes": ["changes", "{t}", "--begin", "0"],
    "sync": ["sync", "{t}", "--database", "d", "--dry-run"],
    "index sync": ["index", "sync", "{t}"],
    "index build": ["index", "build", "{t}", "--rebuild", "--partitions", "column_stats"],
    "index drop": ["index", "drop", "{t}", "--partitions", "column_stats"],
}


@dataclass(frozen=True)
class Trap:
    plant: Callable[[Path, Path, int], None]  # (table, outside, bomb size in MiB)
    says: dict[str, str] = field(default_factory=dict)  # command -> text its output must hold


def base_table(path: Path) -> Path:
    """The sample trips table (version 8, MERGE_ON_READ, partitioned by city) with a metadata table."""
    from metadata.mdt.write.writer import MetadataTableWriter
    from metadata.sample_tables.sample import build_sample_table

    build_sample_table(str(path))
    MetadataTableWriter(str(path)).build()
    return path


def canary(outside: Path) -> dict[str, bytes]:
    """Plant files beside the table that no command may touch; returns what they hold."""
    for name, data in {"column_stats/keep.hfile": b"not yours", "files/keep.log": b"not yours either",
                       "credentials": f"{SECRET}\n".encode(), "city=x/.hoodie_partition_metadata": b"commitTime=1\n",
                       "city=x/f-0_0-1-1_20240101000015000.parquet": b"PAR1 a victim's data"}.items():
        (outside / name).parent.mkdir(parents=True, exist_ok=True)
        (outside / name).write_bytes(data)
    return held(outside)


def held(outside: Path) -> dict[str, bytes]:
    return {str(p.relative_to(outside)): p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file() and not p.is_symlink()}


# Helpers ---------------------------------------------------------------------------------------
def _timeline(table: Path) -> Path:
    return table / ".hoodie" / "timeline"


def _newest_deltacommit(table: Path) -> Path:
    return sorted(p for p in _timeline(table).iterdir() if p.name.endswith(".deltacommit"))[-1]


def _rewrite_newest_commit(table: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Decode the newest completed deltacommit, edit it, and write it back in its own encoding."""
    from metadata.timeline.instant_content import decode_instant_content, encode_avro_instant
    from metadata.timeline.models import commit_metadata_schema

    file = _newest_deltacommit(table)
    content = decode_instant_content(str(file), file.read_bytes())
    edit(content)
    file.write_bytes(encode_avro_instant(commit_metadata_schema(False), content))


def _move_partition(content: dict[str, Any], to: str) -> None:
    stats = content["partitionToWriteStats"]
    moved = stats.pop(sorted(stats)[0])
    for stat in moved:
        stat["partitionPath"] = to
        stat["path"] = f"{to}/{stat['path'].rsplit('/', 1)[-1]}"
    stats[to] = moved


def _complete(table: Path, action: str, content: dict[str, Any]) -> None:
    """A completed instant of `action` at LATE, its requested and inflight files beside it, as JSON."""
    timeline = _timeline(table)
    (timeline / f"{LATE}.{action}.requested").write_bytes(b"")
    (timeline / f"{LATE}.{action}.inflight").write_bytes(b"")
    (timeline / f"{LATE}_20240101000016000.{action}").write_text(json.dumps(content))


@functools.cache
def _gzip_of_zeros(mib: int) -> bytes:
    """A gzip member that inflates to `mib` MiB of zeros, made a MiB at a time (never held inflated)."""
    deflate, chunk = zlib.compressobj(6, zlib.DEFLATED, 31), bytes(1 << 20)
    return b"".join(deflate.compress(chunk) for _ in range(mib)) + deflate.flush()


def _files_partition_bomb(table: Path, mib: int, honest: bool) -> None:
    """The metadata table's `files` base file rewritten with its data block a gzip bomb of `mib` MiB;
    an honest header declares that size, a lying one the block's true size."""
    from metadata.mdt.hfile_format import (
        CHECKSUM_CRC32C,
        CHECKSUM_SIZE,
        DATA_MAGIC,
        HEADER_SIZE,
        BlockHeader,
        block_checksums,
        checksum_bytes_per_chunk,
        checksum_chunks,
    )
    from metadata.mdt.hfile_reader import HFileReader
    from metadata.mdt.write.hfile_writer import HFileWriter

    base = next((table / ".hoodie" / "metadata" / "files").glob("files-*.hfile"))
    reader = HFileReader.from_bytes(base.read_bytes(), str(base))
    cells, file_info = list(reader.iter_all()), dict(reader.file_info)
    mib = min(mib, 2047) if honest else mib  # a header's size is a signed 32-bit number
    bomb = _gzip_of_zeros(mib)

    class BombWriter(HFileWriter):
        def _write_block(self, magic: bytes, payload: bytes) -> tuple[int, int]:
            if magic != DATA_MAGIC:
                return super()._write_block(magic, payload)
            offset, chunk = self._offset, checksum_bytes_per_chunk(HEADER_SIZE + len(bomb))
            header = BlockHeader(magic=magic, on_disk_size_without_header=len(bomb) + CHECKSUM_SIZE * checksum_chunks(HEADER_SIZE + len(bomb), chunk),
                                 uncompressed_size_without_header=(mib << 20) if honest else len(payload), prev_block_offset=-1,
                                 checksum_type=CHECKSUM_CRC32C, bytes_per_checksum=chunk, on_disk_data_size_with_header=HEADER_SIZE + len(bomb))
            data = header.encode() + bomb
            self._emit(data + block_checksums(data, chunk))
            return offset, self._offset - offset

    writer = BombWriter()
    writer.add_all(cells)
    base.write_bytes(writer.finish(file_info))


def _sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk: read whole it fills memory."""
    path.unlink(missing_ok=True)
    with path.open("wb") as out:
        out.truncate(size)


# Links -----------------------------------------------------------------------------------------
def linked_metadata_folder(table: Path, outside: Path, _: int) -> None:
    shutil.move(str(table / ".hoodie" / "metadata"), str(outside / "metadata"))
    os.symlink(outside / "metadata", table / ".hoodie" / "metadata")


def linked_metadata_folder_to_a_victim(table: Path, outside: Path, _: int) -> None:
    """`.hoodie/metadata` pointing at a folder shaped like a metadata table's: `index drop` once deleted in it."""
    shutil.rmtree(table / ".hoodie" / "metadata")
    os.symlink(outside, table / ".hoodie" / "metadata")


def linked_partition(table: Path, outside: Path, _: int) -> None:
    partition = next(p for p in sorted(table.iterdir()) if p.is_dir() and not p.name.startswith("."))
    partition.rename(outside / "partition")
    os.symlink(outside / "partition", partition)


def linked_data_file(table: Path, outside: Path, _: int) -> None:
    partition = next(p for p in sorted(table.iterdir()) if p.is_dir() and not p.name.startswith("."))
    data = sorted(partition.glob("*.parquet"))[0]
    data.rename(outside / data.name)
    os.symlink(outside / data.name, data)


def linked_log_file(table: Path, outside: Path, _: int) -> None:
    """A log file (read by hudi-rs, not by us, when a slice is merged) linked outside."""
    log = sorted(table.glob("city=*/.*.log.*"))[0]
    log.rename(outside / log.name)
    os.symlink(outside / log.name, log)


def linked_properties(table: Path, outside: Path, _: int) -> None:
    (table / ".hoodie" / "hoodie.properties").unlink()
    os.symlink(outside / "credentials", table / ".hoodie" / "hoodie.properties")


def linked_instant_file(table: Path, outside: Path, _: int) -> None:
    newest = _newest_deltacommit(table)
    newest.rename(outside / newest.name)
    os.symlink(outside / newest.name, newest)


def linked_timeline_folder(table: Path, outside: Path, _: int) -> None:
    shutil.move(str(_timeline(table)), str(outside / "timeline"))
    os.symlink(outside / "timeline", _timeline(table))


def linked_lock_file(table: Path, outside: Path, _: int) -> None:
    os.symlink(outside / "credentials", table / ".hoodie" / ".hudi-bridge-index.lock")


def planted_lock_text(table: Path, outside: Path, _: int) -> None:
    (table / ".hoodie" / ".hudi-bridge-index.lock").write_text(f"{os.getpid()} {SECRET}\n")


def planted_lock_fifo(table: Path, outside: Path, _: int) -> None:
    os.mkfifo(table / ".hoodie" / ".hudi-bridge-index.lock")


def pending_instant_swept_through_a_link(table: Path, outside: Path, _: int) -> None:
    """A link inside the metadata table to a folder holding a file named for a pending metadata instant:
    a rollback that swept folders deleted it."""
    (outside / "files" / f".files-0000-0_{LATE}.log.1_0-1-1").write_bytes(b"a victim's log")
    pending = table / ".hoodie" / "metadata" / ".hoodie" / "timeline" / f"{LATE}.deltacommit.requested"
    pending.write_bytes(b"")
    os.utime(pending, (1_000_000_000, 1_000_000_000))  # long dead: no sign of a writer, so it may be cleaned
    os.symlink(outside / "files", table / ".hoodie" / "metadata" / "evil")


# Paths from the table's own records ---------------------------------------------------------------
def partition_up_and_out(table: Path, outside: Path, _: int) -> None:
    _rewrite_newest_commit(table, lambda c: _move_partition(c, f"../{outside.name}/city=x"))


def partition_absolute(table: Path, outside: Path, _: int) -> None:
    _rewrite_newest_commit(table, lambda c: _move_partition(c, str(outside / "city=x")))


def partition_url_encoded_dots(table: Path, outside: Path, _: int) -> None:
    _rewrite_newest_commit(table, lambda c: _move_partition(c, f"%2e%2e/{outside.name}/city=x"))


def partition_with_nul(table: Path, outside: Path, _: int) -> None:
    _rewrite_newest_commit(table, lambda c: _move_partition(c, "city=a\0/../../x"))


def partition_very_long(table: Path, outside: Path, _: int) -> None:
    _rewrite_newest_commit(table, lambda c: _move_partition(c, "city=" + "a" * 100_000))


def file_name_up_and_out(table: Path, outside: Path, _: int) -> None:
    def edit(content: dict[str, Any]) -> None:
        for stats in content["partitionToWriteStats"].values():
            for stat in stats:
                stat["path"] = f"../{outside.name}/city=x/f-0_0-1-1_20240101000015000.parquet"
    _rewrite_newest_commit(table, edit)


def replace_up_and_out(table: Path, outside: Path, _: int) -> None:
    _complete(table, "replacecommit", {"partitionToWriteStats": {}, "operationType": "CLUSTER",
                                       "partitionToReplaceFileIds": {f"../{outside.name}/city=x": ["f-0"], "/": ["x"]}})


def rollback_up_and_out(table: Path, outside: Path, _: int) -> None:
    victim = f"../{outside.name}/city=x/f-0_0-1-1_20240101000015000.parquet"
    _complete(table, "rollback", {"startRollbackTime": LATE, "timeTakenInMillis": 1, "totalFilesDeleted": 1,
                                  "commitsRollback": ["20240101000013000"], "instantsRollback": [],
                                  "partitionMetadata": {f"../{outside.name}/city=x": {
                                      "partitionPath": f"../{outside.name}/city=x", "successDeleteFiles": [victim],
                                      "failedDeleteFiles": [], "rollbackLogFiles": {}, "logFilesFromFailedCommit": {}}}})


# Bombs ----------------------------------------------------------------------------------------
def files_block_honest_bomb(table: Path, outside: Path, mib: int) -> None:
    _files_partition_bomb(table, mib, honest=True)


def files_block_lying_bomb(table: Path, outside: Path, mib: int) -> None:
    _files_partition_bomb(table, mib, honest=False)


def avro_instant_bomb(table: Path, outside: Path, mib: int) -> None:
    """The newest commit as an Avro container whose one deflate block inflates to `mib` MiB."""
    newest = _newest_deltacommit(table)
    body = _gzip_of_zeros(mib)[10:-8]  # the member's raw deflate, between gzip's header and trailer

    def long(value: int) -> bytes:  # Avro's zigzag varint
        value, out = (value << 1) ^ (value >> 63), bytearray()
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        return bytes(out) + bytes([value])

    sync = b"S" * 16
    meta = [(b"avro.codec", b"deflate"), (b"avro.schema", b'{"type":"record","name":"r","fields":[]}')]
    header = b"Obj\x01" + long(len(meta)) + b"".join(long(len(k)) + k + long(len(v)) + v for k, v in meta) + long(0) + sync
    newest.write_bytes(header + long(1) + long(len(body)) + body + sync)


def instant_file_huge(table: Path, outside: Path, mib: int) -> None:
    _sparse(_newest_deltacommit(table), max(mib, 300) << 20)


def properties_huge(table: Path, outside: Path, mib: int) -> None:
    _sparse(table / ".hoodie" / "hoodie.properties", max(mib, 300) << 20)


def instant_nested_deep(table: Path, outside: Path, _: int) -> None:
    _newest_deltacommit(table).write_bytes(b'{"a": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}")


# Names ----------------------------------------------------------------------------------------
def schema_injection(table: Path, outside: Path, _: int) -> None:
    """A nested field name that closes the struct and names another location in HiveQL."""
    def edit(content: dict[str, Any]) -> None:
        schema = json.loads(content["extraMetadata"]["schema"])
        hostile = f"a:int>) LOCATION 'file:{outside}' TBLPROPERTIES ('x'='y') --"
        schema["fields"].append({"name": "info", "type": ["null", {"type": "record", "name": "info", "fields": [
            {"name": hostile, "type": "int"}]}], "default": None})
        content["extraMetadata"]["schema"] = json.dumps(schema)
    _rewrite_newest_commit(table, edit)


def markup_in_names(table: Path, outside: Path, _: int) -> None:
    """A partition whose name carries rich markup and terminal escapes, as a writer may name one."""
    partition = next(p for p in sorted(table.iterdir()) if p.is_dir() and not p.name.startswith("."))
    hostile = "city=[bold red]RICH[blink]X\x1b]0;pwned\x07\x1b[31mANSI"
    _rewrite_newest_commit(table, lambda c: _move_partition(c, hostile))
    shutil.copytree(partition, table / hostile)


LINK = "symbolic link"
TRAPS: dict[str, Trap] = {
    "linked metadata folder": Trap(linked_metadata_folder, {"index drop": LINK}),
    "metadata folder linked to a victim": Trap(linked_metadata_folder_to_a_victim, {"index drop": LINK}),
    "linked partition": Trap(linked_partition, dict.fromkeys(("validate", "changes", "index build"), LINK)),
    "linked data file": Trap(linked_data_file, dict.fromkeys(("validate", "changes", "index build"), LINK)),
    "linked log file": Trap(linked_log_file, dict.fromkeys(("changes", "index build"), LINK)),
    "linked hoodie.properties": Trap(linked_properties, dict.fromkeys(("show", "plan", "index sync"), LINK)),
    "linked instant file": Trap(linked_instant_file, {"incremental": LINK}),
    "linked timeline folder": Trap(linked_timeline_folder, dict.fromkeys(("show", "incremental"), LINK)),
    "linked lock file": Trap(linked_lock_file),
    "planted lock text": Trap(planted_lock_text),
    "planted lock fifo": Trap(planted_lock_fifo),
    "pending instant swept through a link": Trap(pending_instant_swept_through_a_link),
    "partition up and out": Trap(partition_up_and_out, {"incremental": "'..' segment"}),
    "partition absolute": Trap(partition_absolute, {"incremental": "outside the table"}),
    "partition with %2e%2e": Trap(partition_url_encoded_dots),
    "partition with NUL": Trap(partition_with_nul, {"incremental": "outside the table"}),
    "partition 100,000 characters long": Trap(partition_very_long),
    "file name up and out": Trap(file_name_up_and_out),  # files are found by their file IDs: the path is not used
    "replace up and out": Trap(replace_up_and_out, {"files": ".replacecommit: partition path"}),
    "rollback up and out": Trap(rollback_up_and_out, {"index sync": ".rollback: partition path"}),
    "files block bomb, honest header": Trap(files_block_honest_bomb, {"files": "HUDI_BRIDGE_MAX_BLOCK_BYTES"}),
    "files block bomb, lying header": Trap(files_block_lying_bomb, {"files": "header says"}),
    "Avro instant bomb": Trap(avro_instant_bomb, {"incremental": "HUDI_BRIDGE_MAX_INSTANT_BYTES"}),
    "instant file of 300 MiB": Trap(instant_file_huge, {"incremental": "larger than"}),
    "hoodie.properties of 300 MiB": Trap(properties_huge, {"show": "larger than"}),
    "instant nested a million deep": Trap(instant_nested_deep, {"incremental": "nested deeper"}),
    "schema injection": Trap(schema_injection, {"sync": "info"}),
    "markup in names": Trap(markup_in_names),
}
