"""Acceptance: the file-system view of every real Hudi table equals hudi-rs's."""

from __future__ import annotations

import hudi
import pytest

from metadata import HudiTable
from tests.conftest import fixture_ids, requires_fixtures

pytestmark = [requires_fixtures, pytest.mark.fixtures]


def hudi_rs_slices(path: str, as_of: str | None = None) -> list[tuple]:
    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    slices = table.get_file_slices(options) if options else table.get_file_slices()
    return sorted((s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in slices)


def our_slices(table: HudiTable, as_of: str | None = None) -> list[tuple]:
    return sorted((s.partition, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in table.file_slices(as_of=as_of))


@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_latest_slices_equal_hudi_rs(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table, use_metadata=False)
    expected = hudi_rs_slices(fixture_table)
    assert our_slices(table) == expected
    assert table.partitions() == sorted({p for p, *_ in expected})


def log_writers_per_hudi_rs(path: str) -> dict[str, str]:
    """Log file name -> instant that wrote it, from hudi-rs's commit metadata."""
    import json

    timeline = hudi.HudiTableBuilder.from_base_uri(path).build().get_timeline()
    writers = {}
    for instant in timeline.get_completed_deltacommits():
        meta = json.loads(timeline.get_instant_metadata_in_json(instant))
        for stats in meta.get("partitionToWriteStats", {}).values():
            for stat in stats:
                names = [stat.get("path") or ""] + list(stat.get("logFiles") or [])
                for name in (n.rsplit("/", 1)[-1] for n in names):
                    if name.startswith("."):
                        writers.setdefault(name, instant.timestamp)
    return writers


@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_slices_as_of_each_commit_equal_hudi_rs(fixture_table: str) -> None:
    """As of every commit, equal to hudi-rs, with one deliberate difference:
    hudi-rs lists log files written after the as-of instant and leaves them
    to the block reader's instant filter; this project does not list them
    (it knows the writer from the log name on v8+, from commit metadata on
    v6)."""
    table = HudiTable.open(fixture_table, use_metadata=False)
    writers = log_writers_per_hudi_rs(fixture_table)
    for instant in table.timeline.commits():
        as_of = instant.requested_time
        expected = [
            (p, f, base, tuple(n for n in logs if writers.get(n, as_of) <= as_of))
            for p, f, base, logs in hudi_rs_slices(fixture_table, as_of)
        ]
        assert our_slices(table, as_of) == expected, instant


@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_timeline_matches_hudi_rs(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table, use_metadata=False)
    rs = hudi.HudiTableBuilder.from_base_uri(fixture_table).build().get_timeline()
    rs_commits = sorted(i.timestamp for i in rs.get_completed_commits() + rs.get_completed_deltacommits() + rs.get_completed_replacecommits())
    assert [i.requested_time for i in table.timeline.commits()] == rs_commits
    if table.config.timeline_layout_version >= 2:
        assert all(i.completion_time for i in table.timeline.completed())


@pytest.mark.parametrize("fixture_table", ["sample_table__cow__v6_simplekeygen_nonhivestyle_overwritetable"], indirect=True)
def test_insert_overwrite_table_hides_replaced_groups(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table, use_metadata=False)
    replace = [i for i in table.timeline.commits() if i.action == "replacecommit"]
    assert len(replace) == 1
    meta = table.timeline.commit_metadata(replace[0])
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    replaced = meta.replaced_file_groups()
    assert replaced
    assert not {(s.partition, s.file_id) for s in table.file_slices()} & replaced
    before = table.file_slices(as_of=table.timeline.commits()[-2].requested_time)
    assert {(s.partition, s.file_id) for s in before} == replaced


@pytest.mark.parametrize("fixture_table", ["quickstart_trips_table__mor__avro__v8_trips_8i3u1d"], indirect=True)
def test_v8_logs_join_slices_by_completion_time(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table, use_metadata=False)
    by_partition = {s.partition: s for s in table.file_slices()}
    compaction = next(i for i in table.timeline.commits() if i.planned_action == "compaction")
    sao = by_partition["city=sao_paulo"]
    assert sao.base_instant == compaction.requested_time
    assert sao.log_file_names == [".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"]
    assert by_partition["city=chennai"].log_files == ()
    before = {s.partition: s for s in table.file_slices(as_of="20251220210128625")}
    assert len(before["city=chennai"].log_files) == 2


@pytest.mark.parametrize("fixture_table", ["sample_table__cow__v6_empty"], indirect=True)
def test_empty_table(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table)
    assert table.partitions() == []
    assert table.file_slices() == []
    assert table.timeline.completed() == []


@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_written_base_ids_by_partition_equal_the_commits_files(fixture_table: str) -> None:
    """The compact index views ask per partition holds each commit's base
    files (not its logs), partition by partition, in the commit's order."""
    table = HudiTable.open(fixture_table, use_metadata=False)
    timeline, extension = table.timeline, table.config.base_file_format.extension
    for instant in timeline.commits():
        if timeline.is_empty(instant):
            continue
        written = timeline.written_files(instant)
        for partition in {p for p, _, _ in written} | {"no-such-partition"}:
            expected = [fid for p, fid, path in written if p == partition and path.endswith(extension) and "/." not in f"/{path}"]
            assert timeline.written_base_ids_in(instant, partition, extension) == expected
