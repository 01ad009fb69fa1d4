"""DirectoryLister, planning and incremental pull against real tables."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hudi
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from expressions import evaluate_rows, parse_sql
from listers import DirectoryLister, IncrementalRangeError, incremental, incremental_from_hive_conf, plan
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import FIXTURE_ZIPS, requires_fixtures, table_path

MDT_FIXTURES = [
    "quickstart_trips_table__mor__avro__v8_trips_8i3u1d",
    "sample_table__cow__v9_txns_simple_meta",
    "sample_table__mor__avro__v9_txns_simple_meta",
    "sample_table__cow__v9_txns_nonpart_meta",
]


class CountingHandler(pafs.FileSystemHandler):
    """A local filesystem that records every listing and every opened file."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.listed: list[str] = []
        self.opened: Counter[str] = Counter()
        self.lock = threading.Lock()

    def get_type_name(self) -> str:
        return "counting"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths):  # type: ignore[no-untyped-def]
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):  # type: ignore[no-untyped-def]
        with self.lock:
            self.listed.append(selector.base_dir)
        return self.local.get_file_info(selector)

    def create_dir(self, path, recursive):  # type: ignore[no-untyped-def]
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path):  # type: ignore[no-untyped-def]
        self.local.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):  # type: ignore[no-untyped-def]
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):  # type: ignore[no-untyped-def]
        raise OSError("not allowed")

    def delete_file(self, path):  # type: ignore[no-untyped-def]
        self.local.delete_file(path)

    def move(self, src, dest):  # type: ignore[no-untyped-def]
        self.local.move(src, dest)

    def copy_file(self, src, dest):  # type: ignore[no-untyped-def]
        self.local.copy_file(src, dest)

    def _opened(self, path: str) -> None:
        with self.lock:
            self.opened[path] += 1

    def open_input_stream(self, path):  # type: ignore[no-untyped-def]
        self._opened(path)
        return self.local.open_input_stream(path)

    def open_input_file(self, path):  # type: ignore[no-untyped-def]
        self._opened(path)
        return self.local.open_input_file(path)

    def open_output_stream(self, path, metadata):  # type: ignore[no-untyped-def]
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path, metadata):  # type: ignore[no-untyped-def]
        return self.local.open_append_stream(path, metadata=metadata)


def rows_of(base: str, slice_) -> pa.Table:  # type: ignore[no-untyped-def]
    """The merged rows of one file slice, read by hudi-rs's file group reader."""
    reader = hudi.HudiFileGroupReader(base)
    batch = reader.read_file_slice_from_paths(slice_.base_file or "", list(slice_.log_files))
    return pa.Table.from_batches([batch])


# Planning ----------------------------------------------------------------------------------
PREDICATES = {
    "quickstart_trips_table__mor__avro__v8_trips_8i3u1d": ["city = 'chennai'", "fare > 40", "fare < 20 OR city = 'sao_paulo'", "rider = 'rider-Z'"],
    "sample_table__cow__v9_txns_simple_meta": ["amount > 1000", "region = 'eu' AND amount < 100", "txn_date = DATE '2024-01-16'", "currency <> 'USD'"],
    "sample_table__mor__avro__v9_txns_simple_meta": ["amount > 1000", "region IN ('us', 'apac') AND txn_type = 'refund'", "is_international = true"],
    "sample_table__cow__v9_txns_nonpart_meta": ["amount BETWEEN 100 AND 200", "merchant_name LIKE 'Am%'", "txn_id = 'TXN-015'"],
}


@pytest.mark.parametrize("fixture_table", MDT_FIXTURES, indirect=True)
def test_plan_keeps_every_file_with_a_match_and_uses_stats(fixture_table: str, request: pytest.FixtureRequest) -> None:
    stem = request.node.callspec.params["fixture_table"]
    all_slices = HudiTable.open(fixture_table).file_slices()
    pruned_somewhere = False
    for predicate in PREDICATES[stem]:
        expr = parse_sql(predicate, "spark")
        planned = {(s.partition, s.file_id) for s in plan(fixture_table, predicate, dialect="spark").files}
        for s in all_slices:
            rows = rows_of(fixture_table, s)
            if any(evaluate_rows(expr, rows).to_pylist()):
                assert (s.partition, s.file_id) in planned, (predicate, s)
        pruned_somewhere |= len(planned) < len(all_slices)
    assert pruned_somewhere, "no predicate pruned anything: statistics were not used"


@requires_fixtures
def test_plan_explains_each_stage(fixture_root: Path) -> None:
    path = table_path(fixture_root, "sample_table__cow__v9_txns_simple_meta")
    p = plan(path, "amount > 1000 AND region <> 'us'", dialect="trino")
    stages = {s.name: (s.kept, s.total) for s in p.stages}
    assert stages["partition values"] == (2, 3)
    assert stages["partition_stats"][0] < 2
    text = p.explain()
    assert "column_stats" in text
    assert "residual predicate" in text
    assert p.to_dict()["files"] == [s.to_dict() for s in p.files]
    no_stats = plan(table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa"), "region = 'eu' AND amount > 1", dialect="trino")
    assert any("no metadata table in use" in r for r in no_stats.not_used)
    assert "does not list 'files'" in no_stats.listing
    assert {s.partition for s in no_stats.files} == {"region=eu"}


@requires_fixtures
def test_no_storage_listing_of_data_partitions_with_mdt(fixture_root: Path) -> None:
    path = table_path(fixture_root, "sample_table__cow__v9_txns_simple_meta")
    handler = CountingHandler()
    fs = pafs.PyFileSystem(handler)
    lister = DirectoryLister.open(path, filesystem=fs)
    plan(lister, "amount > 10", dialect="spark")
    partitions = lister.list_partitions()
    data_listings = [d for d in handler.listed if "/.hoodie" not in d]
    assert partitions
    assert data_listings == []

    def work(i: int) -> int:
        part = partitions[i % len(partitions)]
        return len(lister.list_files(part)) + len(lister.list_files_batch(partitions)[part])

    with ThreadPoolExecutor(max_workers=32) as pool:
        counts = list(pool.map(work, range(200)))
    expected = {p: len(lister.list_files(p)) for p in partitions}
    assert counts == [2 * expected[partitions[i % len(partitions)]] for i in range(200)]
    mdt_props = [p for p in handler.opened if p.endswith(".hoodie/metadata/.hoodie/hoodie.properties")]
    assert len(mdt_props) == 1, handler.opened
    assert handler.opened[mdt_props[0]] == 1, handler.opened


def test_200_threads_200_partitions_one_lister(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    builder = TableBuilder(str(tmp_path / "wide"), schema, partition_fields=["p"], version=8)
    builder.write([{"id": i, "p": f"{i % 200:03d}"} for i in range(400)])
    handler = CountingHandler()
    lister = DirectoryLister.open(str(tmp_path / "wide"), use_metadata=False, filesystem=pafs.PyFileSystem(handler))
    partitions = lister.list_partitions()
    assert len(partitions) == 200
    with ThreadPoolExecutor(max_workers=200) as pool:
        results = list(pool.map(lambda p: [s.file_id for s in lister.list_files(p)], partitions))
    assert all(len(r) == 1 for r in results)
    per_folder = Counter(handler.listed)
    assert max(per_folder.values()) == 1, "a partition folder was listed more than once"


# Incremental ---------------------------------------------------------------------------------
def _rows_in_plan(base: str, inc) -> list[tuple]:  # type: ignore[no-untyped-def]
    found = []
    filter_expr = parse_sql(inc.row_filter, "spark")
    for s in inc.files:
        rows = rows_of(base, s)
        selected = rows.filter(evaluate_rows(filter_expr, rows))
        found += list(zip(selected.column("_hoodie_record_key").to_pylist(), selected.column("_hoodie_commit_time").to_pylist()))
    return sorted(found)


def _rows_from_hudi_rs(base: str, begin: str, end: str) -> list[tuple]:
    table = hudi.HudiTableBuilder.from_base_uri(base).build()
    options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin).with_end_timestamp(end)
    batches = table.read(options)
    rows = pa.Table.from_batches(batches) if batches else None
    if rows is None or rows.num_rows == 0:
        return []
    return sorted(zip(rows.column("_hoodie_record_key").to_pylist(), rows.column("_hoodie_commit_time").to_pylist()))


INCREMENTAL_FIXTURES = [z.stem for z in FIXTURE_ZIPS if "empty" not in z.stem] or ["no-fixtures"]


@pytest.mark.parametrize("fixture_table", INCREMENTAL_FIXTURES, indirect=True)
def test_incremental_equals_hudi_rs_for_every_pair(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table)
    commits = table.timeline.commits()
    if len(commits) < 2:
        pytest.skip("fewer than two commits")
    keys = ["00000000000000000"] + [(c.completion_time or c.requested_time) for c in commits]
    for begin, end in itertools.combinations(keys, 2):
        inc = incremental(table, begin, end)
        assert _rows_in_plan(fixture_table, inc) == _rows_from_hudi_rs(fixture_table, begin, end), (begin, end)


def test_incremental_touches_only_changed_partitions(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    builder = TableBuilder(str(tmp_path / "t"), schema, partition_fields=["p"], version=6)
    first = builder.write([{"id": i, "p": f"p{i % 5}"} for i in range(20)])
    second = builder.write([{"id": 1, "p": "p1"}, {"id": 100, "p": "p9"}])
    inc = incremental(str(tmp_path / "t"), first)
    assert [i.requested_time for i in inc.instants] == [second]
    assert inc.partitions == ("p=p1", "p=p9")
    assert inc.row_filter == f"_hoodie_commit_time > '{first}' AND _hoodie_commit_time <= '{second}'"
    assert incremental(str(tmp_path / "t"), "00000000000000000", max_commits=1).instants[0].requested_time == first
    conf = {"hoodie.t.consume.mode": "INCREMENTAL", "hoodie.t.consume.start.timestamp": first, "hoodie.t.consume.max.commits": "-1"}
    assert incremental_from_hive_conf(str(tmp_path / "t"), "t", conf).instants == inc.instants
    assert incremental_from_hive_conf(str(tmp_path / "t"), "t", {}) is None


def test_incremental_cleaned_file_falls_back_or_fails(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    builder = TableBuilder(str(tmp_path / "t"), schema, partition_fields=["p"], version=8)
    first = builder.write([{"id": 1, "p": "a"}, {"id": 2, "p": "b"}])
    builder.write([{"id": 1, "p": "a"}])
    builder.write([{"id": 1, "p": "a"}])
    builder.clean()
    table = HudiTable.open(str(tmp_path / "t"))
    first_done = table.timeline.require(first).completion_time
    begin = "00000000000000000"
    with pytest.raises(IncrementalRangeError, match="cleaned"):
        incremental(table, begin, first_done)
    fallback = incremental(table, begin, first_done, fallback_to_full_scan=True)
    assert fallback.full_scan
    assert "cleaned" in fallback.fallback_reason
    assert {s.partition for s in fallback.files} == {"p=a", "p=b"}
    assert fallback.row_filter == f"_hoodie_commit_time = '{first}'"


def test_incremental_before_archived_timeline(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    builder = TableBuilder(str(tmp_path / "t"), schema, version=6)
    builder.write([{"id": 1}])
    archived = tmp_path / "t" / ".hoodie" / "archived"
    archived.mkdir(parents=True, exist_ok=True)
    (archived / ".commits_.archive.1_1-0-1").write_bytes(b"#HUDI#")  # an archive log cut short
    with pytest.raises(IncrementalRangeError, match="the archived timeline cannot be read .*archive.1_1-0-1"):
        incremental(str(tmp_path / "t"), "20000101000000000")
    # On v6 a range of requested times needs no instant list: a full scan with it loses no archived instant's rows.
    pulled = incremental(str(tmp_path / "t"), "20000101000000000", fallback_to_full_scan=True)
    latest = pulled.instants[-1].requested_time
    assert pulled.full_scan and pulled.row_filter == f"_hoodie_commit_time > '20000101000000000' AND _hoodie_commit_time <= '{latest}'"


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_builder_metadata_table_matches_storage_through_awkward_cases(tmp_path: Path, table_type: str) -> None:
    from metadata.mdt.validate import validate_metadata

    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    path = str(tmp_path / "t")
    builder = TableBuilder(path, schema, partition_fields=["p"], version=8, table_type=table_type, metadata_table=True)
    builder.write([{"id": i, "p": f"p{i % 4}"} for i in range(12)])
    builder.write([{"id": 1, "p": "p1"}, {"id": 2, "p": "p2"}])
    builder.write([{"id": 99, "p": "p1"}], complete=False)  # failed: never in the metadata table
    builder.delete_partitions(["p=p3"])
    builder.insert_overwrite([{"id": 50, "p": "p0"}])
    builder.clean()
    if table_type == "MERGE_ON_READ":
        builder.run_compaction(builder.schedule_compaction())
    report = validate_metadata(path)
    assert report.ok, report.differences()
    table = HudiTable.open(path)
    assert table.listing.source == "metadata table"
    assert table.partitions() == ["p=p0", "p=p1", "p=p2"]
    expected = {(p, f): v for (p, f), v in builder.expected_latest_files().items()}
    assert {(s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names)) for s in table.file_slices()} == expected


def test_200_threads_200_partitions_one_metadata_table_open(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    path = str(tmp_path / "wide")
    builder = TableBuilder(path, schema, partition_fields=["p"], version=8, metadata_table=True)
    builder.write([{"id": i, "p": f"{i % 200:03d}"} for i in range(400)])
    builder.write([{"id": i, "p": f"{i % 200:03d}"} for i in range(0, 400, 7)])
    handler = CountingHandler()
    lister = DirectoryLister.open(path, filesystem=pafs.PyFileSystem(handler))
    partitions = lister.list_partitions()
    assert len(partitions) == 200
    with ThreadPoolExecutor(max_workers=200) as pool:
        results = list(pool.map(lambda p: [(s.file_id, s.base_file_name) for s in lister.list_files(p)], partitions))
    expected = builder.expected_latest_files()
    assert [sorted(r) for r in results] == [sorted((f, v[0]) for (q, f), v in expected.items() if q == p) for p in partitions]
    assert [d for d in handler.listed if "/.hoodie" not in d] == []
    props = [p for p in handler.opened if p.endswith(".hoodie/metadata/.hoodie/hoodie.properties")]
    assert len(props) == 1
    assert handler.opened[props[0]] == 1


def test_a_capped_v6_pull_filters_rows_up_to_its_last_instant_even_in_a_full_scan(tmp_path: Path) -> None:
    """max_commits with an end: the row filter ends at the last instant kept, not at `end`, so a full scan (here
    forced by an empty commit file) does not return the rows of the commits the cap left out."""
    path = tmp_path / "t"
    builder = TableBuilder(str(path), pa.schema([("id", pa.int64())]), version=6)
    times = [builder.write([{"id": i}]) for i in range(3)]
    (path / ".hoodie" / f"{times[0]}.commit").write_bytes(b"")
    pulled = incremental(str(path), "00000000000000000", end=times[2], max_commits=1, fallback_to_full_scan=True)
    assert pulled.full_scan and [i.requested_time for i in pulled.instants] == [times[0]]
    assert pulled.row_filter == f"_hoodie_commit_time > '00000000000000000' AND _hoodie_commit_time <= '{times[0]}'"
