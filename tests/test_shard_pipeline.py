"""The shard pipeline (column_stats read a shard at a time, evaluated per
bucket: what Spark executors run) and the local stream (runs of partitions,
evaluated by the same bucket evaluator) give the local planner's plans on
every fixture table, for predicates drawn from each table's own values; the
seeded table shapes check the same (tests/table_shapes.py)."""

from __future__ import annotations

from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa
import pytest

from expressions import bind_predicate, parse_sql
from listers import plan
from listers.index_support import column_stats
from listers.index_support.shard_pipeline import local_candidates_runner
from listers.index_support.stats_runs import (
    FEWEST_RUN_FILES,
    MOST_RUN_FILES,
    PartitionSpans,
    RunCut,
    SortedRows,
    run_files_for,
    runs_of_partitions,
)
from metadata.formats.stats_table import FILE_NAME, PARTITION, ListedFiles, build_stats_table, max_field, min_field
from tests.conftest import fixture_ids, requires_fixtures, table_path


def _predicates(path: str) -> list[str]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    if not batches:
        return ["TRUE"]
    rows = pa.Table.from_batches(batches)
    found = []
    for name in rows.column_names:
        if name.startswith("_hoodie_"):
            continue
        column = rows.column(name)
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_string(column.type)):
            continue
        values = sorted(v for v in column.to_pylist() if v is not None)
        if values:
            quote = (lambda v: "'" + v.replace("'", "''") + "'") if pa.types.is_string(column.type) else repr
            found += [f"{name} >= {quote(values[len(values) // 2])}", f"{name} = {quote(values[0])} OR {name} < {quote(values[-1])}"]
    return found[:10] or ["TRUE"]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_the_shard_pipeline_plans_as_the_local_planner(fixture_table: str) -> None:
    for where in _predicates(fixture_table):
        local = plan(fixture_table, where)
        for buckets in (1, 4):
            piped = plan(fixture_table, where, column_stats_runner=local_candidates_runner(buckets))
            assert {(s.partition, s.file_id, s.base_file) for s in piped.files} == \
                {(s.partition, s.file_id, s.base_file) for s in local.files}, (where, buckets)
            if any(stage.name == "column_stats" for stage in local.stages):  # the pipeline ran, and says so
                assert "column_stats shard(s)" in piped.explain(), piped.explain()


@requires_fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_runs_of_partitions_plan_as_the_local_planner(fixture_table: str) -> None:
    for where in _predicates(fixture_table):
        local = plan(fixture_table, where)
        for run_files in (1, 3, 10**6):
            streamed = plan(fixture_table, where, column_stats_runner=runs_of_partitions(run_files))
            assert {(s.partition, s.file_id, s.base_file, tuple(s.log_file_names)) for s in streamed.files} == \
                {(s.partition, s.file_id, s.base_file, tuple(s.log_file_names)) for s in local.files}, (where, run_files)
            if any(stage.name == "column_stats" for stage in local.stages):
                assert "run(s) of partitions" in streamed.explain(), streamed.explain()


@pytest.mark.parametrize("chunks, together", [
    ([["p=1", "p=1", "p=2"], ["p=2", "p=3"], [], ["p=3", "p=3", "p=4"]], True),  # a partition across chunks, an empty chunk
    ([["p=1", "p=2", "p=1"], ["p=3"]], False),  # a partition's rows apart in a chunk
    ([["p=1", "p=1"], ["p=2"], ["p=1", "p=3"]], False),  # apart across chunks
    ([["p=1", None], ["p=2"]], True),  # a row of no partition is in no run
])
def test_a_run_cut_gives_each_runs_rows_of_the_listing(chunks: list[list[str | None]], together: bool) -> None:
    """Each run's rows: every listed row of its partitions, ascending, found by the partitions' spans when each one's
    rows are together, else by sorting the listing; a partition without rows (p=5) has none."""
    listing = pa.table({PARTITION: pa.chunked_array(chunks, pa.string())})
    partitions = ["p=1", "p=2", "p=3", "p=4", "p=5"]
    column = np.array(listing.column(PARTITION).to_pylist(), dtype=object)
    for run_files in (1, 2, 4, 100):
        cut = RunCut.of(listing, partitions, run_files)
        assert isinstance(cut.rows, PartitionSpans if together else SortedRows)
        runs = list(cut.runs())
        assert sorted(p for run, _ in runs for p in run) == partitions
        for run, positions in runs:
            assert positions.dtype == np.int64
            assert positions.tolist() == np.flatnonzero(np.isin(column, run)).tolist(), (run_files, run)
        if not together:  # the sorted listing lets its codes go: asked again, it refuses rather than give no rows
            with pytest.raises(RuntimeError):
                list(cut.runs())


def test_a_run_is_a_twentieth_of_the_listing_within_its_bounds() -> None:
    assert run_files_for(0) == run_files_for(100_010) == FEWEST_RUN_FILES
    assert run_files_for(600_000) == 30_000
    assert run_files_for(1_000_010) == run_files_for(10**7) == MOST_RUN_FILES


@requires_fixtures
def test_a_listing_with_its_partitions_mixed_plans_in_runs_as_in_order(monkeypatch: pytest.MonkeyPatch, fixture_root: Path) -> None:
    """A listing whose partitions' rows are not together (none of Hudi's is) is cut by sorting: the same plans."""
    from listers import DirectoryLister

    listed = DirectoryLister.file_table
    monkeypatch.setattr(DirectoryLister, "file_table", lambda self, partitions: (lambda t: t.take(
        np.argsort(np.arange(t.num_rows) % 2, kind="stable")))(listed(self, partitions)))  # even rows first, then odd
    checked = 0
    for stem in fixture_ids():
        table = table_path(fixture_root, stem)
        for where in _predicates(table)[:3]:
            local = plan(table, where)
            if any(s.name == "column_stats" for s in local.stages) and len({s.partition for s in local.files}) > 1:
                streamed = plan(table, where, column_stats_runner=runs_of_partitions(run_files=2))
                assert [s.to_dict() for s in streamed.files] == [s.to_dict() for s in local.files], (table, where)
                checked += 1
    assert checked, "no fixture plan reads column_stats over two partitions"


@requires_fixtures
def test_a_large_listing_streams_unless_its_statistics_are_at_hand(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                    fixture_root: Path) -> None:
    planned = ((table, where, plan(table, where)) for table in (table_path(fixture_root, stem) for stem in fixture_ids())
               for where in _predicates(table))
    found = next(((t, w, p) for t, w, p in planned if any(s.name == "column_stats" for s in p.stages)), None)
    assert found is not None, "no fixture plan reads column_stats"
    table, where, whole = found
    assert "run(s) of partitions" not in whole.explain()
    monkeypatch.setattr(column_stats, "STREAM_ABOVE_BYTES", 0)
    streamed = plan(table, where)
    assert "run(s) of partitions" in streamed.explain(), streamed.explain()
    assert [s.to_dict() for s in streamed.files] == [s.to_dict() for s in whole.files]
    cached = plan(table, where, cache_dir=str(tmp_path))  # kept for later processes: read whole
    assert "run(s) of partitions" not in cached.explain()
    assert [s.to_dict() for s in cached.files] == [s.to_dict() for s in whole.files]


@requires_fixtures
def test_runs_in_worker_processes_plan_as_the_local_planner(fixture_root: Path) -> None:
    """Workers open the table themselves and get their runs' listing rows and the bound predicate (a worker pool per plan)."""
    planned = ((table, where, plan(table, where)) for table in (table_path(fixture_root, stem) for stem in fixture_ids())
               for where in _predicates(table)[:2])
    checked = 0
    for table, where, local in planned:
        if not any(s.name == "column_stats" for s in local.stages):
            continue
        in_workers = plan(table, where, column_stats_runner=runs_of_partitions(run_files=2, processes=2))
        assert [s.to_dict() for s in in_workers.files] == [s.to_dict() for s in local.files], (table, where)
        assert "in 2 worker processes" in in_workers.explain(), in_workers.explain()
        checked += 1
        if checked == 4:
            break
    assert checked, "no fixture plan reads column_stats"


@requires_fixtures
def test_a_runs_records_are_its_partitions_only(fixture_root: Path) -> None:
    """Blocks are read loosely (a neighbour's records come too, unmerged with its logs): only the run's partitions' stay."""
    from metadata import HudiTable
    from metadata.formats.stats_table import FILE_NAME, PARTITION
    from metadata.mdt import keys

    checked = 0
    for stem in fixture_ids():
        table = HudiTable.open(table_path(fixture_root, stem))
        mdt = table.metadata_table
        if mdt is None or "column_stats" not in table.config.metadata_partitions or len(mdt.partitions()) < 2:
            continue
        whole = mdt.column_stats(["_hoodie_record_key"], ordered=True)
        for partition in mdt.partitions():
            records = mdt.stats_records("column_stats", ["_hoodie_record_key"], [partition])
            found = records.get("_hoodie_record_key")
            ids = set() if found is None else {i[:keys.ID_LENGTH] for i in found.column("identity").to_pylist()}
            assert ids <= {keys.partition_index_id(partition)}, (stem, partition)
            live = set() if found is None else {f for f, d in zip(found.column("file").to_pylist(), found.column("deleted").to_pylist()) if not d}
            expected = {f for p, f in zip(whole.column(PARTITION).to_pylist(), whole.column(FILE_NAME).to_pylist()) if p == partition}
            assert live == expected, (stem, partition)
            checked += bool(expected)
    assert checked, "no fixture has column_stats of the record key over two partitions"


@requires_fixtures
def test_a_streamed_plan_keeps_the_whole_statistics_for_the_next(monkeypatch: pytest.MonkeyPatch, fixture_root: Path) -> None:
    """Over more listed files than STREAM_ABOVE_FILES a plan streams, in runs (here of 2 files), and keeps what the
    runs read: the table a whole read gives, row for row, which the next plan on the lister then reads whole."""
    from listers import DirectoryLister
    from listers.index_support import stats_runs
    from metadata import HudiTable
    from metadata.formats.stats_table import FILE_NAME, PARTITION, stats_rows_of
    from metadata.mdt.file_groups import MdtPartition

    monkeypatch.setattr(column_stats, "STREAM_ABOVE_FILES", 0)
    monkeypatch.setattr(stats_runs.runs_of_partitions, "__defaults__", (2, 1))
    order = [(PARTITION, "ascending"), (FILE_NAME, "ascending")]
    checked = 0
    for table in (table_path(fixture_root, stem) for stem in fixture_ids()):
        where = _predicates(table)[0]
        columns = [where.split()[0]]  # `c >= v`: the one column it names
        with DirectoryLister.open(table) as lister:
            first = plan(lister, where)
            if "run(s) of partitions" not in first.explain():
                continue  # column_stats not read (no index, or the column has none)
            mdt = lister.table.metadata_table
            assert mdt is not None and mdt.holds_stats(MdtPartition.COLUMN_STATS, columns), (table, where)
            kept = mdt.column_stats(columns, ordered=False)  # the kept table, from memory
            fresh = HudiTable.open(table).metadata_table
            assert fresh is not None
            assert kept.sort_by(order).to_pylist() == fresh.column_stats(columns, ordered=False).sort_by(order).to_pylist(), (table, where)
            files = lister.file_table(lister.list_partitions())
            assert lister.stats_rows(files, kept).tolist() == stats_rows_of(files, kept).tolist()  # the runs' match, remembered
            second = plan(lister, where)
            assert "run(s) of partitions" not in second.explain(), second.explain()
            assert [s.to_dict() for s in second.files] == [s.to_dict() for s in first.files], (table, where)
        checked += 1
    assert checked >= 3, checked


def _fare_table(tmp_path: Path) -> Path:
    """A COW table of three partitions (cities) with column_stats of `fare`."""
    from metadata.mdt.write.writer import MetadataTableWriter
    from tests.test_index_writer import _builder, _rows

    path = tmp_path / "t"
    builder = _builder(path, 8, "COPY_ON_WRITE")
    for n, city in enumerate(["sf", "nyc", "la"]):
        builder.write(_rows(10 * n, 9, city))
    MetadataTableWriter(str(path)).build(columns=["fare"])
    return path


def test_a_streamed_run_that_does_not_decode_names_its_hfile(tmp_path: Path) -> None:
    """A run's statistics are read on a thread while the run before is evaluated: what fails there reaches the plan,
    naming the file, as in a whole read."""
    from metadata.errors import HudiFormatError
    from metadata.mdt.hfile_reader import HFileReader
    from metadata.mdt.write.hfile_writer import HFileWriter

    path = _fare_table(tmp_path)
    assert plan(str(path), "fare > 0", column_stats_runner=runs_of_partitions(run_files=2)).files  # sound before the damage
    for base in (path / ".hoodie/metadata/column_stats").glob("*.hfile"):
        reader = HFileReader.from_bytes(base.read_bytes(), str(base))
        writer = HFileWriter()
        writer.add_all((row, value[:-5]) for row, value in reader.scan_prefixes([b""]))  # every record cut short
        base.write_bytes(writer.finish({b"schema": (reader.schema_json() or "").encode()}))
    with pytest.raises(HudiFormatError, match=r"column_stats/col-stats-.*\.hfile"):
        plan(str(path), "fare > 0", column_stats_runner=runs_of_partitions(run_files=2))


@pytest.mark.parametrize("streamed", [True, False])
def test_statistics_that_do_not_open_fail_the_plan_naming_their_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                     streamed: bool) -> None:
    """A statistics file that does not open (its trailer cut short) fails the plan naming it, streamed (opened on
    the thread reading the runs) or read whole."""
    from listers import DirectoryLister
    from metadata.errors import HudiFormatError

    path = _fare_table(tmp_path)
    monkeypatch.setattr(column_stats, "STREAM_ABOVE_FILES", 0 if streamed else 10**9)
    with DirectoryLister.open(str(path)) as lister:
        first = plan(lister, "fare > 0")  # sound before the damage
        assert first.files and ("run(s) of partitions" in first.explain()) is streamed
    for base in (path / ".hoodie/metadata/column_stats").glob("*.hfile"):
        base.write_bytes(base.read_bytes()[:-7])
    with DirectoryLister.open(str(path)) as lister, pytest.raises(HudiFormatError, match=r"column_stats/col-stats-.*\.hfile"):
        plan(lister, "fare > 0")


@pytest.mark.parametrize("positions", [None, [5, 0, 1, 2, 3, 4]])
def test_a_candidates_group_is_every_listed_file_of_its_partition_and_file_id(positions: list[int] | None) -> None:
    """The group files a run hands over: the candidate's base files and log
    files (names starting with a dot) of its partition; not the files of the
    same file id in another partition, nor other groups. The listing in two
    chunks, evaluated whole or at a run's positions."""
    listed = [("p=1", "fa_0-1-0_001.parquet"), ("p=1", ".fa_001.log.1_0-1-0"), ("p=1", "fb_0-1-0_001.parquet"),
              ("p=2", "fa_0-1-0_001.parquet"), ("p=1", "fa_0-1-0_002.parquet"), ("p=2", ".fb_001.log.1_0-1-0")]
    columns = {PARTITION: [p for p, _ in listed], FILE_NAME: [n for _, n in listed], "size": [1] * len(listed)}
    table = pa.Table.from_batches([pa.record_batch({k: v[:3] for k, v in columns.items()}),
                                   pa.record_batch({k: v[3:] for k, v in columns.items()})])
    stats = build_stats_table([{PARTITION: p, FILE_NAME: n, min_field("x"): lo, max_field("x"): lo + 1}
                               for (p, n), lo in zip([listed[0], listed[2], listed[3], listed[4]], [10, 0, 0, 0])], ["x"], {"x": pa.int64()})
    predicate = bind_predicate(parse_sql("x > 5"), pa.schema([("x", pa.int64())]))
    found = column_stats.candidates_of(ListedFiles(table, None if positions is None else np.asarray(positions, np.int64)),
                                       stats, predicate, ["x"])
    # the listed log files have no statistics: each may match, and is a candidate of its own
    assert found.files == {("p=1", "fa_0-1-0_001.parquet"), ("p=1", ".fa_001.log.1_0-1-0"), ("p=2", ".fb_001.log.1_0-1-0")}
    assert found.group_files is not None
    assert sorted(zip(found.group_files.column(PARTITION).to_pylist(), found.group_files.column(FILE_NAME).to_pylist())) == sorted(
        [("p=1", "fa_0-1-0_001.parquet"), ("p=1", ".fa_001.log.1_0-1-0"), ("p=1", "fa_0-1-0_002.parquet"), ("p=2", ".fb_001.log.1_0-1-0")])
