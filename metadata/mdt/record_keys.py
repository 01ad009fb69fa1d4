"""Record keys of data files, for the metadata table's record_index.

Keys come from the `_hoodie_record_key` meta field (a base file's column, or
the records of a log file's data blocks that count), or on a table without
meta fields from the key fields, as the table's key generator computes them.
A key is never taken out because a delete block names it: under event-time
ordering a delete can lose to the record it names, and an index entry for a
key that is gone only keeps a file group a plan could have dropped, never
the reverse.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from metadata.errors import HudiFormatError, IndexWriteError
from metadata.formats.log_format import BlockType, LogBlock, decode_avro_records, read_log_blocks
from metadata.storage.storage import Storage
from metadata.table.record_key import RECORD_KEY_FIELD, RecordKeyError, RecordKeyRule
from metadata.util import arrow_values
from metadata.util.read_ahead import threaded_map

__all__ = ["RECORD_KEY_FIELD", "FileKeys", "file_keys", "keys_of_files"]


@dataclass(frozen=True)
class FileKeys:
    """The record keys one data file holds, and where that file lives."""

    partition: str
    file_id: str
    instant: str  # the instant that wrote the file (or the block, for a log)
    keys: pa.Array


def _keys(rule: RecordKeyRule, rows: pa.Table, where: str) -> pa.Array:
    try:
        return rule.keys_of(rows, where)
    except RecordKeyError as exc:
        raise IndexWriteError(str(exc)) from None


def base_file_keys(storage: Storage, relative: str, rule: RecordKeyRule) -> pa.Array:
    where = storage.display_path(relative)
    try:
        with storage.open_random_access(relative) as handle:
            parquet = pq.ParquetFile(handle)
            wanted = [c for c in rule.columns if c in parquet.schema_arrow.names]
            rows = parquet.read(columns=wanted)
    except (OSError, pa.ArrowInvalid) as exc:
        raise HudiFormatError(where, f"record keys do not read ({exc})") from None
    return _keys(rule, rows, where)


def _block_keys(block: LogBlock, where: str, rule: RecordKeyRule) -> list[str]:
    if block.block_type is BlockType.PARQUET_DATA:
        rows = pq.read_table(io.BytesIO(block.content))
    elif block.block_type is BlockType.AVRO_DATA:
        wanted = rule.columns
        rows = pa.Table.from_pylist([{c: r.get(c) for c in wanted} for r in decode_avro_records(block, where)])
        if not rows.num_rows:
            return []
    else:
        return []
    return [k for k in _keys(rule, rows, where).to_pylist() if k is not None]


def log_file_keys(storage: Storage, relative: str, block_counts: Callable[[LogBlock], bool], rule: RecordKeyRule) -> pa.Array:
    where = storage.display_path(relative)
    keys: list[str] = []
    for block in read_log_blocks(storage.read_bytes(relative), where).blocks:
        if block_counts(block):
            keys.extend(_block_keys(block, where, rule))
    return arrow_values.array(keys, pa.string())


def file_keys(storage: Storage, relative: str, block_counts: Callable[[LogBlock], bool], rule: RecordKeyRule) -> pa.Array:
    """Keys of one data file: a log's (dot-named) counting blocks, or a base file's column."""
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return log_file_keys(storage, relative, block_counts, rule)
    return base_file_keys(storage, relative, rule)


def keys_of_files(storage: Storage, files: Sequence[tuple[str, str, str, str]],
                  block_counts: Callable[[LogBlock], bool], rule: RecordKeyRule, parallelism: int = 8) -> list[FileKeys]:
    """`files`: (relative path, partition, file id, instant); `block_counts`
    says which blocks of a log count. Read on a thread pool."""

    def one(item: tuple[str, str, str, str]) -> FileKeys:
        relative, partition, file_id, instant = item
        return FileKeys(partition, file_id, instant, file_keys(storage, relative, block_counts, rule))

    return threaded_map(files, one, parallelism)
