"""Record keys of data files, for the metadata table's record_index.

Keys come from the `_hoodie_record_key` meta field: a base file's column, or
the records of a log file's data blocks that count. A key is never taken out
because a delete block names it: under event-time ordering a delete can lose
to the record it names, and an index entry for a key that is gone only keeps
a file group a plan could have dropped, never the reverse.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from metadata.errors import HudiFormatError, IndexWriteError
from metadata.log_format import BlockType, LogBlock, decode_avro_records, read_log_blocks
from metadata.storage import Storage

RECORD_KEY_FIELD = "_hoodie_record_key"


@dataclass(frozen=True)
class FileKeys:
    """The record keys one data file holds, and where that file lives."""

    partition: str
    file_id: str
    instant: str  # the instant that wrote the file (or the block, for a log)
    keys: pa.Array


def _missing_key_field(where: str) -> IndexWriteError:
    return IndexWriteError(f"{where}: no {RECORD_KEY_FIELD} field; the record index needs the meta fields "
                           "(hoodie.populate.meta.fields=true)")


def base_file_keys(storage: Storage, relative: str) -> pa.Array:
    where = storage.display_path(relative)
    try:
        with storage.open_random_access(relative) as handle:
            parquet = pq.ParquetFile(handle)
            if RECORD_KEY_FIELD not in parquet.schema_arrow.names:
                raise _missing_key_field(where)
            column = parquet.read(columns=[RECORD_KEY_FIELD]).column(0)
    except (OSError, pa.ArrowInvalid) as exc:
        raise HudiFormatError(where, f"record keys do not read ({exc})") from None
    return column.combine_chunks().cast(pa.string())


def _block_keys(block: LogBlock, where: str) -> list[str]:
    if block.block_type is BlockType.PARQUET_DATA:
        table = pq.read_table(io.BytesIO(block.content))
        if RECORD_KEY_FIELD not in table.schema.names:
            raise _missing_key_field(where)
        return [k for k in table.column(RECORD_KEY_FIELD).to_pylist() if k is not None]
    if block.block_type is BlockType.AVRO_DATA:
        keys = []
        for record in decode_avro_records(block, where):
            if RECORD_KEY_FIELD not in record:
                raise _missing_key_field(where)
            if record[RECORD_KEY_FIELD] is not None:
                keys.append(str(record[RECORD_KEY_FIELD]))
        return keys
    return []


def log_file_keys(storage: Storage, relative: str, block_counts: Callable[[LogBlock], bool]) -> pa.Array:
    where = storage.display_path(relative)
    keys: list[str] = []
    for block in read_log_blocks(storage.read_bytes(relative), where).blocks:
        if block_counts(block):
            keys.extend(_block_keys(block, where))
    return pa.array(keys, pa.string())


def file_keys(storage: Storage, relative: str, block_counts: Callable[[LogBlock], bool]) -> pa.Array:
    """Keys of one data file: a log's (dot-named) counting blocks, or a base file's column."""
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return log_file_keys(storage, relative, block_counts)
    return base_file_keys(storage, relative)


def keys_of_files(storage: Storage, files: Sequence[tuple[str, str, str, str]],
                  block_counts: Callable[[LogBlock], bool], parallelism: int = 8) -> list[FileKeys]:
    """`files`: (relative path, partition, file id, instant); `block_counts`
    says which blocks of a log count. Read on a thread pool."""

    def one(item: tuple[str, str, str, str]) -> FileKeys:
        relative, partition, file_id, instant = item
        return FileKeys(partition, file_id, instant, file_keys(storage, relative, block_counts))

    with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        return list(pool.map(one, files))
