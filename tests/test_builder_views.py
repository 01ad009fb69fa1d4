"""Acceptance: builder-made tables with each awkward case list exactly the
visible files, at the latest instant and as of every earlier instant."""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa
import pytest

from metadata import CleanedFilesError, HudiTable
from metadata.sample_tables.builder import TableBuilder
from metadata.table import fs_view
from metadata.table.fs_view import FileSystemView

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])
VERSIONS = [(6, "COPY_ON_WRITE"), (6, "MERGE_ON_READ"), (8, "COPY_ON_WRITE"), (8, "MERGE_ON_READ")]
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")


def rows(ids: range | list[int], city: str | None = None, fare: float = 1.0) -> list[dict]:
    cities = ["sf", "la", "ny"]
    return [{"id": i, "city": city or cities[i % 3], "fare": fare + i} for i in ids]


class Recorder:
    """Runs builder steps and remembers the expected view after each instant."""

    def __init__(self, builder: TableBuilder) -> None:
        self.builder = builder
        self.snapshots: dict[str, dict] = {}

    def step(self, action: Callable[[TableBuilder], str], completed: bool = True) -> str:
        ts = action(self.builder)
        if completed:
            self.snapshots[ts] = self.builder.expected_latest_files()
        return ts


def view_of(table: HudiTable, as_of: str | None = None) -> dict:
    return {
        (s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names))
        for s in table.file_slices(as_of=as_of)
    }


def assert_views(recorder: Recorder, path: str) -> None:
    table = HudiTable.open(path)
    latest = list(recorder.snapshots)[-1]
    assert view_of(table) == recorder.snapshots[latest]
    for ts, expected in recorder.snapshots.items():
        gone = [
            name for (partition, _), (base, logs) in expected.items()
            for name in ([base] if base else []) + list(logs)
            if not os.path.exists(os.path.join(path, partition, name))
        ]
        if gone:
            with pytest.raises(CleanedFilesError, match="deleted"):
                table.file_slices(as_of=ts)
        else:
            assert view_of(table, ts) == expected, f"as of {ts}"


def new_builder(tmp_path, version: int, table_type: str, **kwargs) -> tuple[Recorder, str]:
    path = str(tmp_path / f"t_{version}_{table_type}")
    builder = TableBuilder(path, SCHEMA, table_type=table_type, version=version, partition_fields=["city"], **kwargs)
    return Recorder(builder), path


@pytest.mark.parametrize("version,table_type", VERSIONS)
def test_failed_commit_left_inflight(tmp_path, version: int, table_type: str) -> None:
    rec, path = new_builder(tmp_path, version, table_type)
    rec.step(lambda b: b.write(rows(range(6))))
    failed = rec.step(lambda b: b.write(rows([0, 1, 100]), complete=False), completed=False)
    rec.step(lambda b: b.write(rows([2], fare=50.0)))
    assert_views(rec, path)
    table = HudiTable.open(path)
    listed = {f for s in table.file_slices() for f in s.files}
    assert not any(failed in f for f in listed), "a file of the failed instant is listed"
    assert any(failed in name for _, _, names in os.walk(path) for name in names), "the failed write left no file to hide"


@pytest.mark.parametrize("version,table_type", VERSIONS)
def test_insert_overwrite_and_delete_partition(tmp_path, version: int, table_type: str) -> None:
    rec, path = new_builder(tmp_path, version, table_type)
    rec.step(lambda b: b.write(rows(range(9))))
    rec.step(lambda b: b.write(rows([0, 3], fare=9.0)))
    rec.step(lambda b: b.insert_overwrite(rows([30, 33], city="sf")))
    rec.step(lambda b: b.delete_partitions(["city=la"]))
    assert_views(rec, path)
    table = HudiTable.open(path)
    assert table.partitions() == ["city=ny", "city=sf"]
    first = list(rec.snapshots)[0]
    assert table.partitions(as_of=first) == ["city=la", "city=ny", "city=sf"]


@pytest.mark.parametrize("version,table_type", VERSIONS)
def test_insert_overwrite_table(tmp_path, version: int, table_type: str) -> None:
    rec, path = new_builder(tmp_path, version, table_type)
    rec.step(lambda b: b.write(rows(range(9))))
    rec.step(lambda b: b.insert_overwrite(rows([40]), table_wide=True))
    assert_views(rec, path)
    assert HudiTable.open(path).partitions() == ["city=la"]


@pytest.mark.parametrize("version,table_type", VERSIONS)
def test_clean_removes_old_slices(tmp_path, version: int, table_type: str) -> None:
    rec, path = new_builder(tmp_path, version, table_type)
    rec.step(lambda b: b.write(rows(range(6))))
    rec.step(lambda b: b.write(rows([0, 1], fare=7.0)))
    if table_type == "MERGE_ON_READ":
        rec.step(lambda b: b.run_compaction(b.schedule_compaction()))
    rec.step(lambda b: b.write(rows([0], fare=8.0)))
    rec.step(lambda b: b.delete_partitions(["city=ny"]))
    rec.step(lambda b: b.clean())
    assert_views(rec, path)
    table = HudiTable.open(path)
    clean = table.timeline.completed()[-1]
    assert clean.action == "clean"
    meta = table.timeline.clean_metadata(clean)
    assert meta.deleted_partitions() == {"city=ny"}
    assert sum(len(v) for v in meta.deleted_file_names().values()) >= 3
    with pytest.raises(CleanedFilesError):
        table.file_slices(as_of=list(rec.snapshots)[0])


@pytest.mark.parametrize("version", [6, 8])
def test_pending_compaction(tmp_path, version: int) -> None:
    rec, path = new_builder(tmp_path, version, "MERGE_ON_READ")
    rec.step(lambda b: b.write(rows(range(6))))
    rec.step(lambda b: b.write(rows([0, 1], fare=5.0)))
    compaction = rec.builder.schedule_compaction()
    rec.builder.run_compaction(compaction, complete=False)
    rec.step(lambda b: b.write(rows([0], fare=6.0)))
    table = HudiTable.open(path)
    pending = table.timeline.get(compaction)
    assert pending is not None
    assert not pending.is_completed
    assert pending.is_compaction
    slices = table.file_slices()
    assert all(compaction not in (s.base_file or "") for s in slices), "pending compaction's base file is listed"
    sf = next(s for s in slices if s.partition == "city=sf")
    # The slice before the compaction serves, with the logs written before and after it.
    assert len(sf.log_files) == 2
    assert any(compaction in f for _, _, names in os.walk(path) for f in names)
    assert_views(rec, path)
    rec.builder.complete(compaction)
    after = {s.partition: s for s in HudiTable.open(path).file_slices()}
    assert after["city=sf"].base_instant == compaction
    assert len(after["city=sf"].log_files) == 1


@pytest.mark.parametrize("version,table_type", VERSIONS)
def test_rollback(tmp_path, version: int, table_type: str) -> None:
    rec, path = new_builder(tmp_path, version, table_type)
    rec.step(lambda b: b.write(rows(range(6))))
    failed = rec.step(lambda b: b.write(rows([0, 50]), complete=False), completed=False)
    rollback = rec.step(lambda b: b.rollback(failed))
    rec.step(lambda b: b.write(rows([1], fare=3.0)))
    assert_views(rec, path)
    table = HudiTable.open(path)
    assert table.timeline.get(failed) is None
    meta = table.timeline.rollback_metadata(table.timeline.require(rollback))
    assert meta.commits_rollback == (failed,)
    assert sum(len(v) for v in meta.deleted_files.values()) == 2


def test_non_partitioned_and_multi_field_partitions(tmp_path) -> None:
    flat = TableBuilder(str(tmp_path / "flat"), SCHEMA, version=8)
    flat.write(rows(range(4)))
    table = HudiTable.open(str(tmp_path / "flat"))
    assert table.partitions() == [""]
    assert [s.partition for s in table.file_slices()] == [""]

    schema = pa.schema([("id", pa.int64()), ("country", pa.string()), ("day", pa.string())])
    multi = TableBuilder(str(tmp_path / "multi"), schema, partition_fields=["country", "day"], hive_style=False)
    multi.write([{"id": 1, "country": "nl", "day": "2024-01-01"}, {"id": 2, "country": "br", "day": None}])
    table = HudiTable.open(str(tmp_path / "multi"))
    assert table.partitions() == ["br/__HIVE_DEFAULT_PARTITION__", "nl/2024-01-01"]


# The builder writes metadata tables for table version 8 only.
@pytest.mark.parametrize("version,table_type,metadata_table", [(v, t, False) for v, t in VERSIONS] + [(8, t, True) for t in TABLE_TYPES])
def test_base_only_partitions_skip_file_groups_and_agree(tmp_path, version: int, table_type: str, metadata_table: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Latest slices of partitions holding base files only are found without
    building file groups, as are those of some of their file groups (a
    plan's candidates); after every kind of step they equal the general
    path's (groups built first) and the builder's own expectation."""

    direct: list[int] = []
    direct_groups: list[int] = []
    original = FileSystemView._base_only_latest_slices
    original_of = FileSystemView._base_only_latest_slices_of

    def spy(self: FileSystemView, partitions: list[str]) -> dict:
        found = original(self, partitions)
        direct.append(len(found))
        return found

    def spy_of(self: FileSystemView, listed: dict, groups: dict | None = None) -> dict:
        found = original_of(self, listed, groups)
        if groups is not None:
            direct_groups.append(len(found))
        return found

    monkeypatch.setattr(FileSystemView, "_base_only_latest_slices", spy)
    monkeypatch.setattr(FileSystemView, "_base_only_latest_slices_of", spy_of)
    recorder, path = new_builder(tmp_path, version, table_type, max_rows_per_file=2, metadata_table=metadata_table)
    steps: list[Callable[[TableBuilder], str]] = [
        lambda b: b.write(rows(range(9))),
        lambda b: b.write(rows([0, 3, 4], fare=5.0)),  # new base versions (COW) or logs (MOR)
        lambda b: b.rollback(b.write(rows([1, 2]), complete=False)),
        lambda b: b.insert_overwrite(rows([30, 33], city="la")),
        lambda b: b.clean(),
        lambda b: b.write(rows(range(40, 44), city="sf")),
    ]
    for step in steps:
        recorder.step(step)
        table = HudiTable.open(path)
        fast = view_of(table)
        general_view = table.view()
        for partition in general_view.partitions():
            general_view.file_groups(partition)  # groups built first: the general path serves every partition
        general = {(s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names)) for s in general_view.latest_file_slices()}
        assert fast == general == recorder.builder.expected_latest_files()
        table.close()
        groups: dict[str, set[str]] = {}
        for n, (partition, file_id) in enumerate(sorted(general)):
            if n % 2 == 0:  # every other group, in a new view (nothing built before)
                groups.setdefault(partition, set()).add(file_id)
        chosen = HudiTable.open(path)
        some = {(s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names)) for s in chosen.view().latest_file_slices_of_groups(groups)}
        assert some == {k: v for k, v in general.items() if k[1] in groups.get(k[0], set())}
        chosen.close()
    if table_type == "COPY_ON_WRITE":
        assert sum(direct) > 0 and sum(direct_groups) > 0  # the direct paths served partitions


@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("kept", [0, 3, 1_000])
def test_groups_built_once_are_kept_for_the_next_plan_within_budget(tmp_path, monkeypatch, table_type: str, kept: int) -> None:
    """A warm view keeps the slices of groups a plan built: the next plan's groups are built only when new, and every
    answer equals the general path's, whether the budget (GROUP_SLICES_KEPT) holds all of them, some or none."""
    monkeypatch.setattr(fs_view, "GROUP_SLICES_KEPT", kept)
    recorder, path = new_builder(tmp_path, 8, table_type, max_rows_per_file=2)
    recorder.step(lambda b: b.write(rows(range(12))))
    recorder.step(lambda b: b.write(rows([0, 4, 5], fare=5.0)))
    recorder.step(lambda b: b.insert_overwrite(rows([30, 33], city="la")))
    expected = recorder.builder.expected_latest_files()
    every: dict[str, set[str]] = {}
    for partition, file_id in expected:
        every.setdefault(partition, set()).add(file_id)
    every[sorted(every)[0]].add("no-such-group")  # a group without a slice in this view: none, and kept as none
    half = {p: set(sorted(ids)[::2]) for p, ids in every.items()}
    built: list[int] = []
    original = FileSystemView._slices_of_groups

    def counted(self: FileSystemView, groups: dict, files=None) -> dict:
        built.append(sum(len(ids) for ids in groups.values()))
        return original(self, groups, files)

    monkeypatch.setattr(FileSystemView, "_slices_of_groups", counted)
    table = HudiTable.open(path)
    view = table.view()
    for asked in (half, every, half, every):
        answer = view.latest_file_slices_of_groups(asked)
        assert [(s.partition, s.file_id) for s in answer] == sorted((p, f) for p, ids in asked.items() for f in ids if (p, f) in expected)
        assert {(s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names)) for s in answer} == {
            k: v for k, v in expected.items() if k[1] in asked.get(k[0], set())}
    table.close()
    assert view._group_slices_kept <= kept
    total, first = sum(len(ids) for ids in every.values()), sum(len(ids) for ids in half.values())
    if kept >= total:  # all kept: the second plan built only the other half, the next two nothing
        assert built == [first, total - first]
    if kept == 0:
        assert built == [first, total, first, total]
