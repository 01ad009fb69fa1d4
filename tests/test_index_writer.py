# Over 400 lines: the metadata-table writer's cases, one subject, share their table builders and checks.
"""The metadata-table writer: rebuilds of Hudi's own MDTs record for record,
sync after every kind of instant on builder tables, crash injection, the lock."""

from __future__ import annotations

import random
import shutil
import string
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from listers.planner import plan
from metadata import HudiTable, MetadataTable
from metadata.errors import IndexLocked
from metadata.formats.log_format import BlockType, read_log_blocks
from metadata.mdt.file_groups import (
    PARTITION_ORDER,
    MdtPartition,
    file_group_index,
    file_group_indexes,
    java_string_hash,
    record_index_file_groups,
)
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.indexes import file_group_of
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.stats_engine import LocalStatsEngine
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.cell_spill import CellSpill
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.mdt.write.writer_lock import LOCK_PATH, WriterLock
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage
from metadata.table.config import METADATA_PARTITIONS_INFLIGHT_KEY, METADATA_PARTITIONS_KEY, TableConfig, update_table_config
from tests.conftest import requires_fixtures
from tests.test_metadata_table import MDT_FIXTURES

SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64()), ("day", pa.date32()),
                    ("amount", pa.decimal128(10, 2)), ("ts", pa.timestamp("us", tz="UTC"))])


def _live(root: str) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    mdt = MetadataTable.open(root)
    try:
        files = {p: mdt.files(p) for p in mdt.partitions()}
        stats = {k: r.column_stats for k, r in mdt.reader.read("column_stats", KeyQuery(prefixes=[""])).items()
                 if r.column_stats and not r.column_stats.is_deleted}
    finally:
        mdt.close()
    return files, stats


def _record_locations(root: str) -> dict[str, tuple[str, str]]:
    """Record key -> (partition, file id) as the metadata table's record_index holds it."""
    mdt = MetadataTable.open(root)
    try:
        records = mdt.reader.read("record_index", KeyQuery(prefixes=[""]))
        return {k: file_group_of(r.raw["recordIndexMetadata"], k) for k, r in records.items()}
    finally:
        mdt.close()


def _rs_slices(root: str) -> list[tuple]:
    table = hudi.HudiTableBuilder.from_base_uri(root).with_hudi_option("hoodie.metadata.enable", "true").build()
    return sorted((s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in table.get_file_slices())


def test_record_index_file_groups_follow_hudis_estimate() -> None:
    # ceil(records * 48 bytes * growth 2 / 1 GiB), between 10 and 10,000
    assert [record_index_file_groups(n) for n in (0, 1_000_000, 200_000_000, 10**12)] == [10, 10, 18, 10_000]


def test_file_group_of_a_key_is_javas() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_string_hash("polygenelubricants") == -(2**31)  # the one string whose hash is Integer.MIN_VALUE
    assert file_group_index("polygenelubricants", 2) == 0
    # Java: Math.abs(Math.abs(MIN_VALUE) % 10) = Math.abs(-8) = 8 (a truncated remainder, not Python's 2)
    assert [file_group_index("polygenelubricants", n) for n in (7, 10)] == [2, 8]
    assert java_string_hash("é€") == (0xE9 * 31 + 0x20AC)  # UTF-16 code units, not bytes
    rng = random.Random(5)  # the vectorised form (lookups of many keys) agrees with the scalar one
    keys = ["", "polygenelubricants", "é€x", "k\U0001f600", *("".join(rng.choice(string.printable) for _ in range(rng.randrange(30)))
                                                                 for _ in range(5000))]
    for count in (1, 2, 7, 10, 64):
        assert file_group_indexes(keys, count) == [file_group_index(k, count) for k in keys]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_rebuild_equals_hudis_records(fixture_table: str, tmp_path: Path) -> None:
    copy = tmp_path / "table"
    shutil.copytree(fixture_table, copy)
    before_files, before_stats = _live(fixture_table)
    before_locations = _record_locations(fixture_table)
    assert before_locations  # every MDT fixture carries Hudi's record index
    shutil.rmtree(copy / ".hoodie" / "metadata")
    update_table_config(Storage.open(str(copy)), {METADATA_PARTITIONS_KEY: None, METADATA_PARTITIONS_INFLIGHT_KEY: None})
    assert HudiTable.open(str(copy)).metadata_table is None
    report = MetadataTableWriter(str(copy)).build(PARTITION_ORDER)
    assert report.partitions == ["files", "column_stats", "partition_stats", "record_index", "bloom_filters"]
    after_files, after_stats = _live(str(copy))
    assert after_files == before_files
    assert set(after_stats) == set(before_stats)
    assert after_stats == before_stats  # same typed values, counts and sizes
    assert _record_locations(str(copy)) == before_locations  # every key in the file group Hudi put it in
    assert _rs_slices(str(copy)) == _rs_slices(fixture_table)
    validated = validate_metadata(str(copy))
    assert validated.ok, validated.differences()
    assert validated.bloom_files_checked == validated.stats_files_checked > 0  # every base file's record is its footer's filter
    config = TableConfig.load(Storage.open(str(copy)))
    assert set(config.metadata_partitions) == {"files", "column_stats", "partition_stats", "record_index", "bloom_filters"}
    assert METADATA_PARTITIONS_INFLIGHT_KEY not in config.raw


def _builder(path: Path, version: int, table_type: str) -> TableBuilder:
    return TableBuilder(str(path), SCHEMA, table_type=table_type, version=version, partition_fields=["city"],
                        max_rows_per_file=3)


def _rows(start: int, count: int, city: str) -> list[dict[str, Any]]:
    from datetime import date, datetime, timezone
    from decimal import Decimal

    return [{"id": f"k{i:03d}", "city": city, "fare": float(i) + 0.5, "day": date(2024, 1, 1 + i % 28),
             "amount": Decimal(f"{i}.25"), "ts": datetime(2024, 1, 1, i % 24, tzinfo=timezone.utc)} for i in range(start, start + count)]


def _check(path: Path) -> None:
    """The MDT agrees with storage and footers, and planning keeps every slice with a matching row."""
    report = validate_metadata(str(path))
    assert report.ok, report.differences
    table = HudiTable.open(str(path))
    assert table.metadata_table is not None
    base_files = sum(1 for s in table.file_slices() if s.base_file)
    assert report.stats_files_checked >= base_files  # every latest base file's footer was compared
    if "bloom_filters" in table.config.metadata_partitions:
        assert report.bloom_files_checked >= base_files
    for where in ("fare > 7", "fare < 2", "city = 'sf' AND fare >= 3.5", "day = DATE '2024-01-05'"):
        kept = {(s.partition, s.file_id) for s in plan(str(path), where).files}
        matching = _slices_with_matches(table, where)
        assert matching <= kept, where
    if "record_index" in table.config.metadata_partitions:
        _check_record_index(path, table)
    table.close()


def _check_record_index(path: Path, table: HudiTable) -> None:
    """Every live key is indexed in the file group that holds it, and a key
    lookup plans exactly the slices holding the keys."""
    holder = {}
    reader = hudi.HudiFileGroupReader(table.base_uri)
    for s in table.file_slices():
        rows = reader.read_file_slice_from_paths(s.base_file or "", list(s.log_files))
        for key in rows.column("_hoodie_record_key").to_pylist():
            assert key not in holder, f"{key} in two file groups"
            holder[key] = (s.partition, s.file_id)
    indexed = _record_locations(str(path))
    assert {k: indexed.get(k) for k in holder} == holder
    keys = sorted(holder)[::3]
    result = plan(str(path), f"id IN ({', '.join(repr(k) for k in keys)})", assume_unique_keys=True)
    assert any("record_index" in stage.name for stage in result.stages), result.explain()
    assert {(s.partition, s.file_id) for s in result.files} == {holder[k] for k in keys}


def _slices_with_matches(table: HudiTable, where: str) -> set[tuple[str, str]]:
    from expressions import parse_sql
    from expressions.eval_rows import evaluate_rows

    expression = parse_sql(where)
    found = set()
    reader = hudi.HudiFileGroupReader(table.base_uri)
    for s in table.file_slices():
        rows = reader.read_file_slice_from_paths(s.base_file or "", list(s.log_files))
        if rows.num_rows and any(evaluate_rows(expression, pa.Table.from_batches([rows])).to_pylist()):
            found.add((s.partition, s.file_id))
    return found


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_sync_after_every_instant(tmp_path: Path, version: int, table_type: str) -> None:
    path = tmp_path / "t"
    builder = _builder(path, version, table_type)
    builder.write(_rows(0, 7, "sf"))
    builder.write(_rows(7, 5, "nyc"))
    report = MetadataTableWriter(str(path), compact_after=3).build(PARTITION_ORDER)
    assert report.files_indexed > 0
    _check(path)
    steps = [
        lambda: builder.write(_rows(2, 3, "sf")),  # updates: new base versions or log files
        lambda: builder.write(_rows(20, 2, "la")),  # a new partition
        lambda: builder.delete(["k008"]),
        builder.clean,
        lambda: builder.rollback(builder.write(_rows(30, 2, "sf"), complete=False)),
        lambda: builder.insert_overwrite(_rows(40, 2, "nyc")),  # replacecommit
        builder.clean,
        lambda: builder.write(_rows(0, 2, "sf")),
        lambda: builder.write(_rows(3, 2, "sf")),
        lambda: builder.write(_rows(5, 2, "sf")),
    ]
    if table_type == "MERGE_ON_READ":
        pending: list[str] = []
        steps.append(lambda: pending.append(builder.schedule_compaction()))  # pending: sync and planning cope
        steps.append(lambda: builder.write(_rows(1, 2, "sf")))
        steps.append(lambda: builder.run_compaction(pending[0]))
    for n, step in enumerate(steps):
        completed_before = len(HudiTable.open(str(path), use_metadata=False).timeline.completed())
        step()
        synced = MetadataTableWriter(str(path), compact_after=3).sync()
        completed_now = len(HudiTable.open(str(path), use_metadata=False).timeline.completed())
        assert len(synced.instants) + sum("nothing for" in note for note in synced.notes) == completed_now - completed_before, n
        _check(path)
    assert MetadataTableWriter(str(path)).sync().instants == []  # nothing left: a no-op


def test_sync_rolls_partitions_up_a_run_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """partition_stats of a sync read in runs of partitions (one per run
    here), so that a commit touching every partition of a large table is
    rolled up within a run's memory: the same records as one read."""
    from metadata.mdt.write import rollup

    monkeypatch.setattr(rollup, "PARTITION_STATS_PER_RUN", 1)
    test_sync_after_every_instant(tmp_path, 8, "MERGE_ON_READ")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_partitions_through_the_mdt_read_one_record(tmp_path: Path, table_type: str) -> None:
    """partitions() is the __all_partitions__ record, with groups built only
    where a replacecommit could have emptied a partition; it equals storage's
    answer after replaces, partition deletes and rollbacks."""
    path = tmp_path / "t"
    builder = _builder(path, 8, table_type)
    for city in ("sf", "nyc", "la"):
        builder.write(_rows(0, 4, city))
    MetadataTableWriter(str(path)).build(partitions=[MdtPartition.FILES])

    def check(expected: list[str], built: set[str] | None) -> None:
        via_mdt = HudiTable.open(str(path))
        assert via_mdt.metadata_table is not None
        assert via_mdt.partitions() == expected
        if built is not None:
            assert set(via_mdt.view()._groups_cache) == built  # no other partition's groups were built
        assert HudiTable.open(str(path), use_metadata=False).partitions() == expected

    check(["city=la", "city=nyc", "city=sf"], set())
    builder.delete_partitions(["city=nyc"])
    MetadataTableWriter(str(path)).sync()
    check(["city=la", "city=sf"], {"city=nyc"})
    builder.rollback(builder.write(_rows(10, 2, "sea"), complete=False))
    MetadataTableWriter(str(path)).sync()
    check(["city=la", "city=sf"], {"city=nyc"})
    builder.insert_overwrite(_rows(20, 2, "sf"), table_wide=True)  # la's groups replaced, sf rewritten
    MetadataTableWriter(str(path)).sync()
    check(["city=sf"], {"city=la", "city=nyc", "city=sf"})
    builder.clean()
    MetadataTableWriter(str(path)).sync()
    check(["city=sf"], None)


def test_compaction_folds_logs_into_a_base_hfile(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 4, "sf"))
    MetadataTableWriter(str(path)).build()
    for i in range(3):
        builder.write(_rows(i, 2, "sf"))
        MetadataTableWriter(str(path), compact_after=100).sync()
    before = _live(str(path))
    report = MetadataTableWriter(str(path)).compact(force=True)
    assert set(report.compacted) == {"files", "column_stats", "partition_stats"}
    assert _live(str(path)) == before
    mdt = MetadataTable.open(str(path))
    slices = mdt.reader.file_slices("files")
    assert [s.log_files for s in slices] == [()]
    mdt.close()
    builder.write(_rows(10, 2, "sf"))  # logs after the compaction land in the new slice
    MetadataTableWriter(str(path)).sync()
    _check(path)


def test_build_leaves_existing_partitions_and_rebuild_replaces(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 4, "sf"))
    MetadataTableWriter(str(path)).build(partitions=[MdtPartition.FILES])
    assert TableConfig.load(Storage.open(str(path))).metadata_partitions == ("files",)
    builder.write(_rows(4, 4, "nyc"))
    report = MetadataTableWriter(str(path)).build(columns=["fare", "city"])
    assert report.partitions == ["column_stats", "partition_stats"]
    assert report.instants  # the existing partition was synced first
    assert any("already built" in n for n in report.notes)
    _, stats = _live(str(path))
    assert {s.column_name for s in stats.values()} == {"fare", "city"}
    MetadataTableWriter(str(path)).build(rebuild=True)
    _, stats = _live(str(path))
    assert {s.column_name for s in stats.values()} >= {"fare", "city", "day", "amount", "ts", "_hoodie_record_key"}
    _check(path)


def test_build_with_a_tiny_memory_budget_spills_and_writes_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "MERGE_ON_READ")
    builder.write(_rows(0, 12, "sf"))
    builder.write(_rows(12, 9, "nyc"))
    builder.write(_rows(2, 4, "sf"))  # log files
    MetadataTableWriter(str(path)).build()
    in_memory = _live(str(path))
    spills: list[int] = []
    original = CellSpill._spill

    def counting(self: CellSpill) -> None:
        spills.append(len(self._buffer))
        original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CellSpill, "_spill", counting)
        MetadataTableWriter(str(path), memory_budget=1, batch_files=1).build(rebuild=True)
    assert len(spills) > 100  # every cell went through a run file
    assert _live(str(path)) == in_memory
    _check(path)


def test_cell_spill_merges_runs_in_row_order() -> None:
    spill = CellSpill(budget_bytes=300)
    rows = [f"key-{(i * 7919) % 1000:04d}".encode() for i in range(1000)]
    for row in rows:
        spill.add(row, row[::-1])
    assert spill.spilled_runs > 10
    assert list(spill.sorted_cells()) == sorted((row, row[::-1]) for row in rows)
    twice = CellSpill(budget_bytes=100)
    for row in (b"a", b"b", b"a"):
        twice.add(row, b"")
    with pytest.raises(ValueError, match="written twice"):
        list(twice.sorted_cells())


def test_drop_updates_config_before_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 4, "sf"))
    MetadataTableWriter(str(path)).build()
    seen: list[tuple[str, tuple[str, ...], bool]] = []

    def watch(step: str) -> None:
        config = TableConfig.load(Storage.open(str(path)))
        seen.append((step, config.metadata_partitions, (path / ".hoodie/metadata/column_stats").exists()))

    MetadataTableWriter(str(path), fault=watch).drop([MdtPartition.COLUMN_STATS])
    assert seen == [("drop: after config update", ("files", "partition_stats"), True)]
    assert not (path / ".hoodie/metadata/column_stats").exists()
    assert HudiTable.open(str(path)).metadata_table is not None
    MetadataTableWriter(str(path)).drop([MdtPartition.FILES])
    assert not (path / ".hoodie/metadata").exists()
    assert HudiTable.open(str(path)).metadata_table is None


@dataclass
class ShiftedStatsEngine:
    """Stats that lie: one column's bounds moved from what the footers say."""

    column: str = "fare"
    min_shift: float = 0
    max_shift: float = 1

    batch_files: int = 2000
    batches_at_once: int = 1

    def map_ranges(self, base_uri: str, files: Any, columns: Any, schema: Any, completed: frozenset[str], storage_options: Any,
                   then: Any) -> list[Any]:
        def shifted(relative: str, found: list[ColumnRange]) -> Any:
            return then(relative, [replace(r, min_value=r.min_value + self.min_shift, max_value=r.max_value + self.max_shift)
                                   if r.column == self.column and r.min_value is not None and r.max_value is not None else r
                                   for r in found])

        return LocalStatsEngine().map_ranges(base_uri, files, columns, schema, completed, storage_options, shifted)


def test_validate_reports_column_stats_that_differ_from_footers(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(3, 3, "sf"))  # one base file, fares 3.5 to 5.5
    MetadataTableWriter(str(path), engine=ShiftedStatsEngine()).build()
    report = validate_metadata(str(path))
    assert not report.ok
    base = next(s for s in HudiTable.open(str(path), use_metadata=False).file_slices() if s.base_file)
    assert report.stats_differences == [f"{base.base_file}: 'fare' max is 6.5 in column_stats, 5.5 in the footer"]
    assert report.files_only_in_storage == {}
    assert report.slice_differences == []
    assert validate_metadata(str(path), check_stats=False).ok
    MetadataTableWriter(str(path)).build(rebuild=True)
    assert validate_metadata(str(path)).ok


class Crash(Exception):
    pass


def crash_each_step(template: Path, into: Path, operation: str, index: Any, writer: Any, check: Any) -> int:
    """A build (or sync) of `index` on copies of `template`, crashed at step
    1, 2, ... until one completes: before the index is listed the table's
    files are exactly as they were; a rerun completes it, and `check(path,
    step)` holds. `writer(path, fault)` makes the writer. Returns the steps."""
    target = 1
    while True:
        path = into / f"{operation}{target}"
        shutil.copytree(template, path)
        before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
        steps, fault = _crash_at(target)
        try:
            writer(path, fault).build([index]) if operation == "build" else writer(path, fault).sync()
        except Crash:
            pass
        else:
            return target
        committed = index.value in HudiTable.open(str(path)).config.metadata_partitions
        if operation == "build" and not committed:
            assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before, steps[-1]  # nothing half-built visible
        writer(path, None).build([index]) if operation == "build" else writer(path, None).sync()
        check(path, steps[-1])
        target += 1


def _crash_at(target: int) -> tuple[list[str], Any]:
    steps: list[str] = []

    def fault(step: str) -> None:
        steps.append(step)
        if len(steps) == target:
            raise Crash(step)

    return steps, fault


def _visible_state(path: Path) -> tuple[Any, ...]:
    """What the metadata table holds (read even when behind the timeline,
    which readers then do not use)."""
    config = TableConfig.load(Storage.open(str(path)))
    if "files" not in config.metadata_partitions:
        return ("no metadata table",)
    mdt = MetadataTable.open(str(path))
    try:
        files = {p: sorted(mdt.files(p)) for p in mdt.partitions()}
        stats = sorted(k for k, r in mdt.reader.read("column_stats", KeyQuery(prefixes=[""])).items() if not r.column_stats.is_deleted) \
            if "column_stats" in config.metadata_partitions else []
        return (tuple(config.metadata_partitions), files, stats)
    finally:
        mdt.close()


def _is_behind(path: Path) -> bool:
    mdt = MetadataTable.open(str(path))
    try:
        return bool(mdt.reader.unsynced_data_instants())
    finally:
        mdt.close()


def _held_values(path: Path) -> dict[str, dict[str, Any]]:
    """Every live record's merged values, per metadata partition."""
    mdt = MetadataTable.open(str(path))
    try:
        return {p: {k: r.files if r.files is not None else r.column_stats or r.raw.get("recordIndexMetadata")
                    for k, r in mdt.reader.read(p, KeyQuery(prefixes=[""])).items()}
                for p in ("files", "column_stats", "partition_stats", "record_index")}
    finally:
        mdt.close()


def _orphan_logs(path: Path) -> list[str]:
    """MDT log files holding a block of an instant the MDT never completed
    again under that name: what a crashed writer left behind."""
    mdt = HudiTable.open(str(path / ".hoodie/metadata"), use_metadata=False)
    committed = {p for i in mdt.timeline.commits() for _, _, p in mdt.timeline.written_files(i)}
    orphans = []
    for log_file in sorted((path / ".hoodie/metadata").glob("*/.*.log.*")):
        relative = f"{log_file.parent.name}/{log_file.name}"
        blocks = read_log_blocks(log_file.read_bytes(), relative).blocks
        initialising = all(b.block_type is BlockType.DELETE for b in blocks)
        if not initialising and relative not in committed:
            orphans.append(relative)
    return orphans


def _run(writer: MetadataTableWriter, operation: str) -> None:
    if operation == "build":
        writer.build(PARTITION_ORDER)
    elif operation == "sync":
        writer.sync()
    else:
        writer.compact(force=True)


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("operation", ["build", "sync", "compact"])
def test_crash_at_every_step(tmp_path: Path, operation: str, version: int) -> None:
    template = tmp_path / "template"
    builder = _builder(template, version, "MERGE_ON_READ")
    builder.write(_rows(0, 6, "sf"))
    if operation != "build":
        MetadataTableWriter(str(template)).build(PARTITION_ORDER)
        builder.write(_rows(3, 6, "sf"))
        builder.write(_rows(10, 2, "la"))
    if operation == "compact":
        MetadataTableWriter(str(template)).sync()
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    _run(MetadataTableWriter(str(reference)), operation)
    expected = _held_values(reference)
    target = 1
    while True:
        path = tmp_path / f"crash{target}"
        shutil.copytree(template, path)
        old = _visible_state(path)
        steps, fault = _crash_at(target)
        writer = MetadataTableWriter(str(path), fault=fault)
        try:
            _run(writer, operation)
        except Crash:
            pass
        else:
            assert target > 3, steps
            break
        (path / LOCK_PATH).unlink(missing_ok=True)  # the crashed process would not remove it
        crashed = _visible_state(path)
        behind = crashed[0] != "no metadata table" and _is_behind(path)
        assert (HudiTable.open(str(path)).metadata_table is None) == (behind or crashed[0] == "no metadata table"), steps[-1]
        _run(MetadataTableWriter(str(path)), operation)
        new = _visible_state(path)
        if operation == "compact":
            assert crashed == old == new, steps[-1]
            assert not [i for i in HudiTable.open(str(path / ".hoodie/metadata")).timeline.instants if not i.is_completed]
        elif operation == "build":
            assert crashed in (old, new), steps[-1]
        else:  # sync completes instant by instant; each visible state is a prefix of the history
            assert crashed[0] == new[0]
            assert all(set(files) <= set(new[1].get(p, [])) for p, files in crashed[1].items()), steps[-1]
        assert _held_values(path) == expected, steps[-1]  # the redone work counts once
        assert _orphan_logs(path) == [], steps[-1]  # Hudi would read a leftover log's blocks again
        report = validate_metadata(str(path))
        assert report.ok, (steps[-1], report.differences)
        assert _rs_slices(str(path)) == sorted(
            (s.partition, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in HudiTable.open(str(path), use_metadata=False).file_slices())
        target += 1


def test_second_writer_is_refused_and_a_dead_writers_lock_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import socket
    import subprocess
    import sys

    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 2, "sf"))
    with WriterLock(Storage.open(str(path))), pytest.raises(IndexLocked, match="another index writer holds this table"):
        MetadataTableWriter(str(path)).build()
    elsewhere = "999999999@another-host since 2026-01-01T00:00:00\n"
    (path / LOCK_PATH).write_text(elsewhere)  # another host's writer: its process cannot be checked from here
    with pytest.raises(IndexLocked, match="another index writer holds this table .999999999@another-host"):
        MetadataTableWriter(str(path)).build()
    killed = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    (path / LOCK_PATH).write_text(f"{killed.stdout.strip()}@{socket.gethostname()} since 2026-01-01T00:00:00\n")
    (path / (LOCK_PATH + ".takeover")).write_text(f"{killed.stdout.strip()}@{socket.gethostname()}\n")  # it died mid-takeover too
    with caplog.at_level("WARNING"):
        MetadataTableWriter(str(path)).build()
    assert f"took over the index lock of process {killed.stdout.strip()}, which is no longer running" in caplog.text
    assert not (path / LOCK_PATH).exists() and not (path / (LOCK_PATH + ".takeover")).exists()
    assert validate_metadata(str(path)).ok


def test_index_commands(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from engine_bridge.cli import main

    path = tmp_path / "t"
    builder = _builder(path, 8, "MERGE_ON_READ")
    builder.write(_rows(0, 6, "sf"))
    runner = CliRunner()
    built = runner.invoke(main, ["index", "build", str(path), "--columns", "fare,day", "--json"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["partitions"] == ["files", "column_stats", "partition_stats"]
    builder.write(_rows(2, 3, "sf"))
    synced = json.loads(runner.invoke(main, ["index", "sync", str(path), "--json"]).stdout)
    assert len(synced["instants"]) == 1
    _check(path)
    validated = runner.invoke(main, ["table", "validate", str(path), "--json"])
    assert validated.exit_code == 0, validated.output
    assert json.loads(validated.stdout)["stats_files_checked"] == 2  # two base files; the update went to logs
    again = runner.invoke(main, ["index", "build", str(path)])
    assert "already built, left alone: files, column_stats, partition_stats" in again.output
    wrong = runner.invoke(main, ["index", "build", str(path), "--rebuild", "--columns", "nope"])
    assert wrong.exit_code == 2
    assert "no column 'nope'" in wrong.output
    assert "Traceback" not in wrong.output
    dropped = runner.invoke(main, ["index", "drop", str(path), "--partitions", "files"])
    assert dropped.exit_code == 0, dropped.output
    assert HudiTable.open(str(path)).metadata_table is None


@pytest.mark.services
def test_spark_engine_gives_the_local_ranges(tmp_path: Path, spark: Any) -> None:
    from engine_bridge.spark.index_engine import SparkStatsEngine
    from metadata.mdt.stats_engine import LocalStatsEngine, engine_ranges

    path = tmp_path / "t"
    builder = _builder(path, 8, "MERGE_ON_READ")
    builder.write(_rows(0, 9, "sf"))
    builder.write(_rows(1, 4, "sf"))
    table = HudiTable.open(str(path), use_metadata=False)
    files = [(f, None) for s in table.file_slices() for f in s.files]
    assert any("/." in f for f, _ in files)  # log files too
    completed = frozenset(i.requested_time for i in table.timeline.completed())
    local = engine_ranges(LocalStatsEngine(), str(path), files, None, None, completed)
    remote = engine_ranges(SparkStatsEngine(spark, 2), str(path), files, None, None, completed)
    key = lambda r: (r.file_name, r.column)  # noqa: E731
    assert sorted(remote, key=key) == sorted(local, key=key)
    assert len(local) > 10
    # Through the writer, as `index build --engine spark` runs it: log files' stats included.
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    MetadataTableWriter(str(path)).build()
    MetadataTableWriter(str(copy), engine=SparkStatsEngine(spark, 2)).build()
    by_local, by_spark = _live(str(path))[1], _live(str(copy))[1]
    assert by_spark == by_local
    assert any(s.file_name.startswith(".") and s.value_count for s in by_spark.values())
    # A sync through Spark (`index sync --engine spark`): the new files' stats come from the executors.
    builder.write(_rows(2, 6, "la"))
    synced = tmp_path / "synced"
    shutil.copytree(path, synced)
    MetadataTableWriter(str(path)).sync()
    MetadataTableWriter(str(synced), engine=SparkStatsEngine(spark, 2)).sync()
    assert _live(str(synced))[1] == _live(str(path))[1]


def _spy_stats_reads(patch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """Every statistics read from the MDT: (partition, key prefixes)."""
    from metadata.mdt.metadata_table import MetadataTable

    reads: list[tuple[str, list[str]]] = []
    original = MetadataTable._read_stats

    def spy(self: MetadataTable, mdt_partition: str, query: KeyQuery, *args: Any) -> Any:
        reads.append((mdt_partition, list(query.prefixes or [])))
        return original(self, mdt_partition, query, *args)

    patch.setattr(MetadataTable, "_read_stats", spy)
    return reads


def test_second_plan_on_a_lister_reuses_the_decoded_stats(tmp_path: Path) -> None:
    from listers import DirectoryLister
    from metadata.mdt.keys import partition_index_id

    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    for city in ("sf", "nyc", "la"):
        builder.write(_rows(0, 9, city))
    MetadataTableWriter(str(path)).build()
    with pytest.MonkeyPatch.context() as patch, DirectoryLister.open(str(path)) as lister:
        reads = _spy_stats_reads(patch)
        first = plan(lister, "fare < 1")
        assert [kind for kind, _ in reads] == ["partition_stats", "column_stats"]  # the first plan read the stats
        reads.clear()
        second = plan(lister, "fare < 1")
        assert reads == []  # nothing read or decoded again
        assert second.files == first.files
        assert len(first.files) == 3  # fare 0.5 is in one file per city
        narrower = plan(lister, "city = 'sf' AND fare < 1")  # another partition set: only its records are read
        assert [s.partition for s in narrower.files] == ["city=sf"]
        sf = partition_index_id("city=sf")
        assert reads
        assert all(prefix[12:24] == sf for _, prefixes in reads for prefix in prefixes), reads
        mdt = lister.table.metadata_table
        assert mdt is not None
        assert mdt.stats_cache.hits >= 2


def test_stats_cache_evicts_least_recently_used_by_bytes() -> None:
    from metadata.mdt.stats_cache import StatsCache

    table = pa.table({"x": pa.array(range(1000), pa.int64())})  # 8,000 bytes
    cache = StatsCache(max_bytes=20_000)
    built: list[str] = []

    def build(name: str) -> Any:
        return lambda: built.append(name) or table

    for name in ("a", "b", "a", "c", "a", "b"):
        cache.get_or_build(name, build(name))
    assert built == ["a", "b", "c", "b"]  # c pushed out b (a was used more recently)
    assert cache.cached_bytes <= 20_000


def test_persistent_stats_cache_is_reused_and_never_stale(tmp_path: Path) -> None:
    from metadata.mdt.metadata_table import PER_PARTITION_SEEKS

    path, cache = tmp_path / "t", tmp_path / "cache"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    builder.write(_rows(0, 9, "sf"))
    MetadataTableWriter(str(path)).build(partitions=[MdtPartition.FILES, MdtPartition.COLUMN_STATS])

    with pytest.MonkeyPatch.context() as patch:
        reads = _spy_stats_reads(patch)
        patch.setattr("metadata.mdt.metadata_table.PER_PARTITION_SEEKS", 0)  # whole-column reads on a small table
        assert PER_PARTITION_SEEKS > 0

        def planned() -> tuple[list[str], int]:
            reads.clear()
            kept = [s.base_file_name or "" for s in plan(str(path), "fare < 1", cache_dir=str(cache)).files]
            return kept, len(reads)

        first, read = planned()
        assert (len(first), read) == (1, 1)  # one read of fare's stats
        assert len(list(cache.glob("stats-*.arrow"))) == 1
        assert planned() == (first, 0)  # a new lister (as a new process would) takes the cached file
        planned_before = {f.name for f in path.rglob("*.parquet")}
        builder.write(_rows(50, 3, "sf"))  # fares 50.5 to 52.5 in a new file
        MetadataTableWriter(str(path)).sync()
        assert planned() == (first, 1)  # the MDT changed: read again, never the stale table; the new file excluded
        assert len(list(cache.glob("stats-*.arrow"))) == 2
        # The cached listing and its match to the stats follow the MDT too: the new file is listed and kept.
        fresh = [s.base_file_name for s in plan(str(path), "fare > 50").files]
        written = {f.name for f in path.rglob("*.parquet")} - set(planned_before)
        assert written and written <= set(fresh)
        for _ in range(2):
            assert [s.base_file_name for s in plan(str(path), "fare > 50", cache_dir=str(cache)).files] == fresh
        assert len(list(cache.glob("files-*.arrow"))) == 2 and len(list(cache.glob("match-*.arrow"))) == 2
        newest = max(cache.glob("stats-*.arrow"), key=lambda p: p.stat().st_mtime_ns)
        newest.write_bytes(b"damaged")
        assert planned() == (first, 1)  # a damaged cache file is read around, not trusted
        assert planned() == (first, 0)  # and replaced


def test_a_build_over_a_type_change_leaves_that_column_unbounded_in_partition_stats(tmp_path: Path) -> None:
    """Files of one partition written before and after `v` went from int to
    string: their bounds do not compare, so the partition's roll-up of `v` has
    none (never one type's bounds alone), as a sync's roll-up has; `id` keeps its bounds."""
    path = str(tmp_path / "evolved")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("v", pa.int32()), ("p", pa.string())]), partition_fields=["p"],
                           version=8)
    builder.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([5, 7], pa.int32()), "p": ["a", "a"]}),
                  operation="insert")
    builder.evolve_column("v", pa.string())
    builder.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["x"], "p": ["a"]}), operation="insert")
    MetadataTableWriter(path).build([MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS])
    [row] = MetadataTable.open(path).partition_stats(["id", "v"]).to_pylist()
    assert (row["partition"], row["valueCount"], row["id_minValue"], row["id_maxValue"]) == ("p=a", 3, 1, 3)
    assert (row["v_minValue"], row["v_maxValue"], row["v_nullCount"]) == (None, None, 0)


def test_all_columns_indexes_every_column_past_the_first_32(tmp_path: Path) -> None:
    """`index build --all-columns`: statistics of all 40 columns (the default stops at 32, as Hudi's does); a plan on
    the 40th prunes by them; --columns with it is refused in one line."""
    from click.testing import CliRunner

    from engine_bridge.cli import main
    from metadata.sample_tables.builder import TableBuilder

    schema = pa.schema([("id", pa.int64()), *[(f"c{i:02d}", pa.int64()) for i in range(1, 40)]])
    path = str(tmp_path / "wide")
    builder = TableBuilder(path, schema, version=8, record_key="id")
    for batch in range(3):
        builder.write([{"id": batch * 10 + r, **{f"c{i:02d}": batch * 100 + i for i in range(1, 40)}} for r in range(10)], operation="insert")
    refused = CliRunner().invoke(main, ["index", "build", path, "--all-columns", "--columns", "c01"])
    assert refused.exit_code == 2 and "--all-columns and --columns: give one" in refused.output
    built = CliRunner().invoke(main, ["index", "build", path, "--partitions", "files,column_stats", "--all-columns"])
    assert built.exit_code == 0, built.output
    planned = plan(path, "c39 = 239")
    assert len(planned.files) == 1 < len(HudiTable.open(path).file_slices()), planned.explain()
    assert "columns with stats: c39" in planned.explain()
