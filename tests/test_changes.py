"""Change feeds: every one-commit range equals an independent diff of hudi-rs
snapshots (per record: op, before image, after image), on every fixture
table and over random histories of every commit kind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listers.changes import CDC_SCHEMA, NOT_COMPARED, ChangeFeedError, _json, changes
from listers.incremental import range_key
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures

Record = tuple[str, str]


def _snapshot(path: str, as_of: str | None) -> dict[Record, list[dict[str, Any]]]:
    """hudi-rs's rows as of an instant, by record ({} before the first)."""
    if as_of is None:
        return {}
    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    found: dict[Record, list[dict[str, Any]]] = {}
    for batch in table.read(hudi.HudiReadOptions().with_as_of_timestamp(as_of)):
        for r in pa.Table.from_batches([batch]).to_pylist():
            found.setdefault((r["_hoodie_partition_path"], r["_hoodie_record_key"]), []).append(r)
    return found


def _comparable(row: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in json.loads(_json(row)).items() if k not in NOT_COMPARED}, sort_keys=True)


def _expected(old: dict[Record, list[dict[str, Any]]], new: dict[Record, list[dict[str, Any]]]) -> dict[Record, list[tuple[str, Any, Any]]]:
    """The diff of two whole snapshots: per record, the versions only before
    are deletes, only after inserts; as many as both have are updates."""
    out = {}
    for key in old.keys() | new.keys():
        gone = sorted(_comparable(r) for r in old.get(key, []))
        came = sorted(_comparable(r) for r in new.get(key, []))
        for text in list(gone):
            if text in came:
                gone.remove(text)
                came.remove(text)
        if gone or came:
            out[key] = sorted(("u" if n < min(len(gone), len(came)) else "d" if n < len(gone) else "i") for n in range(max(len(gone), len(came))))
    return out


def _derived(feed: pa.Table) -> dict[Record, list[tuple[str, Any, Any]]]:
    out: dict[Record, list[Any]] = {}
    for row in feed.to_pylist():
        before, after = (json.loads(row[k]) if row[k] else None for k in ("before", "after"))
        image = after or before
        out.setdefault((image["_hoodie_partition_path"], image["_hoodie_record_key"]), []).append(row["op"])
    return {k: sorted(v) for k, v in out.items()}


def _images(feed: pa.Table, old: dict[Record, list[dict[str, Any]]], new: dict[Record, list[dict[str, Any]]]) -> None:
    """Every before image is a version the earlier snapshot holds, every after image one the later holds, field by field."""
    for row in feed.to_pylist():
        for column, snapshot in (("before", old), ("after", new)):
            if row[column] is not None:
                image = json.loads(row[column])
                versions = [_comparable(r) for r in snapshot[(image["_hoodie_partition_path"], image["_hoodie_record_key"])]]
                assert json.dumps({k: v for k, v in image.items() if k not in NOT_COMPARED}, sort_keys=True) in versions


def check_every_commit(path: str, seen: set[str] | None = None) -> int:
    """Each one-commit range of the table (not in `seen`, which it extends)
    against hudi-rs; returns the commits checked."""
    table = HudiTable.open(path)
    done = sorted(table.timeline.completed(), key=lambda i: range_key(table, i))
    checked = 0
    seen = set() if seen is None else seen
    for n, instant in enumerate(done):
        if not instant.action.writes_data or instant.requested_time in seen:
            continue
        seen.add(instant.requested_time)
        previous = done[n - 1] if n else None
        feed = changes(table, range_key(table, previous) if previous else "0", range_key(table, instant))
        assert feed.schema == CDC_SCHEMA
        assert set(feed.column("ts_ms").to_pylist()) <= {instant.requested_time}
        old, new = _snapshot(path, previous.requested_time if previous else None), _snapshot(path, instant.requested_time)
        assert _derived(feed) == _expected(old, new), (path, instant)
        _images(feed, old, new)
        checked += 1
    return checked


@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_every_fixture_commit_equals_the_diff_of_hudi_rs_snapshots(fixture_table: str) -> None:
    check_every_commit(fixture_table)


SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])
CITIES = ("sf", "nyc")
keys = st.integers(0, 11)
steps = st.one_of(
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=5), st.integers(1, 9)),
    st.tuples(st.just("insert"), st.lists(keys, min_size=1, max_size=3), st.integers(1, 9)),
    st.tuples(st.just("delete"), st.lists(keys, min_size=1, max_size=2), st.just(0)),
    st.tuples(st.just("insert overwrite"), st.lists(keys, min_size=1, max_size=3), st.integers(1, 9)),
    st.tuples(st.just("failed write"), st.lists(keys, min_size=1, max_size=3), st.just(0)),
    st.tuples(st.just("compact"), st.just([]), st.just(0)),
    st.tuples(st.just("clean"), st.just([]), st.just(0)),
)


def _rows(ids: list[int], version: int) -> list[dict[str, Any]]:
    return [{"id": f"k{i:03d}", "city": CITIES[i % 2], "fare": float(i) + version / 10} for i in sorted(set(ids))]


def _history(path: Path, table_type: str, version: int, history: list[tuple[str, list[int], int]]) -> int:
    """Write the history, checking each new commit's feed as a consumer
    reading as it goes would (a clean removes the files older states need)."""
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=version, partition_fields=["city"], max_rows_per_file=3)
    builder.write(_rows(list(range(0, 12, 2)), 0))
    seen: set[str] = set()
    checked = check_every_commit(str(path), seen)
    for action, ids, value in history:
        if action == "upsert":
            builder.write(_rows(ids, value))
        elif action == "insert":
            builder.write(_rows(ids, value), operation="insert")
        elif action == "delete":
            builder.delete([f"k{i:03d}" for i in ids])
        elif action == "insert overwrite":
            builder.insert_overwrite(_rows(ids, value))
        elif action == "failed write":
            builder.rollback(builder.write(_rows(ids, 1), complete=False))
        elif action == "compact" and any(logs for _, logs in builder.expected_latest_files().values()):
            builder.run_compaction(builder.schedule_compaction())
        elif action == "clean":
            builder.clean()
        checked += check_every_commit(str(path), seen)
    return checked


@settings(max_examples=24, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]), st.sampled_from([6, 8]), st.lists(steps, min_size=1, max_size=6))
def test_derived_feed_equals_snapshot_diffs_over_random_histories(table_type: str, version: int,
                                                                  history: list[tuple[str, list[int], int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t"
        assert _history(path, table_type, version, history) >= 1


def test_a_range_of_commits_is_the_commits_in_order_and_an_empty_range_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"], max_rows_per_file=3)
    first = builder.write(_rows([0, 1, 2], 0))
    second = builder.write(_rows([1, 5], 3))
    builder.delete(["k000"])
    table = HudiTable.open(str(path))
    keys = {i.requested_time: range_key(table, i) for i in table.timeline.completed()}
    feed = changes(str(path), "0")
    assert feed.column("op").to_pylist() == ["i", "i", "i", "u", "i", "d"]  # by commit, then partition and key
    assert feed.column("ts_ms").to_pylist()[:3] == [first] * 3 and feed.column("ts_ms").to_pylist()[3:5] == [second] * 2
    update = feed.slice(3, 1).to_pylist()[0]
    assert json.loads(update["before"])["fare"] == 1.0 and json.loads(update["after"])["fare"] == 1.3
    assert update["before"] is not None and feed.to_pylist()[5]["after"] is None
    assert changes(str(path), keys[second], keys[second]).num_rows == 0  # (T, T] holds no commit
    assert changes(str(path), max(keys.values())).schema == CDC_SCHEMA  # nothing after the last commit: zero rows, the schema


def test_a_cleaned_state_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write(_rows([0, 1], 0))
    second = builder.write(_rows([0], 1))
    builder.write(_rows([0], 2))
    builder.clean()
    table = HudiTable.open(str(path))
    first_key = range_key(table, table.timeline.completed()[0])
    try:
        changes(table, first_key)
    except ChangeFeedError as exc:
        assert "need files a clean removed" in str(exc) and second in str(exc)
    else:
        raise AssertionError("the feed read a state whose files are gone")


def test_cli_changes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main

    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write(_rows([0, 1], 0))
    builder.write(_rows([1], 4))
    runner = CliRunner()
    shown = runner.invoke(main, ["changes", str(path), "--begin", "0", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)
    assert [r["op"] for r in rows] == ["i", "i", "u"] and json.loads(rows[2]["after"])["fare"] == 1.4
    out = tmp_path / "feed.parquet"
    written = runner.invoke(main, ["changes", str(path), "--begin", "0", "--format", "parquet", "--to", str(out)])
    assert written.exit_code == 0, written.output
    assert pq.read_table(out).column("op").to_pylist() == ["i", "i", "u"]
    human = runner.invoke(main, ["changes", str(path), "--begin", "0"])
    assert "u" in human.output and "k001" in human.output


def test_change_data_logs_are_not_rows_of_a_slice(tmp_path: Path) -> None:
    """A table written with hoodie.table.cdc.enabled keeps each commit's
    changes in `.cdc` (or, before Hudi 1.x, `-cdc`) log files beside the
    data: no view takes them for log files of the slice, as Hudi's does not."""
    from listers import plan

    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write(_rows([0, 1, 2], 0))
    builder.write(_rows([0], 5))
    before = {(s.partition, s.file_id): s.files for s in HudiTable.open(str(path), use_metadata=False).file_slices()}
    (partition, file_id), _ = next(iter(before.items()))
    instant = HudiTable.open(str(path)).timeline.completed()[-1].requested_time
    for suffix in (".cdc", "-cdc"):
        (path / partition / f".{file_id}_{instant}.log.1_0-1-1{suffix}").write_bytes(b"change data, not rows")
    table = HudiTable.open(str(path), use_metadata=False)
    assert {(s.partition, s.file_id): s.files for s in table.file_slices()} == before
    assert len(plan(str(path), "fare > 0", use_metadata=False).files) == len(before)
    assert changes(table, "0").num_rows == 4


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("mode", ["OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"])
def test_change_data_logs_are_read_in_every_logging_mode(tmp_path: Path, mode: str, version: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A table written with change-data logs: each commit's feed comes from
    its logs (images the mode leaves out filled from the slices before and
    after), and equals both the derived feed and the diff of hudi-rs snapshots."""
    import importlib

    from listers.changes import commit_changes, plan_changes

    feed_module = importlib.import_module("listers.changes")  # the package exports a function of the same name
    from metadata.formats.cdc import CdcMode

    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["city"], max_rows_per_file=3, cdc_mode=CdcMode(mode))
    seen: set[str] = set()
    builder.write(_rows(list(range(8)), 0))
    check_every_commit(str(path), seen)
    for step in (lambda: builder.write(_rows([1, 2, 9], 4)), lambda: builder.delete(["k003", "k006"]),
                 lambda: builder.write(_rows([0, 5, 7], 6)), lambda: builder.insert_overwrite(_rows([2, 4], 8))):
        step()
        assert check_every_commit(str(path), seen) == 1  # from the logs: equal to hudi-rs's snapshot diff
    table = HudiTable.open(str(path))
    planned = plan_changes(table, "0")
    assert sum(1 for c in planned if c.cdc_logs) >= 3  # the upserts and the delete rewrote file groups and logged them
    read: list[tuple[str, str]] = []
    real = feed_module.rows_of_slices
    monkeypatch.setattr(feed_module, "rows_of_slices", lambda t, slices, *a: (read.extend((s.partition, s.file_id) for s in slices),
                                                                                real(t, slices, *a))[1])
    for change in planned:
        logged = {(p, f) for p, f, _ in change.cdc_logs}
        read.clear()
        with_logs = commit_changes(table, change)
        derived = commit_changes(table, change, use_cdc_logs=False)
        assert sorted(map(_comparable_change, with_logs.to_pylist())) == sorted(map(_comparable_change, derived.to_pylist()))
        if mode == "DATA_BEFORE_AFTER":
            read.clear()
            commit_changes(table, change)
            assert not logged & set(read)  # both images came from the logs: no logged file group was read


def _comparable_change(row: dict[str, Any]) -> tuple[str, str, str]:
    def image(text: str | None) -> str:
        return "" if text is None else json.dumps({k: v for k, v in json.loads(text).items() if k not in NOT_COMPARED}, sort_keys=True)

    return row["op"], image(row["before"]), image(row["after"])
