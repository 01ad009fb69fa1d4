"""The shard pipeline (column_stats read a shard at a time, evaluated per
bucket: what Spark executors run) gives the local planner's plans on every
fixture table, for predicates drawn from each table's own values; the seeded
table shapes check the same (tests/table_shapes.py)."""

from __future__ import annotations

import hudi
import pyarrow as pa
import pytest

from listers import plan
from listers.index_support.shard_pipeline import local_candidates_runner
from tests.conftest import fixture_ids, requires_fixtures


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
