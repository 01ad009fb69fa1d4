"""Round two of the shapes Apache Hudi really writes (issue 63), written by
Hudi 1.0.2 itself (`tests/hudi_oracle/recipes.py`) and read by this project:
two-level partitions with encoded, empty and NULL values, a wide typed table
with NaN, a bucket-index MERGE_ON_READ table with a pending compaction,
archived timelines on versions 8 and 6, and a version 6 table after Hudi
rolled back a failed write.

Per shape: the snapshot equals the rows written (as Hudi's readers give
them); for each predicate the plan keeps every row Spark selects, and `plan
--verify`'s check finds no ruled-out slice holding a match; `table validate`
reports only what is really wrong. Where Hudi's own read is wrong the report
cell says so (`.cache/hudi-tables/<version>/round_two.json`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from expressions import parse_sql
from listers import ChangeFeedError, changes, incremental, plan, scan
from listers.verify import verify_plan
from metadata import HudiTable, MetadataTable
from metadata.errors import HudiError
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.storage.storage import Storage
from metadata.table.config import update_table_config
from tests.hudi_oracle import CACHE, HUDI_VERSION, ROUND_TWO, Shape, for_release, missing_setup, tables
from tests.hudi_oracle.pruning import against_hudi
from tests.needs import require
from tests.test_hudi_conformance import _ids, _rows

pytestmark = [pytest.mark.services, pytest.mark.slow]
REPORT: dict[str, dict[str, Any]] = {}
BY_NAME = {s.name: s for s in ROUND_TWO}


@pytest.fixture(scope="module")
def written() -> dict[str, tuple[Path, dict[str, Any]]]:
    require(missing_setup(), "the Hudi conformance tier")
    found = tables(ROUND_TWO)
    yield found
    (CACHE / "hudi-tables" / HUDI_VERSION / "round_two.json").write_text(json.dumps(REPORT, indent=1, sort_keys=True))


def _cell(shape: Shape, check: str, outcome: str) -> None:
    REPORT.setdefault(shape.name, {})[check] = outcome


NEWEST_ROUND_TWO = for_release(ROUND_TWO, "1.2.0")  # at table version 9: logical-type statistics, NaN, defaults, archive...
LATER: dict[str, tuple[Path, dict[str, Any]]] = {}


@pytest.mark.matrix
@pytest.mark.parametrize("shape", NEWEST_ROUND_TWO, ids=[s.name for s in NEWEST_ROUND_TWO])
def test_round_two_written_by_hudi_1_2_plans_soundly(shape: Shape) -> None:
    """Round two's shapes as Hudi 1.2.0 writes them (version 9 where 1.0.2 wrote 8): every plan keeps every
    matching row and `plan --verify` agrees."""
    require(missing_setup("1.2.0"), "round two on Hudi 1.2.0")
    if not LATER:
        LATER.update(tables(NEWEST_ROUND_TWO, "1.2.0"))
    path, oracle = LATER[shape.name]
    assert "write_error" not in oracle, oracle.get("write_error")
    table = HudiTable.open(str(path))
    assert sorted(r["id"] for r in _rows(table, table.file_slices())) == sorted(r["id"] for r in oracle["expected"])
    for predicate, truth in oracle["truth"].items():
        result = plan(str(path), predicate)
        assert _ids(_rows(table, list(result.files)), predicate) == truth, f"{shape.name}: {predicate}"
        assert verify_plan(table, result, parse_sql(predicate)).ok, f"{shape.name}: {predicate}"


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_plan_keeps_every_matching_row_and_verify_agrees(written: dict[str, tuple[Path, dict[str, Any]]], name: str) -> None:
    shape = BY_NAME[name]
    path, oracle = written[name]
    assert "write_error" not in oracle, oracle.get("write_error")
    table = HudiTable.open(str(path))
    ours = _rows(table, table.file_slices())
    assert sorted(r["id"] for r in ours) == sorted(r["id"] for r in oracle["expected"])
    for predicate, truth in oracle["truth"].items():
        result = plan(str(path), predicate)
        assert _ids(_rows(table, list(result.files)), predicate) == truth, f"{name}: {predicate}"
        check = verify_plan(table, result, parse_sql(predicate))
        assert check.ok, f"{name}: {predicate}: {check.describe()}"
        hudi = oracle.get("hudi", {}).get(predicate), oracle.get("hudi_data_skipping", {}).get(predicate)
        if "read_error" in oracle:
            _cell(shape, f"plan {predicate}", f"equal, verified; Hudi cannot read the table: {oracle['read_error'][:140]}")
        elif all(h == truth for h in hudi):
            _cell(shape, f"plan {predicate}", "equal, verified" + against_hudi(table, predicate, list(result.files), truth, oracle,
                                                                              lambda slices: _rows(table, slices)))
        else:
            _cell(shape, f"plan {predicate}", f"equal, verified; Hudi's own read differs: {hudi[0]} (skipping off), {hudi[1]} (on), "
                                              f"truth {truth}")


def test_the_default_partition_reads_null_everywhere(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """Rows Hudi stored under __HIVE_DEFAULT_PARTITION__ (written with NULL or '') read NULL in their partition
    columns in scan(), as Hudi's snapshot gives them, so `city IS NULL` and the partition pruning agree."""
    for name in ("cow_v8_default_partitions", "mor_v8_default_partitions_encoded"):
        path, oracle = written[name]
        scanned = {r["id"]: (r["country"], r["city"]) for r in scan(str(path), columns=["id", "country", "city"]).to_table().to_pylist()}
        hudis = {r["id"]: (r.get("country"), r.get("city")) for r in oracle["rows"]}
        # Hudi's own parse of a hive-style path whose value holds a '/' (country=de/at/city=__HIVE_DEFAULT_PARTITION__)
        # returns the marker itself as the value: a Hudi bug; its rows read NULL here, as written.
        hudi_wrong = sorted(i for i, (_, city) in hudis.items() if city == "__HIVE_DEFAULT_PARTITION__")
        assert hudi_wrong == ([7, 14] if name == "cow_v8_default_partitions" else []), hudi_wrong
        assert {i: v for i, v in scanned.items() if i not in hudi_wrong} == {i: v for i, v in hudis.items() if i not in hudi_wrong}, name
        assert all(scanned[i] == ("de/at", None) for i in hudi_wrong)
        assert sum(1 for _, city in scanned.values() if city is None) == 14  # 7 written NULL, 7 written ''
        nulls = plan(str(path), "city IS NULL")
        assert sorted(r["id"] for r in scan(str(path), "city IS NULL", columns=["id"]).to_table().to_pylist()) == \
            oracle["truth"]["city IS NULL"]
        assert not plan(str(path), "city = ''").files, "'' is never a partition value: Hudi stores it as the default partition"
        upsert = oracle["recipe_oracle"]["upsert_into_japan"]
        _cell(BY_NAME[name], "Hudi's upsert into city=日本", "written" if upsert == "ok" else f"Hudi {HUDI_VERSION} fails: {upsert[:160]}")
        _cell(BY_NAME[name], "default partition", f"NULL in scan() and plans, as in Hudi's snapshot ({len(nulls.files)} slices for "
                                                  "city IS NULL)" + (f"; Hudi reads ids {hudi_wrong} as the marker string" if hudi_wrong else ""))


def test_nan_statistics_hudi_wrote_do_not_prune_and_validate_names_them(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """Hudi 1.0.2 records [0.0, 0.0] for a float column of a file holding a NaN (parquet-mr leaves no bounds, Hudi
    reads the absent ones as 0.0): plans keep such files, `table validate` reports exactly those statistics, and
    row predicates Spark answers (isnan, startswith, binary literals) are answered by scan()."""
    path, oracle = written["cow_v8_wide_typed"]
    assert oracle["hudi"]["dbl < -0.1"] == [] and oracle["truth"]["dbl < -0.1"] == [1, 10, 42]  # Hudi's own read drops them
    report = validate_metadata(str(path))
    assert report.stats_differences and all("a NaN" in d for d in report.stats_differences), report.stats_differences
    assert report.differences() == report.stats_differences  # no false alarm (all-NULL columns, microsecond timestamps)
    nan_files = {d.split(":")[0].rsplit("/", 1)[-1] for d in report.stats_differences}
    assert len(nan_files) == 5  # the five files written with a NaN, whatever its place among the values
    for predicate in ("isnan(dbl)", "startswith(name, 'xa')", "bin = X'010300'"):
        got = sorted(r["id"] for r in scan(str(path), predicate, columns=["id"]).to_table().to_pylist())
        assert got == oracle["truth"][predicate], predicate
    assert len(plan(str(path), "bin = X'010300'").files) == 1  # binary bounds prune, as Hudi's do
    _cell(BY_NAME["cow_v8_wide_typed"], "validate", f"names the NaN statistics of {len(nan_files)} files, nothing else")


def test_a_pending_compaction_keeps_its_partition(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    path, oracle = written["mor_v8_bucket_pending_compaction"]
    table = HudiTable.open(str(path))
    assert table.view().pending_compaction_partitions() == {"p=b"}
    explained = plan(str(path), "id = 3").explain()
    assert "pending compaction kept" in explained, explained
    report = validate_metadata(str(path))
    assert report.ok, report.differences()
    assert any("pending compaction" in n for n in report.notes)
    _cell(BY_NAME["mor_v8_bucket_pending_compaction"], "validate", "agrees; the partition_stats gap a pending compaction leaves is a note")


def _after(shape: Shape, commit: list[str]) -> str:
    """hudi-bridge's exclusive begin after a commit: its completion time on v8, its requested time on v6."""
    return commit[1] if shape.version >= 8 else commit[0]


def test_incremental_pulls_reach_into_the_archived_timeline(written: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path) -> None:
    """Both tables had the same sixteen upserts, fourteen of them archived. Our pulls from every begin, and over
    ranges wholly archived, equal Hudi's on version 8; on version 6 Hudi 1.0.2 reads only the active timeline (it
    returns the rows of the last two commits for every begin), and ours equal the version 8 answers."""
    v8_path, v8 = written["cow_v8_archived"]
    answers: dict[str, dict[str, list[int]]] = {}
    for name in ("cow_v8_archived", "cow_v6_archived"):
        shape = BY_NAME[name]
        path, oracle = written[name]
        table = HudiTable.open(str(path))
        assert table.timeline.has_archived_instants and len(table.timeline.archived_commits()) == 14
        commits = oracle["recipe_oracle"]["commits"]
        for label in oracle["recipe_oracle"]["pulls"]:
            first, _, last = label.partition("-")
            begin, end = _after(shape, commits[int(first)]), (_after(shape, commits[int(last)]) if last else None)
            for fallback in (False, True):
                pulled = incremental(table, begin, end, fallback_to_full_scan=fallback)
                assert " IN (" not in pulled.row_filter  # a range of commit times, never the instants at hand
                rows = _rows(table, list(pulled.files))
                answers.setdefault(name, {})[label] = _ids(rows, pulled.row_filter) if rows else []
        _cell(shape, "incremental from archived begins", "answered")
    assert answers["cow_v8_archived"] == v8["recipe_oracle"]["pulls"]
    assert answers["cow_v6_archived"] == answers["cow_v8_archived"]
    hudi_v6 = written["cow_v6_archived"][1]["recipe_oracle"]["pulls"]
    wrong = sorted(label for label in hudi_v6 if hudi_v6[label] != answers["cow_v8_archived"][label])
    assert wrong, "Hudi's version 6 reader now reads its archive: make this an equality"
    _cell(BY_NAME["cow_v6_archived"], "incremental from archived begins",
          f"equal to version 8's answers; Hudi {HUDI_VERSION}'s own version 6 read differs on {len(wrong)} of {len(hudi_v6)} ranges")
    for name in ("cow_v8_archived", "cow_v6_archived"):
        shape = BY_NAME[name]
        path, oracle = written[name]
        table = HudiTable.open(str(path))
        with pytest.raises(ChangeFeedError):
            changes(table, _after(shape, oracle["recipe_oracle"]["commits"][0]))
        report = validate_metadata(str(path))
        assert report.ok, report.differences()  # files archived commits wrote are committed files
        _cell(shape, "changes from an archived begin", "refused in one line")
        # Our own metadata table of it lists what Hudi's lists, the file of partition region=in (written by an archived
        # commit) included.
        ours = tmp_path / name
        shutil.copytree(path, ours)
        shutil.rmtree(ours / ".hoodie" / "metadata")
        update_table_config(Storage.open(str(ours)), {"hoodie.table.metadata.partitions": None,
                                                       "hoodie.table.metadata.partitions.inflight": None})
        MetadataTableWriter(str(ours)).build([MdtPartition.FILES])
        partitions = table.partitions()
        assert "region=in" in partitions
        assert MetadataTable.open(HudiTable.open(str(ours))).files_for(partitions) == MetadataTable.open(table).files_for(partitions)


def test_a_rollback_hudi_recorded_with_paths_lists_storage_with_a_warning(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    """Hudi 1.0.2's rollback of a failed write on a version 6 MERGE_ON_READ table records metadata-table names such
    as 'e:eu/.<file>.log.2_...', which Hudi's own reads then fail on (URISyntaxException). Ours list those
    partitions from storage, warning; strict refuses; validate names the records."""
    path, oracle = written["mor_v6_rolled_back"]
    assert "URISyntaxException" in oracle.get("read_error", ""), "Hudi reads it now: compare with its snapshot"
    result = plan(str(path), "id = 4")
    assert any("listing storage" in w and "is a path" in w for w in result.warnings), result.warnings
    with pytest.raises(HudiError, match="is a path"):
        plan(str(path), "id = 4", strict=True)
    report = validate_metadata(str(path))
    assert report.damaged_records and all("is a path" in d for d in report.damaged_records)
    assert report.differences() == report.damaged_records
    pulled = incremental(str(path), "0")
    assert {s.file_id for s in pulled.files} <= {s.file_id for s in HudiTable.open(str(path)).file_slices()}
    _cell(BY_NAME["mor_v6_rolled_back"], "reads", "storage listed for the damaged records, with a warning; strict refuses; "
                                                  f"validate names {len(report.damaged_records)} record(s)")


def test_the_change_feed_across_a_compaction_equals_hudis_cdc(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    path, oracle = written["mor_v8_cdc_across_compaction"]
    table = HudiTable.open(str(path))
    assert any(i.planned_action is not None for i in table.timeline.commits())  # a compaction completed in range
    feed = changes(table, oracle["begin"])
    ours = sorted((op, json.loads(after or before)["id"]) for op, before, after in
                  zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()))
    assert ours == sorted((op, i) for op, i, _, _ in oracle["cdc"])
    _cell(BY_NAME["mor_v8_cdc_across_compaction"], "CDC", f"equal to Hudi's across a compaction ({len(ours)} changes)")


def test_z_ordered_small_files_prune_as_hudi_does(written: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    path, oracle = written["cow_v8_z_ordered"]
    assert len(HudiTable.open(str(path)).file_slices()) >= 50  # Hudi's clustering wrote many small files
    assert len(plan(str(path), "x = 55").files) <= 2 and not plan(str(path), "x < 10 AND y > 90").files
    _cell(BY_NAME["cow_v8_z_ordered"], "pruning", "z-ordered small files prune to one or two per point predicate")


@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_shape_replays_its_change_feed_and_pulls_incrementally(written: dict[str, tuple[Path, dict[str, Any]]], name: str) -> None:
    """The capabilities beyond plans on every round-two shape: the change feed from the start replays to the live
    rows (or refuses in one line where a clean or the archive took what it needs), an incremental pull from the
    start keeps exactly the live rows, and Hudi's incremental read after the first commit equals ours."""
    shape = BY_NAME[name]
    path, oracle = written[name]
    table = HudiTable.open(str(path))
    live = sorted(r["id"] for r in oracle["expected"])
    try:
        feed = changes(table, "0")
    except ChangeFeedError as exc:
        assert "clean removed" in str(exc) or "archived timeline" in str(exc), str(exc)
        _cell(shape, "changes from 0", "refused in one line (a clean or the archive holds what it needs)")
    else:
        state: set[int] = set()
        for op, before, after in zip(feed.column("op").to_pylist(), feed.column("before").to_pylist(), feed.column("after").to_pylist()):
            image = json.loads(after or before)
            (state.discard if op == "d" else state.add)(image["id"])
        assert sorted(state) == live, name
        _cell(shape, "changes from 0", "replays to the live rows")
    pulled = incremental(table, "0")
    rows = _rows(table, list(pulled.files))
    assert sorted(_ids(rows, pulled.row_filter) if rows else []) == live, name
    if "incremental" in oracle:
        ours = incremental(table, oracle["begin"])
        rows = _rows(table, list(ours.files))
        assert (_ids(rows, ours.row_filter) if rows else []) == oracle["incremental"], name
        _cell(shape, "incremental", "from the start: the live rows; after the first commit: equal to Hudi's")
