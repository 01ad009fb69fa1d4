"""Record keys tagged with their file groups through the record index, as a
Spark join (Hudi's record-index tagging): keys are routed to the record
index's file groups by Java's String hash, as Hudi's writer routed them, so
each task reads one file group for its own keys (one sorted pass over the
blocks they touch), and nothing is collected to the driver.

A partitioned record index (Hudi 1.1) names its file groups by data
partition and keeps a key once per partition: there each task reads every
group for its keys and returns every location.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from listers.index_support import KeyLookup
from metadata import HudiTable, MetadataTable
from metadata.errors import MetadataTableUnavailable
from metadata.mdt.file_groups import MdtPartition, file_group_indexes
from metadata.mdt.indexes import record_index_entries, record_index_is_global, record_locations

SCHEMA = "record_key string, partition string, file_id string"
KEYS_PER_LOOKUP = 100_000  # keys a task looks up at once
KEY_LOOKUP_THRESHOLD = 100_000  # a plan's key sets larger than this are looked up on the executors


def _open_index(base_uri: str, storage_options: Mapping[str, str]) -> tuple[HudiTable, MetadataTable]:
    table = HudiTable.open(base_uri, storage_options=dict(storage_options))
    mdt = table.metadata_table
    if mdt is None or MdtPartition.RECORD_INDEX not in table.config.metadata_partitions:
        table.close()
        raise MetadataTableUnavailable(base_uri, "no record_index to look keys up in")
    return table, mdt


def _lookup(base_uri: str, storage_options: Mapping[str, str], global_index: bool, keys: Iterator[Any]) -> Iterator[tuple[str, str, str]]:
    table, mdt = _open_index(base_uri, storage_options)
    try:
        batch: list[str] = []
        for key in keys:
            batch.append(key[1] if global_index else key)
            if len(batch) >= KEYS_PER_LOOKUP:
                yield from _locations(mdt, batch, global_index)
                batch = []
        if batch:
            yield from _locations(mdt, batch, global_index)
    finally:
        table.close()


def _locations(mdt: MetadataTable, keys: list[str], global_index: bool) -> Iterator[tuple[str, str, str]]:
    found = record_locations(mdt, keys).items() if global_index else record_index_entries(mdt, keys)
    for key, (partition, file_id) in found:
        yield key, partition, file_id


def _routed(groups: int, keys: Iterator[str | None]) -> Iterator[tuple[int, str]]:
    batch = list(keys)
    for i in range(0, len(batch), KEYS_PER_LOOKUP):
        part = [k for k in batch[i:i + KEYS_PER_LOOKUP] if k is not None]
        yield from zip(file_group_indexes(part, groups), part)


def lookup_keys(spark: Any, path_or_uri: str, keys_df: Any, key_column: str | None = None,
                storage_options: Mapping[str, str] | None = None) -> Any:
    """A DataFrame (record_key, partition, file_id) of the keys of `keys_df`
    (its `key_column`, or its only column) that the record index holds; keys
    it does not hold are left out (a writer would insert them)."""
    return spark.createDataFrame(_tagged(path_or_uri, storage_options, _key_rdd(keys_df, key_column)), SCHEMA)


def key_groups_of(path_or_uri: str, keys_df: Any, key_column: str | None = None,
                  storage_options: Mapping[str, str] | None = None) -> set[tuple[str, str]]:
    """`groups_holding` the keys of a DataFrame (its `key_column`, or its only column)."""
    return groups_holding(path_or_uri, storage_options, _key_rdd(keys_df, key_column))


def groups_holding(path_or_uri: str, storage_options: Mapping[str, str] | None, keys: Any) -> set[tuple[str, str]]:
    """The distinct (partition, file id) the record index gives for an RDD of
    keys, looked up on the executors; only those pairs reach the driver."""
    return set(_tagged(path_or_uri, storage_options, keys).map(lambda found: (found[1], found[2])).distinct().collect())


def _key_rdd(keys_df: Any, key_column: str | None) -> Any:
    column = key_column or keys_df.columns[0]
    return keys_df.select(keys_df[column].cast("string")).rdd.map(lambda row: row[0])


def _tagged(path_or_uri: str, storage_options: Mapping[str, str] | None, keys: Any) -> Any:
    """An RDD of (record key, partition, file id) for an RDD of keys."""
    table, mdt = _open_index(path_or_uri, storage_options or {})
    try:
        uri, options = table.base_uri, dict(table.storage.storage_options)
        global_index = record_index_is_global(mdt)
        groups = len(mdt.reader.file_slices(MdtPartition.RECORD_INDEX.value))
    finally:
        table.close()
    if global_index:  # each key to the task of its file group, as Hudi routed it
        routed = keys.mapPartitions(lambda rows: _routed(groups, rows)).partitionBy(groups, lambda group: group)
        return routed.mapPartitions(lambda items: _lookup(uri, options, True, items))
    return keys.filter(lambda key: key is not None).mapPartitions(lambda items: _lookup(uri, options, False, items))


def spark_key_lookup(spark: Any, path_or_uri: str, storage_options: Mapping[str, str] | None = None,
                     threshold: int = KEY_LOOKUP_THRESHOLD) -> KeyLookup:
    """For a plan: key sets over `threshold` (an IN list on the record key,
    or the keys a secondary index gave) looked up as a Spark job; the driver
    gets the distinct file groups back."""
    def locate(keys: list[str]) -> set[tuple[str, str]]:
        slices = max(1, min(len(keys) // KEYS_PER_LOOKUP + 1, spark.sparkContext.defaultParallelism * 2))
        return groups_holding(path_or_uri, storage_options, spark.sparkContext.parallelize(keys, slices))

    return KeyLookup(threshold, locate, "as a Spark join over the record index's file groups")
