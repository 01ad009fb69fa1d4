"""The metadata table's bloom_filters partition: built and synced from each
base file's footer filter exactly as Hudi stores it, and used by plans to
rule out base files that cannot hold a pinned record key."""

from __future__ import annotations

import shutil
from pathlib import Path

import hudi
import pyarrow.parquet as pq
import pytest

from listers import plan
from metadata import HudiTable
from metadata.errors import HudiFormatError
from metadata.formats.bloom_filter import BloomFilterType, SerializedBloomFilter, build_bloom_filter, footer_filter_text
from metadata.mdt.bloom_filters import bloom_filter_key, bloom_filters_of, stored_bloom_filters
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures
from tests.test_index_writer import SCHEMA, _rows, _rs_slices

FOOTER_FIXTURES = [f for f in fixture_ids() if f in (
    "sample_table__cow__v6_simplekeygen_nonhivestyle", "sample_table__cow__v8_complexkeygen_hivestyle",
    "sample_table__mor__avro__v9_txns_simple_meta")]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", FOOTER_FIXTURES or ["no-fixtures"], indirect=True)
def test_the_writer_builds_hudis_footer_filters_bit_for_bit(fixture_table: str) -> None:
    """The filter the builder writes for a file's keys is the very text
    Apache Hudi put in that file's footer (sizing, layout, hash and Base64)."""
    table = HudiTable.open(fixture_table)
    checked = 0
    for s in table.file_slices():
        if not s.base_file:
            continue
        path = f"{fixture_table}/{s.base_file}"
        found = footer_filter_text(pq.read_metadata(path).metadata)
        assert found is not None, path
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist()
        assert build_bloom_filter(keys, kind=BloomFilterType(found.type_code)) == found, path
        checked += 1
    assert checked > 0


@requires_fixtures
@pytest.mark.parametrize("fixture_table", FOOTER_FIXTURES or ["no-fixtures"], indirect=True)
def test_built_records_are_the_footers_filters_and_hudi_rs_still_reads(fixture_table: str, tmp_path: Path) -> None:
    copy = tmp_path / "t"
    shutil.copytree(fixture_table, copy)
    report = MetadataTableWriter(str(copy)).build([MdtPartition.FILES, MdtPartition.BLOOM_FILTERS])
    assert "bloom_filters" in report.partitions
    table = HudiTable.open(str(copy))
    bases = [(s.partition, s.base_file_name) for s in table.file_slices() if s.base_file_name]
    held = stored_bloom_filters(table.metadata_table, bases)  # type: ignore[arg-type]
    assert set(held) == set(bases)
    for partition, name in bases:
        footer = footer_filter_text(pq.read_metadata(str(copy / partition / name)).metadata)
        assert held[partition, name] == footer
    validated = validate_metadata(str(copy))
    assert validated.ok, validated.differences()
    assert validated.bloom_files_checked >= len(bases)
    assert _rs_slices(str(copy)) == _rs_slices(fixture_table)  # an independent reader still reads the metadata table


def _holders(table: HudiTable) -> dict[str, set[tuple[str, str]]]:
    reader = hudi.HudiFileGroupReader(table.base_uri)
    holders: dict[str, set[tuple[str, str]]] = {}
    for s in table.file_slices():
        for key in reader.read_file_slice_from_paths(s.base_file or "", list(s.log_files)).column("_hoodie_record_key").to_pylist():
            holders.setdefault(key, set()).add((s.partition, s.file_id))
    return holders


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_key_lookups_keep_every_holder_and_rule_out_the_rest(tmp_path: Path, table_type: str) -> None:
    """Without a record index, `id = k` keeps every slice holding k; on COW
    the filters rule out every other base file; on MOR slices with log files
    stay. Synced after updates, a delete, a compaction (MOR), a clean and a rollback."""
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=3)
    builder.write(_rows(0, 12, "sf"))
    builder.write(_rows(12, 6, "nyc"), operation="insert")
    writer_partitions = [MdtPartition.FILES, MdtPartition.BLOOM_FILTERS]
    MetadataTableWriter(str(path)).build(writer_partitions)
    builder.write(_rows(2, 4, "sf"))
    builder.delete(["k007"])
    if table_type == "MERGE_ON_READ":  # new base files, so that the clean removes older ones
        builder.run_compaction(builder.schedule_compaction())
    before_clean = {(f.parent.name, f.name) for f in path.glob("*/*.parquet")}
    builder.clean()
    removed = before_clean - {(f.parent.name, f.name) for f in path.glob("*/*.parquet")}
    builder.rollback(builder.write(_rows(30, 2, "sf"), complete=False))
    MetadataTableWriter(str(path)).sync()
    assert validate_metadata(str(path)).ok
    table = HudiTable.open(str(path))
    holders = _holders(table)
    slices = table.file_slices()
    for key in ["k000", "k003", "k007", "k013", "k099"]:
        planned = plan(str(path), f"id = '{key}'")
        kept = {(s.partition, s.file_id) for s in planned.files}
        assert holders.get(key, set()) <= kept, planned.explain()
        stage = next(s for s in planned.stages if s.name == "bloom_filters")
        with_logs = {(s.partition, s.file_id) for s in slices if s.log_files and s.partition in {p for p, _ in kept}}
        assert kept - holders.get(key, set()) <= with_logs, planned.explain()  # only slices with logs stay beyond the holders
        assert stage.kept < stage.total or not stage.total, planned.explain()
    # The cleaned base files' records were deleted: they are no longer served.
    assert removed and stored_bloom_filters(table.metadata_table, sorted(removed)) == {}  # type: ignore[arg-type]


def test_records_are_keyed_as_hudi_keys_them_and_a_damaged_filter_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write(_rows(0, 3, "sf"))
    MetadataTableWriter(str(path)).build([MdtPartition.FILES, MdtPartition.BLOOM_FILTERS])
    table = HudiTable.open(str(path))
    assert table.metadata_table is not None
    (piece,) = table.file_slices()
    target = (piece.partition, piece.base_file_name or "")
    records = table.metadata_table.reader.read(MdtPartition.BLOOM_FILTERS, KeyQuery())
    assert list(records) == [bloom_filter_key(*target)]  # PartitionIndexID + FileIndexID, as Hudi's createBloomFilterMetadataRecord
    meta = records[bloom_filter_key(*target)].raw["BloomFilterMetadata"]
    assert meta["type"] == "DYNAMIC_V0" and not meta["isDeleted"] and meta["timestamp"] == "00000000000000001"
    (decoded,) = bloom_filters_of(table.metadata_table, [target]).values()
    assert decoded is not None and decoded.might_contain("k001") and not decoded.might_contain("k999")
    with pytest.raises(HudiFormatError, match=f"{piece.base_file_name}.*ends at byte 3"):
        SerializedBloomFilter("DYNAMIC_V0", "AAAA").decode(f"bloom_filters ({target[0]}/{target[1]})")
