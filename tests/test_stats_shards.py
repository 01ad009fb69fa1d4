"""Shards of a stats partition (`metadata.mdt.stats_shards`): read apart,
they hold every live record of the partition exactly once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from metadata import HudiTable
from metadata.formats.stats_table import FILE_NAME, PARTITION, max_field, min_field
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.stats_shards import listing_buckets, read_shard, stats_buckets, stats_shards
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])


@pytest.mark.parametrize("shard_bytes", [1, 4096, 1 << 30])
def test_shards_hold_every_live_record_once(tmp_path: Path, shard_bytes: int) -> None:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"], max_rows_per_file=2)
    builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i)} for i in range(300)])
    MetadataTableWriter(path).build()
    builder.write([{"id": i, "city": ("sf", "la", "nyc")[i % 3], "fare": float(i) + 1000} for i in range(0, 300, 11)])
    builder.clean()
    MetadataTableWriter(path, compact_after=100).sync()  # the metadata table's logs change keys its base files hold
    mdt = HudiTable.open(path).metadata_table
    assert mdt is not None
    assert any(s.log_files for s in mdt.reader.file_slices(MdtPartition.COLUMN_STATS.value))
    shards = stats_shards(mdt, MdtPartition.COLUMN_STATS.value, shard_bytes)
    if shard_bytes == 1:
        assert len(shards) > len(mdt.reader.file_slices(MdtPartition.COLUMN_STATS.value))  # base files cut by blocks
    columns = ["id", "fare"]
    whole = mdt.column_stats(columns)
    for column in columns:
        pieces = [read_shard(mdt, shard, columns).get(column) for shard in shards]
        records = pa.concat_tables([p for p in pieces if p is not None])
        live = records.filter(pc.invert(pc.fill_null(records.column("deleted"), False)))
        identities = live.column("identity").to_pylist()
        assert len(identities) == len(set(identities))  # no record twice
        expected = {(r[FILE_NAME], r[min_field(column)], r[max_field(column)]) for r in whole.to_pylist() if r[min_field(column)] is not None}
        assert {(f, lo, hi) for f, lo, hi in zip(live.column("file").to_pylist(), live.column("min").to_pylist(),
                                                   live.column("max").to_pylist()) if lo is not None} == expected
        # buckets by file group: the records of one file group land in one bucket, with its listing rows
        buckets = stats_buckets({column: live}, 5)
        files = HudiTable.open(path).file_slices()
        listing = pa.table({PARTITION: [s.partition for s in files], FILE_NAME: [s.base_file_name or "" for s in files]})
        placed = {name: b for b, rows in listing_buckets(listing, 5, PARTITION, FILE_NAME).items() for name in rows.column(FILE_NAME).to_pylist()}
        for bucket, pieces_of in buckets.items():
            for name in pieces_of[column].column("file").to_pylist():
                assert placed.get(name, bucket) == bucket
