"""Property: a plan through the record index this project writes never drops a
slice holding a matching row, over random table histories (upserts, deletes,
rolled-back writes, cleans, compactions, syncs skipped) and random key
predicates; and it fails when the index is trusted where it should not be."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expressions import evaluate_rows, parse_sql
from listers.planner import plan
from metadata import HudiTable
from metadata.mdt.file_groups import PARTITION_ORDER
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])
CITIES = ("sf", "nyc", "la")
KEYS = 18
EXAMPLES = 200  # table histories, each checked with PREDICATES_PER_TABLE predicates: 5,000 plans
PREDICATES_PER_TABLE = 25
DEFAULT_PLANS_PER_TABLE = 8  # of those, also planned without assume_unique_keys

keys = st.integers(0, KEYS - 1)
steps = st.one_of(
    st.tuples(st.just("write"), st.lists(keys, min_size=1, max_size=6), st.integers(0, 9)),
    st.tuples(st.just("insert"), st.lists(keys, min_size=1, max_size=6), st.integers(0, 9)),
    st.tuples(st.just("delete"), st.lists(keys, min_size=1, max_size=2), st.just(0)),
    st.tuples(st.just("failed write"), st.lists(keys, min_size=1, max_size=3), st.just(0)),
    st.tuples(st.just("clean"), st.just([]), st.just(0)),
    st.tuples(st.just("compact"), st.just([]), st.just(0)),
    st.tuples(st.just("sync"), st.just([]), st.just(0)),
)
predicates = st.one_of(
    st.builds(lambda k: f"id = 'k{k:03d}'", keys),
    st.builds(lambda ks: f"id IN ({', '.join(repr(f'k{k:03d}') for k in ks)})", st.lists(keys, min_size=1, max_size=5)),
    st.builds(lambda k, f: f"id = 'k{k:03d}' AND fare > {f}", keys, st.integers(0, 10)),
    st.builds(lambda a, b: f"id = 'k{a:03d}' OR id = 'k{b:03d}'", keys, keys),
    st.builds(lambda k: f"_hoodie_record_key = 'k{k:03d}'", keys),
)


def _rows(ids: list[int], version: int) -> list[dict[str, Any]]:
    # a key always lives in the same city, so keys stay unique across partitions
    return [{"id": f"k{i:03d}", "city": CITIES[i % len(CITIES)], "fare": float(i % 11) + version / 10} for i in sorted(set(ids))]


def _history(path: Path, table_type: str, history: list[tuple[str, list[int], int]], final_sync: bool) -> None:
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["city"], max_rows_per_file=3)
    builder.write(_rows(list(range(0, KEYS, 2)), 0))
    MetadataTableWriter(str(path)).build(PARTITION_ORDER)
    for action, ids, version in history:
        if action == "write":
            builder.write(_rows(ids, version))
        elif action == "insert":  # recorded as an insert: the planner must show the keys unique before trusting the index
            builder.write(_rows(ids, version), operation="insert")
        elif action == "delete":
            builder.delete([f"k{i:03d}" for i in ids])
        elif action == "failed write":
            builder.rollback(builder.write(_rows(ids, 1), complete=False))
        elif action == "clean":
            builder.clean()
        elif action == "compact" and any(logs for _, logs in builder.expected_latest_files().values()):
            builder.run_compaction(builder.schedule_compaction())
        elif action == "sync":
            MetadataTableWriter(str(path)).sync()
    if final_sync:
        MetadataTableWriter(str(path)).sync()


def _slice_rows(table: HudiTable) -> dict[tuple[str, str], pa.Table]:
    reader = hudi.HudiFileGroupReader(table.base_uri)
    return {(s.partition, s.file_id): pa.Table.from_batches([reader.read_file_slice_from_paths(s.base_file or "", list(s.log_files))])
            for s in table.file_slices()}


def _check_history(table_type: str, history: list[tuple[str, list[int], int]], final_sync: bool, wheres: list[str],
                   pruned: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t"
        _history(path, table_type, history, final_sync)
        table = HudiTable.open(str(path), use_metadata=False)  # the truth: storage and the timeline
        rows = _slice_rows(table)
        for n, where in enumerate(wheres):
            expression = parse_sql(where)
            matching = {group for group, found in rows.items() if found.num_rows and any(evaluate_rows(expression, found).to_pylist())}
            # trusted as Apache Hudi does, and (for the first few) by default: by proof, or not at all
            for trusting in (True, False) if n < DEFAULT_PLANS_PER_TABLE else (True,):
                result = plan(str(path), where, assume_unique_keys=trusting)
                kept = {(s.partition, s.file_id) for s in result.files}
                assert matching <= kept, (where, history, trusting, result.explain())
                if any("record_index" in stage.name for stage in result.stages) and len(kept) < len(rows):
                    pruned.append(int(trusting))


def _property(pruned: list[int]) -> Callable[..., None]:
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.sampled_from(["COPY_ON_WRITE", "MERGE_ON_READ"]), st.lists(steps, max_size=7), st.booleans(),
           st.lists(predicates, min_size=PREDICATES_PER_TABLE, max_size=PREDICATES_PER_TABLE))
    def check(table_type: str, history: list[tuple[str, list[int], int]], final_sync: bool, wheres: list[str]) -> None:
        _check_history(table_type, history, final_sync, wheres, pruned)

    return check


def test_record_index_plans_never_drop_a_matching_slice() -> None:
    pruned: list[int] = []
    _property(pruned)()
    # the index did prune, often: trusted, and by default (histories of upserts, or keys shown unique)
    assert pruned.count(1) > EXAMPLES * PREDICATES_PER_TABLE // 10 and pruned.count(0) > EXAMPLES * DEFAULT_PLANS_PER_TABLE // 10


def test_the_property_fails_when_sync_leaves_the_record_index_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: a sync that does not index the keys of the files a
    commit wrote makes a key lookup drop the slice holding the key."""
    from metadata.mdt.write.partitions.record_index import RecordIndexWriter

    monkeypatch.setattr(RecordIndexWriter, "sync_records", lambda self, inputs: {})
    with pytest.raises(AssertionError):
        _check_history("MERGE_ON_READ", [("write", [1, 3, 5], 2)], True, [f"id = 'k{k:03d}'" for k in (1, 3, 5)], [])


def test_a_metadata_table_behind_the_timeline_is_not_used(tmp_path: Path) -> None:
    """A commit by a writer that does not keep the metadata table: planning
    lists storage and says why, rather than miss the new files."""
    path = tmp_path / "t"
    _history(path, "COPY_ON_WRITE", [("write", [1, 3], 1)], final_sync=False)
    result = plan(str(path), "id = 'k001'", assume_unique_keys=True)
    assert "behind the timeline" in result.listing and "index sync" in result.listing
    rows = _slice_rows(HudiTable.open(str(path), use_metadata=False))
    holding = {group for group, found in rows.items() if "k001" in found.column("_hoodie_record_key").to_pylist()}
    assert holding and holding <= {(s.partition, s.file_id) for s in result.files}
