"""Each partition writer on its own: its build and sync records for real
builder tables, decoded and checked against values read independently from
the data files (pyarrow on the Parquet files, their footers, their keys)."""

from __future__ import annotations

import ast
import random
import string
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from expressions.index_expressions import SparkIndexExpressions, expression_index_of
from metadata.mdt.bloom_filters import footer_filter
from metadata.mdt.file_groups import MdtPartition, SecondaryIndexPartition, file_group_index, joined_key_index, suffix_hash
from metadata.mdt.file_stats import columns_to_index
from metadata.mdt.indexes import file_group_of
from metadata.mdt.keys import bloom_filter_key, column_index_id, column_stats_key, file_index_id, partition_index_id, partition_stats_key
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import record_schema_json
from metadata.mdt.records import ALL_PARTITIONS_KEY, MetadataRecord, decode_record
from metadata.mdt.secondary_index import secondary_index_key
from metadata.mdt.stats_engine import LocalStatsEngine
from metadata.mdt.write.change import TableChange
from metadata.mdt.write.context import WriteContext
from metadata.mdt.write.partitions import partition_writer
from metadata.mdt.write.snapshot import BuildSnapshot
from metadata.mdt.write.sync_inputs import SyncInputs
from metadata.mdt.write.table_inputs import table_schema
from metadata.mdt.write.transaction import MetadataTransaction
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.table.hudi_table import HudiTable
from metadata.table.stored_table import TableParts
from tests.test_index_writer import _builder, _rows

WRITE_PACKAGE = Path(__file__).resolve().parents[1] / "metadata" / "mdt" / "write"


def _context(path: Path, expressions: Any = None) -> WriteContext:
    data = TableParts.load(str(path))
    return WriteContext(MetadataTransaction(data, record_schema_json(data.config.version)), LocalStatsEngine(), expressions,
                        lambda message: None)


def _inputs(ctx: WriteContext, ts: str) -> SyncInputs:
    data = ctx.data
    change = TableChange.of(data, next(i for i in data.timeline.completed() if i.requested_time == ts))
    assert change is not None
    schema = table_schema(data)
    return SyncInputs(ctx, ts, change, columns_to_index(schema), schema)


def _decoded(ctx: WriteContext, records: dict[str, dict[str, Any] | bytes] | list[tuple[str, dict[str, Any]]]) -> dict[str, MetadataRecord]:
    """Records through the Avro encoder (unless a writer encoded them) and the read side's decoder, as a reader sees them."""
    pairs = records.items() if isinstance(records, dict) else records
    return {k: decode_record(k, r if isinstance(r, bytes) else encode_record(r, ctx.schema_json), ctx.schema_json, k) for k, r in pairs}


def _written_files(ctx: WriteContext, ts: str) -> list[tuple[str, str]]:
    """(partition, file name) of what one commit wrote, from its write stats."""
    instant = next(i for i in ctx.data.timeline.completed() if i.requested_time == ts)
    return [(s.partition_path, s.file_name) for s in ctx.data.timeline.commit_metadata(instant).write_stats()]


def _table(tmp_path: Path, version: int, partitions: list[Any]) -> tuple[Path, TableBuilder]:
    path = tmp_path / "t"
    builder = _builder(path, version, "COPY_ON_WRITE")
    builder.write(_rows(0, 7, "sf"))
    builder.write(_rows(10, 7, "nyc"))  # keys are unique across partitions, as a global index wants
    MetadataTableWriter(str(path)).build(partitions)
    return path, builder


@pytest.mark.parametrize("version", [6, 8])
def test_files_writer_lists_each_partitions_files_and_new_partitions(tmp_path: Path, version: int) -> None:
    path, builder = _table(tmp_path, version, [MdtPartition.FILES])
    ctx = _context(path)
    snapshot = BuildSnapshot.take(ctx.data, ctx.engine, None)
    built = _decoded(ctx, list(partition_writer(MdtPartition.FILES, ctx).build_records(snapshot, "00000000000000000")))
    on_disk = {p: {f.name: f.stat().st_size for f in (path / p).glob("*.parquet")} for p in ("city=sf", "city=nyc")}
    assert {k: {n: e.size for n, e in (r.files or {}).items()} for k, r in built.items() if k != ALL_PARTITIONS_KEY} == on_disk
    assert set(built[ALL_PARTITIONS_KEY].files or {}) == {"city=sf", "city=nyc"}

    ts = builder.write(_rows(40, 2, "la"))
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(MdtPartition.FILES, ctx).sync_records(_inputs(ctx, ts)))
    assert set(synced) == {"city=la", ALL_PARTITIONS_KEY}
    assert {n: e.size for n, e in (synced["city=la"].files or {}).items()} == {f.name: f.stat().st_size for f in (path / "city=la").glob("*.parquet")}
    assert {n: e.is_deleted for n, e in (synced[ALL_PARTITIONS_KEY].files or {}).items()} == {"city=la": False}


@pytest.mark.parametrize("version", [6, 8])
def test_column_stats_writer_records_each_new_files_ranges_and_tombstones_cleaned_ones(tmp_path: Path, version: int) -> None:
    path, builder = _table(tmp_path, version, [MdtPartition.FILES, MdtPartition.COLUMN_STATS])
    ts = builder.write(_rows(2, 3, "sf"))  # an upsert: sf's file group rewritten
    ctx = _context(path)
    inputs = _inputs(ctx, ts)
    synced = _decoded(ctx, partition_writer(MdtPartition.COLUMN_STATS, ctx).sync_records(inputs))
    written = _written_files(ctx, ts)
    assert written and len(synced) == len(written) * len(inputs.columns)
    for partition, name in written:
        rows = pq.read_table(path / partition / name)
        for column in ("fare", "id", "day"):
            stats = synced[column_stats_key(column, partition, name)].column_stats
            assert stats is not None and not stats.is_deleted
            bounds = pc.min_max(rows.column(column))
            assert (stats.min_value, stats.max_value, stats.value_count) == (bounds["min"].as_py(), bounds["max"].as_py(), rows.num_rows)
    assert inputs.files_indexed == len(written)

    clean = builder.clean()
    ctx = _context(path)
    removed = _decoded(ctx, partition_writer(MdtPartition.COLUMN_STATS, ctx).sync_records(_inputs(ctx, clean)))
    cleaned = {(p, n) for p, names in ctx.data.timeline.clean_metadata(
        next(i for i in ctx.data.timeline.completed() if i.requested_time == clean)).deleted_file_names().items() for n in names}
    assert cleaned and all(r.column_stats and r.column_stats.is_deleted for r in removed.values())
    assert {(p, r.column_stats.file_name) for p, _ in cleaned for r in removed.values() if r.column_stats} >= cleaned


@pytest.mark.parametrize("version", [6, 8])
def test_partition_stats_writer_rolls_the_touched_partitions_latest_slices_up(tmp_path: Path, version: int) -> None:
    path, builder = _table(tmp_path, version, [MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS])
    ts = builder.write([{**row, "fare": 1000.5} for row in _rows(3, 1, "sf")] + _rows(60, 2, "sf"))
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(MdtPartition.PARTITION_STATS, ctx).sync_records(_inputs(ctx, ts)))
    assert {r.column_stats.file_name for r in synced.values() if r.column_stats} == {"city=sf"}  # nyc untouched
    latest = [s for s in HudiTable.open(str(path), use_metadata=False).file_slices() if s.partition == "city=sf"]
    fares = pa.concat_tables([pq.read_table(path / s.base_file, columns=["fare"]) for s in latest if s.base_file]).column("fare")
    stats = synced[partition_stats_key("fare", "city=sf")].column_stats
    assert stats is not None and (stats.min_value, stats.max_value) == (pc.min(fares).as_py(), pc.max(fares).as_py()) == (0.5, 1000.5)


@pytest.mark.parametrize("version", [6, 8])
def test_record_index_writer_places_each_key_in_the_file_group_holding_it(tmp_path: Path, version: int) -> None:
    path, builder = _table(tmp_path, version, [MdtPartition.FILES])
    ctx = _context(path)
    writer = partition_writer(MdtPartition.RECORD_INDEX, ctx)
    snapshot = BuildSnapshot.take(ctx.data, ctx.engine, None)
    built = _decoded(ctx, list(writer.build_records(snapshot, "00000000000000000")))
    holding = {}
    for s in HudiTable.open(str(path), use_metadata=False).file_slices():
        for key in pq.read_table(path / s.base_file, columns=["_hoodie_record_key"]).column(0).to_pylist():
            holding[key] = (s.partition, s.file_id)
    assert len(holding) == 14 and {k: file_group_of(r.raw["recordIndexMetadata"], k) for k, r in built.items()} == holding
    assert writer.initial_file_groups(snapshot) == 10  # Hudi's minimum for a few keys

    ts = builder.write(_rows(30, 2, "nyc"))
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(MdtPartition.RECORD_INDEX, ctx).sync_records(_inputs(ctx, ts)))
    written = {name: p for p, name in _written_files(ctx, ts)}
    expected = {k: p for name, p in written.items() for k in pq.read_table(path / p / name, columns=["_hoodie_record_key"]).column(0).to_pylist()}
    assert {"k030", "k031"} <= set(synced) and {k: file_group_of(r.raw["recordIndexMetadata"], k)[0] for k, r in synced.items()} == expected


def test_bloom_filters_writer_carries_each_new_base_files_footer_filter(tmp_path: Path) -> None:
    path, builder = _table(tmp_path, 8, [MdtPartition.FILES, MdtPartition.BLOOM_FILTERS])
    ts = builder.write(_rows(12, 3, "nyc"))
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(MdtPartition.BLOOM_FILTERS, ctx).sync_records(_inputs(ctx, ts)))
    written = _written_files(ctx, ts)
    assert set(synced) == {bloom_filter_key(p, n) for p, n in written}
    for partition, name in written:
        meta = synced[bloom_filter_key(partition, name)].raw["BloomFilterMetadata"]
        footer = footer_filter(ctx.storage, f"{partition}/{name}")
        assert footer is not None and meta["bloomFilter"].decode() == footer.text and meta["timestamp"] == ts
        decoded = footer.decode(name)
        keys = pq.read_table(path / partition / name, columns=["_hoodie_record_key"]).column(0).to_pylist()
        assert decoded is not None and all(decoded.might_contain(k) for k in keys)


def test_secondary_index_writer_writes_gone_pairs_deleted_and_new_ones_live(tmp_path: Path) -> None:
    city = SecondaryIndexPartition("secondary_index_city", "city")
    path, builder = _table(tmp_path, 8, [MdtPartition.FILES, MdtPartition.RECORD_INDEX, city])
    ts = builder.delete(["k001"])
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(city, ctx).sync_records(_inputs(ctx, ts)))
    deleted = {k: r.raw["SecondaryIndexMetadata"]["isDeleted"] for k, r in synced.items()}
    assert deleted == {secondary_index_key("sf", "k001"): True}  # sf's other keys are in the new slice too: unchanged

    ts = builder.write(_rows(50, 2, "nyc"))
    ctx = _context(path)
    synced = _decoded(ctx, partition_writer(city, ctx).sync_records(_inputs(ctx, ts)))
    assert {k: r.raw["SecondaryIndexMetadata"]["isDeleted"] for k, r in synced.items()} == {
        secondary_index_key("nyc", "k050"): False, secondary_index_key("nyc", "k051"): False}


def test_expression_index_writer_records_f_of_each_new_file_and_the_partition_roll_up(tmp_path: Path) -> None:
    day = expression_index_of("ts_day", "date_format(ts, 'yyyy-MM-dd')")
    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 7, "sf"))
    MetadataTableWriter(str(path), index_expressions=SparkIndexExpressions()).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, day])
    late = [{**row, "ts": datetime(2024, 3, 9, 23, tzinfo=timezone.utc)} for row in _rows(20, 2, "sf")]
    ts = builder.write(late)
    ctx = _context(path, SparkIndexExpressions())
    synced = _decoded(ctx, partition_writer(day, ctx).sync_records(_inputs(ctx, ts)))
    for partition, name in _written_files(ctx, ts):
        image = pc.strftime(pq.read_table(path / partition / name, columns=["ts"]).column("ts"), format="%Y-%m-%d")
        stats = synced[column_stats_key("ts", partition, name)].column_stats
        assert stats is not None and (stats.min_value, stats.max_value) == (pc.min(image).as_py(), pc.max(image).as_py())
    rolled = [r.column_stats for r in synced.values() if r.column_stats and r.column_stats.file_name == "city=sf"]
    assert len(rolled) == 1 and rolled[0].max_value == "2024-03-09"


def test_partition_writers_import_nothing_of_each_other() -> None:
    siblings = {p.stem for p in (WRITE_PACKAGE / "partitions").glob("*.py")} - {"__init__", "base"}
    for module in siblings:
        tree = ast.parse((WRITE_PACKAGE / "partitions" / f"{module}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {f"metadata.mdt.write.partitions.{other}" for other in siblings - {module}} & imported, module


def test_write_modules_and_classes_stay_small() -> None:
    """No module of the write side over 400 lines, no class over 300."""
    for source in WRITE_PACKAGE.rglob("*.py"):
        text = source.read_text()
        assert len(text.splitlines()) <= 400, source.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert (node.end_lineno or 0) - node.lineno + 1 <= 300, f"{source.name}: {node.name}"


def test_a_keys_file_group_from_its_shared_prefix_hash_is_javas() -> None:
    """column_stats cells are routed from the cached hash of the column and
    partition ids plus the file id's own: the same file group as the whole key's."""
    rng = random.Random(11)
    prefixes = ["", "é€-partition", "polygenelubricants", *(column_index_id(f"c{n}") + partition_index_id(f"p={n}") for n in range(20))]
    for _ in range(3000):
        prefix = rng.choice(prefixes)
        suffix = file_index_id(f"{rng.getrandbits(64):x}.parquet") if rng.random() < 0.8 else "".join(
            rng.choice(string.ascii_letters) for _ in range(rng.randrange(40)))
        count = rng.choice([1, 2, 7, 10, 64, 1000])
        expected = file_group_index(prefix + suffix, count)
        assert joined_key_index(prefix, suffix, count) == expected, (prefix, suffix, count)
        assert joined_key_index(prefix, suffix_hash(suffix), count) == expected, (prefix, suffix, count)
