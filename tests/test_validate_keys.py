"""`table validate` checks the record index and the secondary indexes against
the rows of the latest file slices: a key the index lost (a writer that
committed without updating it) is named, with the file group that holds it;
one that is only behind the timeline is said to be behind; stale entries
(only a file more kept) are a note."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from listers import plan
from metadata import HudiTable
from metadata.mdt.file_groups import MdtPartition, SecondaryIndexPartition
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.partitions.record_index import RecordIndexWriter
from metadata.mdt.write.partitions.secondary_index import SecondaryIndexWriter
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.table.slice_rows import merged_rows

SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("merchant", pa.string()), ("amount", pa.int64())])
INDEX = SecondaryIndexPartition("secondary_index_merchant_idx", "merchant")


def _rows(ids: range, merchant: str, city: str = "sf") -> list[dict[str, Any]]:
    return [{"id": f"k{i:03d}", "city": city, "merchant": merchant, "amount": i} for i in ids]


def indexed(path: Path, table_type: str = "COPY_ON_WRITE") -> TableBuilder:
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=4)
    builder.write(_rows(range(0, 8), "acme"))
    MetadataTableWriter(str(path)).build([MdtPartition.FILES, MdtPartition.RECORD_INDEX, INDEX])
    return builder


def _holder(path: Path, key: str) -> str:
    table = HudiTable.open(str(path))
    return next(f"{s.partition}/{s.file_id}" for s in table.file_slices() if key in merged_rows(table, s).column("_hoodie_record_key").to_pylist())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_keys_a_writer_left_out_of_the_indexes_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str) -> None:
    """A commit synced into files and column_stats but not into the record and
    secondary indexes (what a writer that does not keep them leaves): plans on
    the new keys and values drop their rows, and validate names each one."""
    path = tmp_path / "t"
    builder = indexed(path, table_type)
    report = validate_metadata(str(path))
    assert report.ok and report.index_entries_checked == 16, report.differences()  # 8 keys, 8 (value, key) pairs
    builder.write(_rows(range(20, 22), "globex", "nyc"))
    monkeypatch.setattr(RecordIndexWriter, "sync_records", lambda self, inputs: {})
    monkeypatch.setattr(SecondaryIndexWriter, "sync_records", lambda self, inputs: {})
    MetadataTableWriter(str(path)).sync()
    assert not plan(str(path), "id = 'k020'").files  # the drop a lost key makes
    assert not plan(str(path), "merchant = 'globex'").files
    report = validate_metadata(str(path))
    assert not report.ok and not report.behind
    holder = _holder(path, "k020")
    assert f"record_index: key 'k020' is in {holder}, but the index has no entry for it: a plan on the key would drop its row" \
        in report.index_differences, report.index_differences
    assert f"secondary_index_merchant_idx: no entry for value 'globex' of key 'k020' (in {holder}): a plan on merchant = 'globex' " \
        "would drop the row" in report.index_differences, report.index_differences
    assert len(report.index_differences) == 4  # two keys, each in both indexes
    cli = subprocess.run([sys.executable, "-m", "engine_bridge", "table", "validate", str(path), "--json"], capture_output=True, text=True)
    assert cli.returncode == 1 and json.loads(cli.stdout)["differences"] == report.differences(), cli.stdout + cli.stderr


def test_a_key_the_index_places_in_another_file_group_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An update that moved a key to another partition (a global index's
    move), synced without the record index: the index still names the old
    file group, so a plan keeps that one and drops the row's new file."""
    path = tmp_path / "t"
    builder = indexed(path)
    old = _holder(path, "k001")
    builder.delete(["k001"])
    builder.write([{"id": "k001", "city": "nyc", "merchant": "acme", "amount": 1}])
    monkeypatch.setattr(RecordIndexWriter, "sync_records", lambda self, inputs: {})
    MetadataTableWriter(str(path)).sync()
    report = validate_metadata(str(path))
    assert f"record_index: key 'k001' is in {_holder(path, 'k001')}, the index says {old}" in report.index_differences, report.index_differences


def test_an_index_behind_the_timeline_is_said_to_be_behind_and_stale_entries_are_a_note(tmp_path: Path) -> None:
    """Keys of an instant the metadata table does not hold yet are behind (a
    sync fixes them), not lost; after the sync validate agrees. A deleted
    key's entry the index still holds only keeps a file: a note."""
    path = tmp_path / "t"
    builder = indexed(path)
    builder.write(_rows(range(20, 22), "globex", "nyc"))
    report = validate_metadata(str(path))
    assert report.behind and not report.index_differences  # the listing is behind with the index: the new keys are not lost
    MetadataTableWriter(str(path)).sync()
    assert validate_metadata(str(path)).ok
    builder.delete(["k002"])
    real_sync = RecordIndexWriter.sync_records
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RecordIndexWriter, "sync_records", lambda self, inputs: {})
        MetadataTableWriter(str(path)).sync()
    assert RecordIndexWriter.sync_records is real_sync
    report = validate_metadata(str(path))
    assert report.ok, report.differences()
    assert any(re.fullmatch(r"record_index: 1 stale entry \(key 'k002'\), which no latest row holds: a plan keeps a file more for "
                            r"them, no row is lost", note) for note in report.notes), report.notes
