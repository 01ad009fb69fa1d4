"""Conformance with Apache Hudi itself: tables of every shape in
`tests/hudi_oracle.SHAPES`, written by Hudi's Spark datasource (Hudi 1.0.2,
PySpark 3.5, in a virtualenv of their own), read by this project and
compared with what Hudi and Spark read back.

Per shape: the snapshot equals Hudi's; for each predicate, the rows of the
file slices a plan keeps, filtered, are exactly the rows Spark selects from
Hudi's snapshot (no dropped file, the same row semantics); the change feed
replays to the live records; incremental pulls answer or refuse; `table
validate` accepts the metadata table Hudi wrote. Where Hudi's own filtered
read differs from the truth, the report names it (a Hudi bug, not ours).
The report is written to `.cache/hudi-tables/<version>/conformance.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expressions import evaluate_rows, parse_sql
from listers import ChangeFeedError, changes, incremental, plan
from listers.incremental import IncrementalRangeError
from listers.verify import verify_plan
from metadata import HudiTable
from metadata.errors import HudiError
from metadata.mdt.validate import validate_metadata
from metadata.table.slice_rows import conform, merged_rows, table_read_schema
from tests.hudi_oracle import (
    HUDI_VERSION,
    RELEASES,
    SHAPES,
    SLOW_SAMPLE,
    Shape,
    for_release,
    go_on,
    in_slow_tier,
    missing_setup,
    record_cells,
    release_shapes,
    tables,
    with_our_metadata_table,
)
from tests.hudi_oracle.pruning import against_hudi
from tests.needs import require

pytestmark = [pytest.mark.services, pytest.mark.slow]
REPORT: dict[str, dict[str, dict[str, Any]]] = {}  # release -> shape -> check -> outcome
WRITTEN: dict[tuple[str, bool], dict[str, tuple[Path, dict[str, Any]]]] = {}
def _matrix_unless(slow: bool) -> tuple[Any, ...]:
    return () if slow else (pytest.mark.matrix,)


CASES = [pytest.param(release, shape, id=f"{release}-{shape.name}", marks=_matrix_unless(in_slow_tier(release, shape.name)))
         for release in RELEASES for shape in for_release(SHAPES, release)]


def _written(release: str, full: bool = False) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The shapes Hudi `release` wrote (`release_shapes`): those of the slow tier, or with `full` all of them."""
    if (release, full) not in WRITTEN:
        require(missing_setup(release), f"the Hudi {release} conformance tier")
        WRITTEN[release, full] = tables(release_shapes(release, full), release)
    return WRITTEN[release, full]


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    for release, cells in REPORT.items():
        record_cells(release, cells)


@pytest.fixture(scope="module")
def written() -> dict[str, tuple[Path, dict[str, Any]]]:
    return _written(HUDI_VERSION)


def _rows(table: HudiTable, slices: list[Any]) -> list[dict[str, Any]]:
    schema = table_read_schema(table)
    rows: list[dict[str, Any]] = []
    for piece in slices:
        read = merged_rows(table, piece)
        if read.num_rows:
            rows += conform(read, schema, piece.base_file or piece.partition).to_pylist()
    return rows


def _ids(rows: list[dict[str, Any]], predicate: str) -> list[int]:
    import pyarrow as pa

    if not rows:
        return []
    table = pa.Table.from_pylist(rows)
    return sorted(r["id"] for r, keep in zip(rows, evaluate_rows(parse_sql(predicate), table).to_pylist()) if keep)


def _cell(release: str, shape: Shape, check: str, outcome: str) -> None:
    REPORT.setdefault(release, {}).setdefault(shape.name, {})[check] = outcome


def _same(ours: dict[int, dict[str, Any]], theirs: list[dict[str, Any]], what: str) -> None:
    assert sorted(ours) == sorted(r["id"] for r in theirs), f"{what}: ids"
    for row in theirs:
        mine = {c: ours[row["id"]].get(c) for c in row}
        assert {c: str(v) for c, v in mine.items()} == {c: str(v) for c, v in row.items()}, f"{what}: id {row['id']}"


@pytest.mark.parametrize("release,shape", CASES)
def test_a_shape_hudi_wrote_reads_and_plans_as_hudi_reads_it(release: str, shape: Shape) -> None:
    path, oracle = _written(release, full=not in_slow_tier(release, shape.name))[shape.name]
    if shape.hudi_write_fails:
        assert shape.hudi_write_fails in oracle.get("write_error", ""), f"{shape.name}: Hudi now writes it: {oracle}"
        _cell(release, shape, "write", f"Hudi {release} fails to write it: {oracle['write_error'][:160]}")
        return
    assert "write_error" not in oracle, f"Hudi refused to write {shape.name}: {oracle['write_error']}"
    table = HudiTable.open(str(path))

    ours = {r["id"]: r for r in _rows(table, table.file_slices())}
    _same(ours, oracle["expected"], f"{shape.name} snapshot vs the rows written")
    if shape.hudi_read_fails:
        assert shape.hudi_read_fails in oracle.get("read_error", ""), f"{shape.name}: Hudi now reads it: {oracle.get('read_error')}"
        _cell(release, shape, "snapshot", f"equal to the rows written; Hudi {HUDI_VERSION} fails to read it: {oracle['read_error'][:160]}")
    else:
        assert "read_error" not in oracle, f"Hudi cannot read {shape.name}: {oracle['read_error']}"
        _same(ours, oracle["rows"], f"{shape.name} snapshot vs Hudi's")
        _cell(release, shape, "snapshot", "equal (to the rows written and to Hudi's snapshot)")

    for predicate, expected in oracle["truth"].items():
        planned = plan(str(path), predicate)
        assert _ids(_rows(table, list(planned.files)), predicate) == expected, f"{shape.name}: {predicate}"
        check = verify_plan(table, planned, parse_sql(predicate))  # plan --verify: no ruled-out slice holds a match
        assert check.ok, f"{shape.name}: {predicate}: {check.describe()}"
        if "hudi" not in oracle:
            _cell(release, shape, f"plan {predicate}", "equal")
            continue
        hudi_said = oracle["hudi"][predicate], oracle["hudi_data_skipping"][predicate]
        pruning = against_hudi(table, predicate, list(planned.files), expected, oracle, lambda slices: _rows(table, slices))
        _cell(release, shape, f"plan {predicate}", f"equal{pruning}" if all(h == expected for h in hudi_said)
              else f"equal; Hudi's own read differs: {hudi_said[0]} (skipping off), {hudi_said[1]} (on), truth {expected}")

    live = sorted(r["id"] for r in oracle["expected"])
    start, state = _replay_start(release, table, shape, oracle)
    feed = changes(table, start)
    for op, before, after in zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()):
        image = json.loads(after or before)  # with DATA_BEFORE_AFTER, images are the logged data columns (no meta fields), as Hudi's
        if op == "d":
            state.remove(image["id"])
        else:
            state.add(image["id"])
    assert sorted(state) == live, f"{shape.name}: the change feed after {start} replays to {sorted(state)}"
    _cell(release, shape, "changes", "equal")

    _same_time_travel(release, table, shape, oracle)
    _same_incremental_and_cdc(release, table, shape, oracle)

    if shape.meta_fields:
        assert {s.file_id for s in incremental(str(path), "0").files} <= {s.file_id for s in table.file_slices()}
        _cell(release, shape, "incremental", "answered")
    else:
        with pytest.raises(IncrementalRangeError, match="populate.meta.fields=false"):
            incremental(str(path), "0")
        _cell(release, shape, "incremental", "refused in one line (as Hudi refuses)")

    report = validate_metadata(str(path))
    assert report.ok, f"{shape.name}: {report.differences()}"
    _cell(release, shape, "validate (Hudi's metadata table)", f"agrees; column_stats of {report.stats_files_checked} file(s) equal the footers")


def _replay_start(release: str, table: HudiTable, shape: Shape, oracle: dict[str, Any]) -> tuple[str, set[int]]:
    """Where the change feed replays from, and the ids live there: from the start ("0", nothing live), or,
    where a clean removed files the feed from the start needs (it refuses, naming the clean), from the first
    commit it can start after, with the ids Hudi's time travel gives as of that commit."""
    try:
        changes(table, "0")
        return "0", set()
    except ChangeFeedError as exc:
        assert "a clean removed" in str(exc), str(exc)
    for commit in table.timeline.commits():
        begin = commit.completion_time if table.timeline.uses_completion_time else commit.requested_time
        travelled = oracle.get("time_travel", {}).get(commit.requested_time)
        if travelled is None:
            continue
        try:
            changes(table, begin)
        except ChangeFeedError:
            continue
        _cell(release, shape, "changes from 0", "refused in one line: a clean removed files the feed needs (as Hudi's CDC would)")
        return begin, set(travelled)
    raise AssertionError(f"{shape.name}: no commit the change feed can start after")


def _same_time_travel(release: str, table: HudiTable, shape: Shape, oracle: dict[str, Any]) -> None:
    """As of each completed commit, our snapshot holds the ids live then (the writer's bookkeeping), which Hudi's
    time travel returns too. Where Hudi refuses (a clean ran after that time: "Cleaner cleaned up the timestamp of
    interest"), ours refuses only when a file that view needs is gone, naming it and the clean, and otherwise
    answers from files that are all there; either way never other rows."""
    answered, refused, ours_answered = 0, 0, 0
    for instant in table.timeline.commits():
        requested = instant.requested_time
        truth = oracle["live_by_commit"].get(requested)
        if truth is None:
            continue
        hudi = oracle.get("time_travel", {}).get(requested)
        if hudi is not None:
            assert hudi == truth, f"{shape.name}: Hudi as of {requested}"
            ours = sorted(r["id"] for r in _rows(table, table.file_slices(as_of=requested)))
            assert ours == truth, f"{shape.name}: as of {requested}"
            answered += 1
            continue
        assert "Cleaner cleaned up" in oracle.get("time_travel_errors", {}).get(requested, ""), requested
        refused += 1
        try:
            slices = table.file_slices(as_of=requested)
        except HudiError as exc:
            assert "clean" in str(exc), str(exc)
            continue
        assert sorted(r["id"] for r in _rows(table, slices)) == truth, f"{shape.name}: as of {requested} (Hudi refuses)"
        ours_answered += 1
    _cell(release, shape, "time travel", f"equal as of {answered} commit(s)"
          + (f"; {refused} before a clean, refused by Hudi; ours answered {ours_answered} of them (their files are all there, "
             "the rows equal what was live), refused the rest naming the file cleaned" if refused else ""))


def _same_incremental_and_cdc(release: str, table: HudiTable, shape: Shape, oracle: dict[str, Any]) -> None:
    """After the first commit: our incremental pull keeps the ids Hudi's incremental query returns, and our
    change feed has the (op, id) changes Hudi's CDC query returns."""
    begin = oracle["begin"]
    if "incremental" in oracle:
        if shape.meta_fields:
            pulled = incremental(table, begin)
            rows = _rows(table, list(pulled.files))
            ours = _ids(rows, pulled.row_filter) if rows else []
            assert ours == oracle["incremental"], f"{shape.name}: incremental after {begin}"
            _cell(release, shape, "incremental rows", "equal")
    if "cdc" in oracle:
        feed = changes(table, begin)
        ours_cdc = sorted((op, json.loads(a or b)["id"]) for op, b, a in
                          zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()))
        assert ours_cdc == sorted((op, i) for op, i, _, _ in oracle["cdc"]), f"{shape.name}: CDC after {begin}"
        _cell(release, shape, "CDC", f"equal ({shape.cdc_mode})")


# Writes both ways: hudi-bridge builds the metadata table of a table Hudi wrote, Hudi reads through it and writes on top.
GO_ON = ["cow_v8_simple", "mor_v8_complex_added_column", "cow_v8_simple_virtual_keys", "cow_v6_timestamp", "mor_v6_nonpartitioned"]
MORE_STEPS = ("upsert:0,5", "compact", "upsert:1,7", "clean", "insert:20-23", "delete:6")  # compaction (MOR) and clean both on top


ON_OURS: dict[str, dict[str, Any]] = {}


def _hudi_on_ours(release: str, root: Path) -> dict[str, Any]:
    """Per release: hudi-bridge builds the metadata table of each GO_ON shape Hudi wrote; Hudi reads and writes on top."""
    if release not in ON_OURS:
        written, shapes, todo = _written(release, full=release in SLOW_SAMPLE), {s.name: s for s in for_release(SHAPES, release)}, []
        for name in _go_on_names(release):
            source, oracle = written[name]
            path = with_our_metadata_table(source, shapes[name], root / release / name)
            assert validate_metadata(str(path)).ok
            todo.append((path, shapes[name], oracle))
        (root / release).mkdir(parents=True, exist_ok=True)
        seen = go_on(todo, MORE_STEPS, root / release, release)
        ON_OURS[release] = {shape.name: (path, oracle, seen[shape.name]) for path, shape, oracle in todo}
    return ON_OURS[release]


def _go_on_names(release: str) -> list[str]:
    return [s.name for s in for_release([s for s in SHAPES if s.name in GO_ON], release)]


@pytest.mark.parametrize("release,name", [pytest.param(r, n, id=f"{r}-{n}", marks=_matrix_unless(r not in SLOW_SAMPLE))
                                          for r in RELEASES for n in _go_on_names(r)])
def test_hudi_reads_and_writes_through_the_metadata_table_we_built(release: str, name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    path, oracle, seen = _hudi_on_ours(release, tmp_path_factory.getbasetemp() / "ours")[name]
    shape = next(s for s in for_release(SHAPES, release) if s.name == name)
    assert "error" not in seen, f"Hudi on our metadata table of {name}: {seen.get('error')}"
    hudi_right = [p for p in oracle["truth"] if oracle["hudi_data_skipping"][p] == oracle["truth"][p]]  # where Hudi is right at all
    for predicate in hudi_right:
        assert seen["hudi_on_ours"][predicate] == oracle["truth"][predicate], f"{name}: Hudi through our metadata table, {predicate}"
        assert seen["hudi_after_write"][predicate] == seen["truth_after"][predicate], f"{name}: after Hudi wrote on top, {predicate}"
    _cell(release, shape, "Hudi reads through our metadata table, then writes on top", f"equal on {len(hudi_right)} predicate(s)")
    report = validate_metadata(str(path))
    assert report.ok, f"{name}: after Hudi wrote on top of our metadata table: {report.differences()}"
    table = HudiTable.open(str(path))
    for predicate, expected in seen["truth_after"].items():
        assert _ids(_rows(table, list(plan(str(path), predicate).files)), predicate) == expected, f"{name} after Hudi's write: {predicate}"
    _cell(release, shape, "our plans after Hudi wrote on top of our metadata table", "equal")


SYNCED = ["cow_v8_simple", "mor_v8_complex_added_column", "cow_v6_timestamp", "mor_v6_nonpartitioned", "cow_v8_history"]


def test_hudis_spark_sql_reads_the_tables_hudi_bridge_synced(written: dict[str, tuple[Path, dict[str, Any]]], metastore: Any,
                                                              tmp_path: Path) -> None:
    """Tables hudi-bridge syncs into a Hive metastore, read by Hudi's Spark SQL through Spark's Hive catalog on
    that metastore: a COW table and a MOR table's `_rt` give the rows written; a MOR table's `_ro` gives the rows
    of its base files, as hudi-bridge's read-optimized scan reads them."""
    from hive_sync import SyncOptions, sync
    from hive_sync.hms import HmsClient
    from listers import scan
    from tests.hudi_oracle import read_synced

    expected: dict[str, list[int]] = {}
    for name in SYNCED:
        path, oracle = written[name]
        table = HudiTable.open(str(path))
        with HmsClient(metastore.uri) as client:
            assert sync(table, client, SyncOptions(database="synced")).applied
        live = sorted(r["id"] for r in oracle["expected"])
        if table.config.is_mor:
            expected[f"synced.{name}_rt"] = live
            expected[f"synced.{name}_ro"] = sorted(scan(table, columns=["id"], query_type="read_optimized").to_table().column("id").to_pylist())
        else:
            expected[f"synced.{name}"] = live
    read = read_synced(metastore.uri, sorted(expected), tmp_path)
    assert read == expected
    for name in SYNCED:
        _cell(HUDI_VERSION, next(s for s in SHAPES if s.name == name), "Hive sync read by Hudi's Spark SQL", "equal")


@pytest.mark.parametrize("release", [pytest.param(r, id=r, marks=_matrix_unless(r not in SLOW_SAMPLE)) for r in RELEASES])
def test_our_rebuild_lists_the_files_hudis_metadata_table_lists_cdc_logs_included(release: str, tmp_path: Path) -> None:
    """On the CDC shapes, the files partition hudi-bridge builds names the same files, with the same sizes, as
    the one Hudi wrote: its change-data logs (`.cdc`) included, as Hudi lists them."""
    from metadata import MetadataTable
    from tests.hudi_oracle import with_our_metadata_table

    for shape in [s for s in for_release(SHAPES, release) if s.cdc_mode]:
        source, _ = _written(release, full=release in SLOW_SAMPLE)[shape.name]
        ours = with_our_metadata_table(source, shape, tmp_path / shape.name)
        theirs_table, ours_table = HudiTable.open(str(source)), HudiTable.open(str(ours))
        partitions = theirs_table.partitions()
        hudi_files = MetadataTable.open(theirs_table).files_for(partitions)
        our_files = MetadataTable.open(ours_table).files_for(partitions)
        assert hudi_files == our_files, shape.name
        if shape.table_type == "COPY_ON_WRITE":  # on MOR, Hudi writes the changes into the log files, no .cdc beside them
            assert any(name.endswith(".cdc") for p in partitions for name in our_files[p]), shape.name
        _cell(release, shape, "our files partition", "equal to Hudi's (CDC logs included)")
