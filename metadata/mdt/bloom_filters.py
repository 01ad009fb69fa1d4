"""The metadata table's bloom_filters partition (Hudi's MetaIndex/BloomFilter):
one record per base file, keyed by PartitionIndexID + FileIndexID, holding
the record-key bloom filter from the file's footer exactly as Hudi stores
it (the UTF-8 of its serialized Base64 text, and its type code). Log files
get no record, as in Hudi; nor does a base file without a filter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow.parquet as pq

from metadata.errors import HudiFormatError
from metadata.formats.bloom_filter import BloomFilter, SerializedBloomFilter, footer_filter_text
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.keys import bloom_filter_key
from metadata.mdt.metadata_table import MetadataTable
from metadata.mdt.record_builders import bloom_filter_record, removed_bloom_filter_records
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.file_naming import is_log_file_name
from metadata.util.read_ahead import threaded_map

FOOTER_THREADS = 16  # footers read at once (a request or two each on an object store)


def footer_filter(storage: Storage, relative: str) -> SerializedBloomFilter | None:
    """The bloom filter in a base file's footer, as stored."""
    with storage.open_random_access(relative) as handle:
        return footer_filter_text(pq.read_metadata(handle).metadata)


def footer_filters(storage: Storage, relatives: list[str]) -> list[SerializedBloomFilter | None]:
    """`footer_filter` of many base files, read side by side, in order."""
    return threaded_map(relatives, lambda relative: footer_filter(storage, relative), FOOTER_THREADS)


def bloom_filter_records(storage: Storage, files: Iterable[tuple[str, str]], timestamp: str,
                         base_extension: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, record) of each base file among (partition, name) that carries a filter."""
    bases = [(p, n) for p, n in files if not is_log_file_name(n) and n.endswith(base_extension)]
    filters = threaded_map([join(p, n) for p, n in bases],
                           lambda relative: storage.unless_removed(relative, lambda: footer_filter(storage, relative), None), FOOTER_THREADS)
    for (partition, name), serialized in zip(bases, filters):
        if serialized is not None:
            key = bloom_filter_key(partition, name)
            yield key, bloom_filter_record(key, serialized.type_code, timestamp, serialized.text)


def removed_base_file_bloom_records(files: Iterable[tuple[str, str]], timestamp: str,
                                    base_extension: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Deleted records of removed base files (log files have none in this partition)."""
    return removed_bloom_filter_records(((p, n) for p, n in files if not is_log_file_name(n) and n.endswith(base_extension)), timestamp)


def stored_bloom_filters(mdt: MetadataTable, files: Iterable[tuple[str, str]],
                         partition: str = MdtPartition.BLOOM_FILTERS.value) -> dict[tuple[str, str], SerializedBloomFilter]:
    """The live bloom_filters records of these (partition, file name)s; a
    file without one (not indexed, or deleted) is absent. `partition`: the
    metadata partition holding them (an expression index of bloom filters
    keeps its own, keyed the same way)."""
    wanted = {bloom_filter_key(p, n): (p, n) for p, n in files}
    if not wanted:
        return {}
    where = f"{mdt.reader.mdt.storage.uri}/{partition}"
    found = {}
    for key, record in mdt.reader.read(partition, KeyQuery(keys=wanted)).items():
        meta = record.raw.get("BloomFilterMetadata")
        if not isinstance(meta, dict):
            raise HudiFormatError(where, f"bloom_filters record {key!r} has no BloomFilterMetadata")
        if meta.get("isDeleted") or key not in wanted:
            continue
        data = meta.get("bloomFilter") or b""
        found[wanted[key]] = SerializedBloomFilter(str(meta.get("type") or ""), bytes(data).decode("utf-8", "replace"))
    return found


def bloom_filters_of(mdt: MetadataTable, files: Iterable[tuple[str, str]],
                     partition: str = MdtPartition.BLOOM_FILTERS.value) -> dict[tuple[str, str], BloomFilter | None]:
    """Decoded filters of `stored_bloom_filters` (None: a hash this project does not read; the file stays)."""
    where = f"{mdt.reader.mdt.storage.uri}/{partition}"
    return {target: serialized.decode(f"{where} ({target[0]}/{target[1]})")
            for target, serialized in stored_bloom_filters(mdt, files, partition).items()}
