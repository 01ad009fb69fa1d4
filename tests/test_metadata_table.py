"""Acceptance for the metadata table: exact reads of real MDTs, hashed keys,
statistics against Parquet footers, hudi-rs as an oracle, round trips,
validity of log blocks and corrupt logs."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import hudi
import pyarrow.parquet as pq
import pytest

from metadata import HudiTable, MetadataTable, MetadataTableUnavailable
from metadata.formats.log_format import (
    BlockType,
    HeaderKey,
    LogBlock,
    decode_delete_keys,
    encode_block,
    encode_delete_records,
    read_log_blocks,
)
from metadata.mdt import keys
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.record_builders import column_stats_record, files_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.records import decode_record
from metadata.mdt.write.hfile_writer import HFileWriter, write_hfile
from tests.conftest import requires_fixtures, table_path

MDT_FIXTURES = [
    "quickstart_trips_table__mor__avro__v8_trips_8i3u1d",
    "sample_table__cow__v9_txns_simple_meta",
    "sample_table__mor__avro__v9_txns_simple_meta",
    "sample_table__cow__v9_txns_nonpart_meta",
    "sample_table__mor__avro__v9_nonpartitioned_rollback",
]


def slices_of(table: HudiTable) -> list[tuple]:
    return sorted((s.partition, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in table.file_slices())


def committed_storage_files(table: HudiTable, partition: str) -> set[str]:
    """Files in storage written by completed instants (what the MDT should list)."""
    from metadata.mdt.validate import committed_files

    return {f.name for f in committed_files(table, table.listing.files_for([partition])[partition])}


# Listing ---------------------------------------------------------------------
@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_mdt_listing_equals_storage_and_hudi_rs(fixture_table: str) -> None:
    with_mdt = HudiTable.open(fixture_table)
    assert with_mdt.listing.source == "metadata table"
    storage = HudiTable.open(fixture_table, use_metadata=False)
    rs = sorted(
        (s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names))
        for s in hudi.HudiTableBuilder.from_base_uri(fixture_table).build().get_file_slices()
    )
    assert slices_of(with_mdt) == slices_of(storage) == rs
    mdt = MetadataTable.open(fixture_table)
    assert mdt.partitions() == storage.partitions()
    for partition in mdt.partitions():
        assert set(mdt.files(partition)) == committed_storage_files(storage, partition), partition
    both = mdt.files_for(mdt.partitions())
    assert {p: set(f) for p, f in both.items()} == {p: set(mdt.files(p)) for p in mdt.partitions()}


def _all_stats(mdt: MetadataTable, partition: str):
    return mdt.reader.read(partition, KeyQuery())


@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_stats_keys_recompute(fixture_table: str) -> None:
    mdt = MetadataTable.open(fixture_table)
    storage = HudiTable.open(fixture_table, use_metadata=False)
    home = {}
    for partition in mdt.partitions():
        for f in storage.listing.files_for([partition])[partition]:
            home[f.name] = partition
    checked = 0
    for key, record in _all_stats(mdt, "column_stats").items():
        stats = record.column_stats
        assert stats is not None
        assert stats.file_name in home, f"{stats.file_name} of {key} is in no partition"
        assert keys.column_stats_key(stats.column_name, home[stats.file_name], stats.file_name) == key
        checked += 1
    assert checked > 10
    if "partition_stats" in mdt.table.config.metadata_partitions:
        for key, record in _all_stats(mdt, "partition_stats").items():
            stats = record.column_stats
            assert keys.partition_stats_key(stats.column_name, stats.file_name) == key


def _footer_stats(path: Path) -> dict[str, tuple]:
    metadata = pq.ParquetFile(path).metadata
    result = {}
    for c in range(metadata.num_columns):
        name = metadata.schema.column(c).path
        mins, maxs, nulls = [], [], 0
        for r in range(metadata.num_row_groups):
            stats = metadata.row_group(r).column(c).statistics
            if stats is None or not stats.has_min_max:
                continue
            mins.append(stats.min)
            maxs.append(stats.max)
            nulls += stats.null_count
        if mins:
            result[name] = (min(mins), max(maxs), nulls)
    return result


def _comparable(value):
    if isinstance(value, Decimal):
        return value.normalize()
    if hasattr(value, "tzinfo") and hasattr(value, "timestamp") and value.tzinfo is not None:
        return value.replace(tzinfo=None)
    return value


@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_base_file_stats_equal_parquet_footer(fixture_table: str) -> None:
    mdt = MetadataTable.open(fixture_table)
    table = HudiTable.open(fixture_table, use_metadata=False)
    base_files = {s.base_file_name: s.base_file for p in table.partitions() for g in table.view().file_groups(p)
                  for s in g.slices() if s.base_file}
    compared = 0
    for record in _all_stats(mdt, "column_stats").values():
        stats = record.column_stats
        relative = base_files.get(stats.file_name)
        if relative is None or stats.min_value is None:
            continue
        footer = _footer_stats(Path(fixture_table) / relative)
        if stats.column_name not in footer:
            continue
        low, high, nulls = footer[stats.column_name]
        if isinstance(stats.min_value, Decimal):  # footer decimals may come as unscaled bytes
            exponent = stats.min_value.as_tuple().exponent
            low, high = (Decimal(int.from_bytes(v, "big", signed=True)).scaleb(exponent) if isinstance(v, bytes) else v
                         for v in (low, high))
        assert _comparable(stats.min_value) == _comparable(low), (stats.file_name, stats.column_name)
        assert _comparable(stats.max_value) == _comparable(high), (stats.file_name, stats.column_name)
        assert stats.null_count == nulls
        compared += 1
    assert compared > 10


@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_column_stats_transposed_and_typed(fixture_table: str) -> None:
    mdt = MetadataTable.open(fixture_table)
    columns = ["_hoodie_record_key", "_hoodie_commit_time"]
    stats = mdt.column_stats(columns)
    assert stats.column_names == ["partition", "fileName", "valueCount"] + [
        f"{c}_{s}" for c in columns for s in ("minValue", "maxValue", "nullCount")]
    assert set(stats.column("partition").to_pylist()) <= set(mdt.partitions())
    one = mdt.partitions()[:1]
    only = mdt.column_stats(columns, partitions=one)
    assert set(only.column("partition").to_pylist()) == set(one)
    assert only.num_rows == sum(1 for p in stats.column("partition").to_pylist() if p in one)
    assert stats.column("_hoodie_record_key_minValue").type == "string"


# hudi-rs decodes the same records -------------------------------------------------
def _normalise(row: dict) -> dict:
    out = {"key": row["key"], "type": row["type"]}
    files = row.get("filesystemMetadata")
    if files is not None:
        out["files"] = dict(files) if isinstance(files, list) else dict(files)
    stats = row.get("ColumnStatsMetadata")
    if stats is not None:
        stats = dict(stats)
        for side in ("minValue", "maxValue"):
            value = stats.get(side)
            if isinstance(value, tuple):
                value = value[1]
            stats[side] = None if value is None else value.get("value", value.get("wrappedValues"))
        out["stats"] = {k: stats.get(k) for k in ("fileName", "columnName", "minValue", "maxValue", "valueCount", "nullCount", "isDeleted", "isTightBound")}
    return out


@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_base_hfile_records_equal_hudi_rs(fixture_table: str) -> None:
    base = Path(fixture_table) / ".hoodie" / "metadata"
    reader_rs = hudi.HudiFileGroupReader(str(base))
    hfiles = sorted(p for p in base.glob("*/*.hfile") if p.parent.name in ("files", "column_stats", "partition_stats"))
    assert hfiles
    for hfile in hfiles:
        ours_reader = HFileReader.from_bytes(hfile.read_bytes(), str(hfile))
        schema = ours_reader.schema_json()
        ours = [_normalise(decode_record(r.decode(), v, schema, str(hfile)).raw) for r, v in ours_reader.iter_all()]
        theirs = [_normalise(row) for row in reader_rs.read_file_slice_from_paths(str(hfile.relative_to(base)), []).to_pylist()]
        assert ours == theirs, hfile.name


# Round trips ------------------------------------------------------------------------
def _stats_cells(n: int) -> list[tuple[bytes, bytes]]:
    cells = []
    for i in range(n):
        key = keys.column_stats_key("fare", f"city={i % 13}", f"file-{i}.parquet")
        record = column_stats_record(key, f"file-{i}.parquet", "fare", float(i), float(i) + 0.5, 100, i % 3)
        cells.append((key.encode(), encode_record(record)))
    return sorted(cells)


def test_hfile_round_trip_single_and_multi_level(tmp_path: Path) -> None:
    cells = _stats_cells(20000)
    single = write_hfile(cells, METADATA_RECORD_SCHEMA_JSON)
    reader = HFileReader.from_bytes(single)
    assert reader.trailer.num_data_index_levels == 1
    assert reader.trailer.minor_version == 0
    assert list(reader.iter_all()) == cells
    writer = HFileWriter(block_size=2048, max_root_entries=32)
    writer.add_all(cells)
    multi = writer.finish({b"schema": METADATA_RECORD_SCHEMA_JSON.encode()})
    reader = HFileReader.from_bytes(multi)
    assert reader.trailer.num_data_index_levels == 2
    assert list(reader.iter_all()) == cells
    prefix = keys.column_index_id("fare") + keys.partition_index_id("city=5")
    expected = [c for c in cells if c[0].startswith(prefix.encode())]
    blocks_before = reader.blocks_read
    assert list(reader.scan_prefix(prefix.encode())) == expected
    assert len(expected) > 1000
    assert reader.blocks_read - blocks_before < len(reader.data_index)
    some_key = cells[1234][0]
    assert reader.get(some_key) == cells[1234][1]
    assert reader.get(some_key + b"x") is None


def test_hfile_writer_rejects_unsorted() -> None:
    writer = HFileWriter()
    writer.add(b"b", b"1")
    with pytest.raises(ValueError, match="strictly increasing"):
        writer.add(b"a", b"2")


@requires_fixtures
def test_hudi_rs_reads_our_hfiles(tmp_path: Path, fixture_root: Path) -> None:
    source = Path(table_path(fixture_root, "sample_table__cow__v9_txns_simple_meta")) / ".hoodie" / "metadata"
    target = tmp_path / "metadata"
    (target / ".hoodie").mkdir(parents=True)
    shutil.copy(source / ".hoodie" / "hoodie.properties", target / ".hoodie")
    (target / "column_stats").mkdir()
    for original in sorted(source.glob("column_stats/*.hfile")) + sorted(source.glob("files/*.hfile")):
        cells = list(HFileReader.from_bytes(original.read_bytes()).iter_all())
        schema = HFileReader.from_bytes(original.read_bytes()).schema_json()
        ours = target / original.parent.name / original.name
        ours.parent.mkdir(exist_ok=True)
        ours.write_bytes(write_hfile(cells, schema, block_size=512))
        rs_original = hudi.HudiFileGroupReader(str(source)).read_file_slice_from_paths(str(original.relative_to(source)), [])
        rs_ours = hudi.HudiFileGroupReader(str(target)).read_file_slice_from_paths(str(ours.relative_to(target)), [])
        assert [_normalise(r) for r in rs_ours.to_pylist()] == [_normalise(r) for r in rs_original.to_pylist()]
    many = target / "column_stats" / "col-stats-0009-0_0-1-1_00000000000000000.hfile"
    writer = HFileWriter(block_size=1024, max_root_entries=16)
    writer.add_all(_stats_cells(5000))
    many.write_bytes(writer.finish({b"schema": METADATA_RECORD_SCHEMA_JSON.encode()}))
    rows = hudi.HudiFileGroupReader(str(target)).read_file_slice_from_paths(str(many.relative_to(target)), []).to_pylist()
    assert len(rows) == 5000
    assert rows[0]["ColumnStatsMetadata"]["columnName"] == "fare"


def test_log_file_round_trip() -> None:
    cells = [(b"__all_partitions__", encode_record(files_record("__all_partitions__", {"a": (0, False)}, all_partitions=True)))]
    blocks = [
        LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: "20240101000000000"}, encode_delete_records([])),
        LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: "20240101000001000", HeaderKey.SCHEMA: METADATA_RECORD_SCHEMA_JSON},
                 write_hfile(cells, METADATA_RECORD_SCHEMA_JSON)),
        LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: "20240101000002000"}, encode_delete_records([("k1", "p"), ("k2", "p")])),
        LogBlock(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: "20240101000003000", HeaderKey.TARGET_INSTANT_TIME: "20240101000002000",
                                     HeaderKey.COMMAND_BLOCK_TYPE: "0"}),
    ]
    data = b"".join(encode_block(b) for b in blocks)
    result = read_log_blocks(data, "mem.log")
    assert result.problems == []
    assert [(b.block_type, b.header, b.content) for b in result.blocks] == [(b.block_type, b.header, b.content) for b in blocks]
    assert decode_delete_keys(result.blocks[2], "mem.log") == [("k1", "p"), ("k2", "p")]
    assert result.blocks[3].is_rollback
    assert result.blocks[3].target_instant_time == "20240101000002000"
    inner = HFileReader.from_bytes(result.blocks[1].content)
    assert list(inner.iter_all()) == cells


def test_truncated_log_reports_file_and_offset() -> None:
    good = encode_block(LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: "1" * 17}, encode_delete_records([("a", "")])))
    data = good + good[: len(good) // 2]
    result = read_log_blocks(data, "x/.f_1.log.1_0-0-0")
    assert len(result.blocks) == 1
    assert len(result.problems) == 1
    problem = result.problems[0]
    assert problem.offset == len(good)
    assert "x/.f_1.log.1_0-0-0" in str(problem)
    garbage = good + b"NOTHUDI" + good
    result = read_log_blocks(garbage, "g.log")
    assert len(result.blocks) == 1
    assert "magic" in str(result.problems[0])


# Consistency (section 9) --------------------------------------------------------------
def _copy_fixture(fixture_root: Path, stem: str, tmp_path: Path) -> Path:
    target = tmp_path / stem
    shutil.copytree(table_path(fixture_root, stem), target)
    return target


@requires_fixtures
def test_incomplete_data_instant_is_hidden_from_mdt(tmp_path: Path, fixture_root: Path) -> None:
    path = _copy_fixture(fixture_root, "sample_table__cow__v9_txns_simple_meta", tmp_path)
    table = HudiTable.open(str(path), use_metadata=False)
    last = table.timeline.commits()[-1]
    written = {s.file_name for s in table.timeline.commit_metadata(last).write_stats()}
    before = MetadataTable.open(str(path))
    listed_before = {name for files in before.files_for(before.partitions()).values() for name in files}
    assert written <= listed_before
    (path / ".hoodie" / "timeline" / last.file_name).unlink()  # the instant is now only inflight
    after = MetadataTable.open(str(path))
    listed_after = {name for files in after.files_for(after.partitions()).values() for name in files}
    assert not written & listed_after
    assert listed_after == listed_before - written
    assert slices_of(HudiTable.open(str(path))) == slices_of(HudiTable.open(str(path), use_metadata=False))


@requires_fixtures
def test_truncated_mdt_log_keeps_earlier_blocks(tmp_path: Path, fixture_root: Path) -> None:
    path = _copy_fixture(fixture_root, "sample_table__cow__v9_txns_simple_meta", tmp_path)
    expected = MetadataTable.open(str(path))
    expected_files = expected.files_for(expected.partitions())
    latest = expected.reader.file_slices("files")[0]
    log_path = path / ".hoodie" / "metadata" / latest.log_files[-1]
    original = log_path.read_bytes()
    log_path.write_bytes(original + original[: len(original) // 3])
    mdt = MetadataTable.open(str(path))
    assert mdt.files_for(mdt.partitions()) == expected_files
    assert len(mdt.problems) == 1
    assert mdt.problems[0].offset == len(original)
    assert log_path.name in str(mdt.problems[0])


@requires_fixtures
def test_unavailable_reasons(fixture_root: Path) -> None:
    with pytest.raises(MetadataTableUnavailable, match="does not list 'files'"):
        MetadataTable.open(table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa"))
    mdt = MetadataTable.open(table_path(fixture_root, "sample_table__mor__avro__v9_nonpartitioned_rollback"))
    with pytest.raises(MetadataTableUnavailable, match="no built 'partition_stats'"):
        mdt.partition_stats(["amount"])
    with pytest.raises(MetadataTableUnavailable):
        HudiTable.open(table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa"), use_metadata=True).file_slices()




@requires_fixtures
def test_validate_mode(tmp_path: Path, fixture_root: Path) -> None:
    from metadata.mdt.validate import validate_metadata

    for stem in MDT_FIXTURES:
        report = validate_metadata(table_path(fixture_root, stem))
        assert report.ok, (stem, report.differences())
        assert report.stats_files_checked > 0, stem  # Hudi's column_stats equal the footers
    path = _copy_fixture(fixture_root, "sample_table__cow__v9_txns_simple_meta", tmp_path)
    victim = next((path / "region=eu").glob("*.parquet"))
    victim.unlink()
    stray = path / "region=us" / "11111111-2222-3333-4444-555555555555-0_0-1-1_20260307162434124.parquet"
    stray.write_bytes(b"PAR1")
    report = validate_metadata(str(path))
    assert not report.ok
    assert report.files_only_in_metadata == {"region=eu": [victim.name]}
    assert report.files_only_in_storage == {"region=us": [stray.name]}
    assert any(victim.name in line for line in report.differences())


def test_unsupported_codec_is_named() -> None:
    from metadata import HudiFormatError
    from metadata.mdt.hfile_format import TRAILER_SIZE, decode_varint

    data = bytearray(write_hfile(_stats_cells(10), METADATA_RECORD_SCHEMA_JSON))
    start = len(data) - TRAILER_SIZE
    trailer = HFileReader.from_bytes(bytes(data)).trailer
    trailer.compression_codec = 3  # SNAPPY
    data[start:] = trailer.encode()
    with pytest.raises(HudiFormatError, match="x.hfile: HFile compression codec SNAPPY is not supported"):
        HFileReader.from_bytes(bytes(data), "x.hfile")
    assert decode_varint(bytes(data), start + 8)[0] > 0
