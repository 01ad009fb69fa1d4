"""The record-level and secondary indexes of real Hudi 1.1 tables: every
record's indexed location is the file group that holds it, and a key or
secondary-value predicate plans exactly the slices holding matching rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from expressions import evaluate_rows, parse_sql
from listers import plan
from metadata import HudiTable, MetadataTable
from metadata.errors import IndexWriteError
from metadata.mdt.indexes import escape_secondary_key, file_group_of, record_locations, secondary_indexes
from metadata.mdt.key_query import KeyQuery
from metadata.table.record_key import record_key_text
from tests.conftest import fixture_ids, requires_fixtures
from tests.test_listers import rows_of

RLI_FIXTURES = [f for f in fixture_ids() if f in ("sample_table__cow__v9_txns_simple_meta", "sample_table__mor__avro__v9_txns_simple_meta")]
PREDICATES = [
    "txn_id = 'TXN-008'",
    "txn_id IN ('TXN-001', 'TXN-018', 'TXN-404')",
    "txn_id = 'TXN-404'",
    "merchant_name = 'Spotify'",
    "txn_date = DATE '2024-01-16'",
    "txn_id IN ('TXN-001', 'TXN-008') AND merchant_name = 'Grab'",
    "txn_id = 'TXN-003' OR txn_id = 'TXN-017'",
    "_hoodie_record_key = 'TXN-011'",
]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_every_record_is_indexed_where_it_lives(fixture_table: str) -> None:
    table = HudiTable.open(fixture_table)
    where = {}
    for s in table.file_slices():
        for key in rows_of(fixture_table, s).column("_hoodie_record_key").to_pylist():
            where[key] = (s.partition, s.file_id)
    mdt = MetadataTable.open(table)
    assert record_locations(mdt, sorted(where)) == where  # decoded columnar
    reference = {key: file_group_of(record.raw["recordIndexMetadata"], key)  # decoded record by record
                 for key, record in mdt.reader.read("record_index", KeyQuery(keys=sorted(where))).items()}
    assert reference == where
    assert {index.column for index in secondary_indexes(mdt)} == {"merchant_name", "txn_date"}


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
@pytest.mark.parametrize("predicate", PREDICATES)
def test_index_predicates_plan_exactly_the_slices_with_matches(fixture_table: str, predicate: str) -> None:
    table = HudiTable.open(fixture_table)
    expr = parse_sql(predicate, "spark")
    matching = {(s.partition, s.file_id) for s in table.file_slices() if any(evaluate_rows(expr, rows_of(fixture_table, s)).to_pylist())}
    planned = plan(fixture_table, predicate, dialect="spark", assume_unique_keys=True)  # trusted, as Apache Hudi does
    assert {(s.partition, s.file_id) for s in planned.files} == matching
    # By default too: the tables were written by inserts, but their 12 live records and the index's 12 keys show no key is held twice.
    shown = plan(fixture_table, predicate, dialect="spark")
    assert {(s.partition, s.file_id) for s in shown.files} == matching
    assert not [reason for reason in shown.not_used if reason.startswith("record_index")], shown.explain()
    index_stages = [s for s in shown.stages if "index" in s.name]
    if "404'" not in predicate or "IN" in predicate:  # otherwise partition_stats already kept nothing
        assert index_stages and "keys shown unique: 12 live records, 12 index keys" in index_stages[0].note, shown.explain()
        assert index_stages[0].kept <= index_stages[0].total


def test_keys_held_twice_are_not_shown_unique(tmp_path: Path) -> None:
    """A bulk insert that writes the same keys into two file groups: the
    latest slices hold more records than the index holds keys, so the index
    is not used and the plan keeps both holders, saying why."""
    import pyarrow as pa

    from metadata.mdt.file_groups import PARTITION_ORDER
    from metadata.mdt.write.writer import MetadataTableWriter
    from metadata.sample_tables.builder import TableBuilder

    path = tmp_path / "t"
    builder = TableBuilder(str(path), pa.schema([("id", pa.string()), ("fare", pa.float64())]), version=8)
    _, written = builder.write_copies({"": 2}, [{"id": f"k{i}", "fare": float(i)} for i in range(5)])
    MetadataTableWriter(str(path)).build(PARTITION_ORDER)
    result = plan(str(path), "id = 'k3'")
    assert len(result.files) == 2
    assert any("the latest file slices hold 10 records but the index 5 keys: a key may be held twice" in r for r in result.not_used), \
        result.not_used
    assert len(plan(str(path), "id = 'k3'", assume_unique_keys=True).files) == 1  # what trusting the index would drop


def test_record_index_file_ids_decode_as_hudi_encodes_them() -> None:
    # UUID 6b1b4ed6-...: two signed longs as Java's UUID(msb, lsb) takes them, plus the file index.
    info = {"partitionName": "p=a", "fileIdHighBits": -6356881901209500334, "fileIdLowBits": -7275369919509522509, "fileIndex": 0,
            "fileIdEncoding": 0}
    partition, file_id = file_group_of(info, "test")
    assert partition == "p=a"
    assert file_id.endswith("-0")
    assert len(file_id) == 38
    assert file_group_of({**info, "fileIndex": -1}, "test")[1] == file_id[:-2]
    assert file_group_of({"partitionName": "", "fileIdEncoding": 1, "fileId": "my-file-id"}, "test") == ("", "my-file-id")
    assert escape_secondary_key("a$b\\c") == "a\\$b\\\\c"


COMPLEX_FIXTURES = [f for f in fixture_ids() if "complexkeygen" in f]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", COMPLEX_FIXTURES or ["no-fixtures"], indirect=True)
def test_composite_record_keys_encode_as_hudi_writes_them(fixture_table: str) -> None:
    """The record_index lookup builds `f1:v1,f2:v2` from pinned key fields:
    that text is every row's _hoodie_record_key in Hudi's complex-key tables."""
    table = HudiTable.open(fixture_table)
    fields = table.config.record_key_fields
    assert len(fields) > 1
    checked = 0
    for s in table.file_slices():
        rows = rows_of(fixture_table, s)
        for row in rows.to_pylist():
            assert record_key_text(fields, tuple(str(row[f]) for f in fields)) == row["_hoodie_record_key"]
            checked += 1
    assert checked > 0


@requires_fixtures
@pytest.mark.parametrize("fixture_table", [f for f in fixture_ids() if f == "sample_table__mor__avro__v9_nonpartitioned_rollback"] or ["no-fixtures"],
                         indirect=True)
def test_a_key_inserted_twice_keeps_both_file_groups(fixture_table: str) -> None:
    """TXN-002 was inserted by two INSERT commits into two file groups; the
    record index holds only the later one. Planning keeps both unless told
    to trust the index as Apache Hudi does."""
    table = HudiTable.open(fixture_table)
    expr = parse_sql("_hoodie_record_key = 'TXN-002'", "spark")
    holding = {s.file_id for s in table.file_slices() if any(evaluate_rows(expr, rows_of(fixture_table, s)).to_pylist())}
    assert len(holding) == 2
    sound = plan(fixture_table, "_hoodie_record_key = 'TXN-002'")
    assert holding <= {s.file_id for s in sound.files}
    assert any(r.startswith("record_index: ") and "insert" in r for r in sound.not_used)
    trusting = plan(fixture_table, "_hoodie_record_key = 'TXN-002'", assume_unique_keys=True)
    assert len({s.file_id for s in trusting.files} & holding) == 1


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_exact_keys_are_read_from_the_file_group_hudi_routed_them_to(fixture_table: str) -> None:
    """Hudi's writer puts each record in group mapRecordKeyToFileGroupIndex(key):
    a key lookup reads that one group of the record index (of 10) and finds
    what reading every group finds; a secondary index (keyed by value) is read whole."""
    from metadata.mdt.file_groups import file_group_index
    from metadata.mdt.key_query import KeyQuery

    mdt = MetadataTable.open(HudiTable.open(fixture_table))
    reader = mdt.reader
    everything = reader.read("record_index", KeyQuery())
    groups = reader.file_slices("record_index")
    assert len(groups) == 10 and len(everything) >= 12
    for key, record in everything.items():
        (routed,) = reader.slices_holding("record_index", KeyQuery(keys=[key]))
        assert routed.file_id == f"record-index-{file_group_index(key, 10):04d}-0"
        assert reader.read("record_index", KeyQuery(keys=[key])) == {key: record}
    index = secondary_indexes(mdt)[0]
    assert len(reader.slices_holding(index.value, KeyQuery(keys=["x"]))) == len(reader.file_slices(index.value))


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES[:1] or ["no-fixtures"], indirect=True)
def test_sync_keeps_hudis_secondary_indexes_or_refuses_to_leave_them_behind(fixture_table: str, tmp_path: Path) -> None:
    """A sync adds instants to the metadata table. Hudi's secondary indexes on
    string and date columns are kept by it (equal to the rows after); one it
    cannot write (a decimal column's index text) would fall behind and a plan
    through it would miss rows: the sync refuses before writing and names the
    way on; once it is dropped the sync goes ahead."""
    import json
    import os
    import shutil
    import time

    from metadata.mdt.validate import validate_metadata
    from metadata.mdt.write.writer import IndexWriteError, MetadataTableWriter
    from tests.test_secondary_index_writer import _live_pairs

    def unsynced_copy(name: str) -> Path:
        copy = tmp_path / name
        shutil.copytree(fixture_table, copy)
        data_commits = {p.name.split("_")[0] for p in (copy / ".hoodie" / "timeline").glob("*_*.commit")}
        mdt_timeline = copy / ".hoodie" / "metadata" / ".hoodie" / "timeline"
        latest = max(p for p in mdt_timeline.glob("*_*.deltacommit") if p.name.split("_")[0] in data_commits)
        latest.unlink()  # as if a writer had committed to the table without syncing the metadata table
        an_hour_ago = time.time() - 3600  # and had been gone since: no sign of life within the heartbeat window
        for left in mdt_timeline.glob(latest.name.split("_")[0] + ".*"):
            os.utime(left, (an_hour_ago, an_hour_ago))
        return copy

    kept = unsynced_copy("kept")
    assert MetadataTableWriter(str(kept)).sync().instants
    assert validate_metadata(str(kept)).ok
    rows = [r for s in HudiTable.open(str(kept)).file_slices() for r in rows_of(str(kept), s).to_pylist()]
    assert _live_pairs(str(kept), "secondary_index_merchant_idx") == {(r["merchant_name"], r["_hoodie_record_key"]) for r in rows}

    refused = unsynced_copy("refused")
    definitions_path = refused / ".hoodie" / ".index_defs" / "index.json"
    definitions = json.loads(definitions_path.read_text())
    definitions["indexDefinitions"]["secondary_index_merchant_idx"]["sourceFields"] = ["amount"]  # decimal(15,2)
    definitions_path.write_text(json.dumps(definitions))
    before = {p: p.read_bytes() for p in refused.rglob("*") if p.is_file()}
    with pytest.raises(IndexWriteError, match="holds secondary_index_merchant_idx, which hudi-bridge does not maintain"):
        MetadataTableWriter(str(refused)).sync()
    assert {p: p.read_bytes() for p in refused.rglob("*") if p.is_file()} == before  # byte for byte as it was
    MetadataTableWriter(str(refused)).drop(["secondary_index_merchant_idx"])
    assert MetadataTableWriter(str(refused)).sync().instants
    assert validate_metadata(str(refused)).ok
    planned = plan(str(refused), "merchant_name = 'Grab'")  # without the index: every slice that may match stays
    assert not [s for s in planned.stages if "merchant" in s.name]


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES[:1] or ["no-fixtures"], indirect=True)
def test_the_uniqueness_proof_is_kept_with_the_cache_dir(fixture_table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --cache-dir, a later process reads the proof (keyed by the table
    state) instead of every record-index file group's trailer and logs."""
    from metadata.mdt import key_uniqueness
    from metadata.mdt.reader import MetadataTableReader

    cache = tmp_path / "cache"
    key_uniqueness._cache.clear()  # this process may know the answer from another test
    first = plan(fixture_table, "txn_id = 'TXN-008'", cache_dir=str(cache))
    assert "keys shown unique: 12 live records, 12 index keys" in first.explain()
    assert list(cache.glob("keys-*.arrow"))
    key_uniqueness._cache.clear()  # as a new process would start

    def unread(self: object, partition: str) -> int:
        raise AssertionError("the proof was worked out again")

    monkeypatch.setattr(MetadataTableReader, "key_count", unread)
    again = plan(fixture_table, "txn_id = 'TXN-008'", cache_dir=str(cache))
    assert [s.to_dict() for s in again.files] == [s.to_dict() for s in first.files]
    assert "keys shown unique: 12 live records, 12 index keys" in again.explain()
    assert again.requests["total"] < first.requests["total"]


def test_a_partitioned_record_index_keeps_every_partitions_entry_of_a_key(tmp_path: Path) -> None:
    """Hudi 1.1's partitioned record index keeps a key once per data partition,
    in that partition's own file groups. Made here from a global index plus a
    file group of the other partition's entries: a plan of the key keeps both
    holders (merging the groups' records as the global index's are would keep one)."""
    import json

    import pyarrow as pa

    from metadata.mdt.file_groups import MdtPartition
    from metadata.mdt.record_builders import record_index_record
    from metadata.mdt.record_encoding import encode_record
    from metadata.mdt.write.writer import MetadataTableWriter
    from metadata.sample_tables.builder import TableBuilder

    path = tmp_path / "t"
    builder = TableBuilder(str(path), pa.schema([("id", pa.string()), ("city", pa.string()), ("v", pa.int64())]), version=8,
                           partition_fields=["city"], max_rows_per_file=2)
    builder.write([{"id": f"k{i}", "city": "sf", "v": i} for i in range(4)])
    builder.write([{"id": f"k{i}", "city": "nyc", "v": i} for i in (1, 7)])  # k1 again, in another partition
    holders = {(s.partition, s.file_id) for s in HudiTable.open(str(path)).file_slices()
               if "k1" in rows_of(str(path), s).column("_hoodie_record_key").to_pylist()}
    assert {p for p, _ in holders} == {"city=sf", "city=nyc"}
    writer = MetadataTableWriter(str(path))
    writer.build([MdtPartition.FILES, MdtPartition.RECORD_INDEX])
    definitions = {"record_index": {"indexName": "record_index", "indexType": "record_index", "indexFunction": "", "sourceFields": [],
                                    "indexOptions": {"isPartitioned": "true"}, "version": "V1"}}
    (path / ".hoodie" / ".index_defs").mkdir(parents=True, exist_ok=True)
    (path / ".hoodie" / ".index_defs" / "index.json").write_text(json.dumps({"indexDefinitions": definitions}))
    properties = path / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text() + "hoodie.table.index.defs.path=.hoodie/.index_defs/index.json\n")
    nyc = next(s for s in HudiTable.open(str(path)).file_slices() if s.partition == "city=nyc")
    base = next((path / ".hoodie" / "metadata" / "record_index").glob("*.hfile"))
    instant = base.name.rsplit("_", 1)[1].split(".")[0]
    cells = [(b"k1", encode_record(record_index_record("k1", "city=nyc", nyc.file_id, None), writer.schema_json))]
    (base.parent / f"record-index-city=nyc-0000-0_0-0-0_{instant}.hfile").write_bytes(writer.files.hfile(cells))
    planned = plan(str(path), "id = 'k1'")
    assert {(s.partition, s.file_id) for s in planned.files} == holders, planned.explain()
    assert any(s.name == "record_index" for s in planned.stages), planned.explain()
    with pytest.raises(IndexWriteError, match="partitioned record index"):
        MetadataTableWriter(str(path)).build([MdtPartition.RECORD_INDEX], rebuild=True)
    builder.write([{"id": "k9", "city": "sf", "v": 9}])
    with pytest.raises(IndexWriteError, match="record_index, which hudi-bridge does not maintain"):
        MetadataTableWriter(str(path)).sync()  # its file groups are per data partition: not written here
