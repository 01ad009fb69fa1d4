"""Hudi's secondary indexes written here: a build equals the index Apache Hudi
wrote, record for record and file group for file group; a sync keeps it
equal to the table's rows after every kind of write; plans use it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from listers import plan
from metadata import HudiTable
from metadata.errors import IndexWriteError
from metadata.mdt.file_groups import MdtPartition, SecondaryIndexPartition
from metadata.mdt.indexes import split_secondary_key
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import requires_fixtures
from tests.test_index_writer import _rs_slices
from tests.test_record_index import RLI_FIXTURES

SECONDARY = ["secondary_index_merchant_idx", "secondary_index_txn_date_idx"]


def _stored(table_path: str, partition: str) -> dict[str, tuple[str, bool]]:
    """Key -> (file group, deleted) of every record a partition's slices hold, merged."""
    reader = HudiTable.open(table_path).metadata_table.reader  # type: ignore[union-attr]
    merged = reader.read(partition, KeyQuery())
    found = {}
    for piece in reader.file_slices(partition):
        for key in _keys_of_slice(reader, piece) & set(merged):
            found[key] = (piece.file_id, bool(merged[key].raw["SecondaryIndexMetadata"]["isDeleted"]))
    return found


def _keys_of_slice(reader: Any, piece: Any) -> set[str]:
    base, changes = reader._slice_contents(piece, KeyQuery())
    return set(base.records_of() if base else {}) | set(changes)


def _live_pairs(table_path: str, partition: str) -> set[tuple[str | None, str]]:
    reader = HudiTable.open(table_path).metadata_table.reader  # type: ignore[union-attr]
    return {split_secondary_key(key) for key, record in reader.read(partition, KeyQuery()).items()
            if not record.raw["SecondaryIndexMetadata"]["isDeleted"]}


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_a_build_equals_the_index_hudi_wrote(fixture_table: str, tmp_path: Path) -> None:
    copy = tmp_path / "t"
    shutil.copytree(fixture_table, copy)
    hudis = {p: _stored(str(copy), p) for p in SECONDARY}
    definitions = json.loads((copy / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]
    MetadataTableWriter(str(copy)).drop(SECONDARY)
    assert "secondary_index_merchant_idx" not in HudiTable.open(str(copy)).config.metadata_partitions
    report = MetadataTableWriter(str(copy)).build([SecondaryIndexPartition("secondary_index_merchant_idx", "merchant_name"),
                                                    SecondaryIndexPartition("secondary_index_txn_date_idx", "txn_date")])
    assert report.partitions == SECONDARY
    for partition in SECONDARY:
        assert _stored(str(copy), partition) == hudis[partition]  # same keys, flags and file groups as Hudi's
    written = json.loads((copy / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]
    assert written == definitions  # the definitions Hudi wrote, unchanged
    assert validate_metadata(str(copy)).ok
    assert _rs_slices(str(copy)) == _rs_slices(fixture_table)
    planned = plan(str(copy), "merchant_name = 'Grab'")
    assert any(s.name == "secondary_index_merchant_idx" for s in planned.stages), planned.explain()


SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("merchant", pa.string()), ("amount", pa.int64())])


def _rows(ids: range, merchant: str, city: str = "sf") -> list[dict[str, Any]]:
    return [{"id": f"k{i:03d}", "city": city, "merchant": merchant if i % 3 else None, "amount": i} for i in ids]


def _truth(path: Path) -> set[tuple[str | None, str]]:
    rows = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()  # an independent reader's snapshot
    batches = rows if isinstance(rows, list) else [rows]
    return {(m, k) for b in batches for m, k in zip(b.column("merchant").to_pylist(), b.column("_hoodie_record_key").to_pylist())}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_sync_keeps_the_index_equal_to_the_rows(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=4)
    builder.write(_rows(range(0, 10), "acme"))
    index = SecondaryIndexPartition("secondary_index_merchant_idx", "merchant")
    MetadataTableWriter(str(path)).build([MdtPartition.FILES, MdtPartition.RECORD_INDEX, index])
    assert _live_pairs(str(path), index.value) == _truth(path)
    steps = [
        lambda: builder.write(_rows(range(2, 6), "globex")),  # values change: old pairs deleted, new ones live
        lambda: builder.write(_rows(range(20, 24), "acme", "nyc")),  # a new partition
        lambda: builder.delete(["k004", "k021"]),
        builder.clean,
        lambda: builder.rollback(builder.write(_rows(range(0, 3), "initech"), complete=False)),
        lambda: builder.insert_overwrite(_rows(range(30, 33), "umbrella", "nyc")),
        lambda: builder.write(_rows(range(6, 8), "globex")),
    ]
    if table_type == "MERGE_ON_READ":
        steps.append(lambda: builder.run_compaction(builder.schedule_compaction()))
    for n, step in enumerate(steps):
        step()
        MetadataTableWriter(str(path), compact_after=2).sync()
        assert _live_pairs(str(path), index.value) == _truth(path), n
        assert validate_metadata(str(path)).ok
        for merchant in ("acme", "globex", "umbrella"):
            planned = plan(str(path), f"merchant = '{merchant}'")
            table = HudiTable.open(str(path))
            holders = {(s.partition, s.file_id) for s in table.file_slices()
                       if merchant in _merchants(path, s)}
            assert holders <= {(s.partition, s.file_id) for s in planned.files}, (n, merchant, planned.explain())


def _merchants(path: Path, piece: Any) -> set[str]:
    reader = hudi.HudiFileGroupReader(str(path))
    rows = reader.read_file_slice_from_paths(piece.base_file or "", list(piece.log_files))
    return set(rows.column("merchant").to_pylist()) if rows.num_rows else set()


def test_a_secondary_index_needs_what_it_is_read_through(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write(_rows(range(0, 3), "acme"))
    with pytest.raises(IndexWriteError, match="read through the record index: build record_index too"):
        MetadataTableWriter(str(path)).build([MdtPartition.FILES, SecondaryIndexPartition("secondary_index_m", "merchant")])
    with pytest.raises(IndexWriteError, match="secondary index on amount_x: no such column"):
        MetadataTableWriter(str(path)).build([MdtPartition.RECORD_INDEX, SecondaryIndexPartition("secondary_index_m", "amount_x")])
    assert not (path / ".hoodie" / "metadata").exists()  # refused before anything was written
    old = TableBuilder(str(tmp_path / "v6"), SCHEMA, version=6, partition_fields=["city"])
    old.write(_rows(range(0, 3), "acme"))
    with pytest.raises(IndexWriteError, match="table version 8"):
        MetadataTableWriter(str(tmp_path / "v6")).build([MdtPartition.RECORD_INDEX, SecondaryIndexPartition("secondary_index_m", "merchant")])


def test_a_failed_build_or_sync_leaves_the_table_byte_for_byte(tmp_path: Path) -> None:
    """A crash at every step of a secondary index's build, and of a sync that
    updates it: before its commit point the table's files are exactly as they
    were (index definitions and hoodie.properties included); a rerun completes
    the index, equal to the rows."""
    from tests.test_index_writer import crash_each_step

    template = tmp_path / "template"
    builder = TableBuilder(str(template), SCHEMA, version=8, partition_fields=["city"], max_rows_per_file=4)
    builder.write(_rows(range(0, 8), "acme"))
    MetadataTableWriter(str(template)).build([MdtPartition.FILES, MdtPartition.RECORD_INDEX])
    index = SecondaryIndexPartition("secondary_index_merchant_idx", "merchant")

    def check(path: Path, step: str) -> None:
        assert _live_pairs(str(path), index.value) == _truth(path), step
        assert validate_metadata(str(path)).ok, step

    for operation in ("build", "sync"):
        if operation == "sync":
            MetadataTableWriter(str(template)).build([index])
            builder.write(_rows(range(2, 5), "globex"))
        target = crash_each_step(template, tmp_path, operation, index, lambda path, fault: MetadataTableWriter(str(path), fault=fault), check)
        assert target > 3
