"""The planner's chain of index supports: the predicate bound once, stages in
their order of cost, each counted, and the key stages narrowing what
column_stats reads."""

from __future__ import annotations

from datetime import date

import pyarrow as pa
import pytest

import expressions.eval_partitions
import expressions.eval_stats
from expressions import BoundPredicate, Comparison, In, Unknown, bind_predicate, parse_sql
from expressions.functions import StringToNumber
from listers import DirectoryLister, plan
from metadata.formats.stats_table import FILE_NAME, PARTITION
from metadata.table.file_naming import file_id_of
from tests.conftest import requires_fixtures
from tests.test_record_index import RLI_FIXTURES

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32())])


def test_a_bound_predicate_narrows_without_binding_again() -> None:
    bound = bind_predicate(parse_sql("ID = 5 AND name = 'x' AND day >= '2024-01-02'", "spark"), SCHEMA)
    assert isinstance(bound, BoundPredicate)
    assert bound.columns == ["day", "id", "name"]  # names as the schema spells them
    assert bound.values_required("id") == [5]
    narrowed = bound.on(pa.schema([("id", pa.int64()), ("day", pa.date32())]))
    leaves = [narrowed.left.left, narrowed.left.right, narrowed.right]  # type: ignore[attr-defined]
    assert leaves[0] is bound.expr.left.left  # type: ignore[attr-defined]  # same type there: the very same leaf
    assert isinstance(leaves[1], Unknown) and "name" in leaves[1].reason  # no such column there: may match anything
    assert isinstance(leaves[2], Comparison) and leaves[2].literal.value == date(2024, 1, 2)
    # A column kept as text there: an integer literal does not compare with it, so the leaf may match anything.
    # A column kept as text there (a partition path's value): Spark compares it with an integer through a cast.
    narrowed_text = bind_predicate(parse_sql("id = 5", "spark"), SCHEMA).on(pa.schema([("id", pa.string())]))
    assert isinstance(narrowed_text, Comparison) and narrowed_text.ref.functions == (StringToNumber(integral=True),)


def test_leaves_on_a_column_kept_in_another_type_are_coerced_to_it() -> None:
    narrowed = bind_predicate(parse_sql("id IN (1, 2)", "spark"), SCHEMA).on(pa.schema([("id", pa.int32())]))
    assert isinstance(narrowed, In)
    assert [(lit.value, lit.kind) for lit in narrowed.literals] == [(1, "int32"), (2, "int32")]
    # A value the coarser type cannot hold: the leaf keeps every file rather than guess.
    wide = bind_predicate(parse_sql("id IN (1, 3000000000)", "spark"), SCHEMA).on(pa.schema([("id", pa.int32())]))
    assert isinstance(wide, Unknown) and "out of range" in wide.reason


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_a_plan_binds_its_predicate_once(fixture_table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """partition values, partition_stats and column_stats all evaluate the
    one bound predicate; none binds it again (the table's statistics have
    the columns' own types)."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("bound again")

    monkeypatch.setattr(expressions.eval_stats, "bind", refuse)
    monkeypatch.setattr(expressions.eval_partitions, "bind", refuse)
    planned = plan(fixture_table, "region <> 'apac' AND amount > 100 AND txn_date >= DATE '2024-01-10'")
    assert [s.name for s in planned.stages] == ["list partitions", "partition values", "partition_stats", "column_stats"]
    assert len(planned.files) < sum(1 for _ in DirectoryLister.open(fixture_table).view.latest_file_slices())


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_a_predicate_without_partition_fields_parses_no_partition_path(fixture_table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A predicate naming no partition field cannot prune a partition by its path: every partition is kept at once
    (no path parsed), the stage says why, and the plan keeps what it kept before."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("partition paths parsed")

    before = plan(fixture_table, "amount > 100")
    monkeypatch.setattr(expressions.eval_partitions, "partition_values_table", refuse)
    planned = plan(fixture_table, "amount > 100")
    stage = next(s for s in planned.stages if s.name == "partition values")
    assert stage.kept == stage.total == len(DirectoryLister.open(fixture_table).list_partitions())
    assert stage.note == "the predicate names no partition field"
    assert [(s.partition, s.file_id) for s in planned.files] == [(s.partition, s.file_id) for s in before.files]
    with pytest.raises(AssertionError, match="partition paths parsed"):
        plan(fixture_table, "region <> 'apac'")  # a partition field: its paths are parsed


@requires_fixtures
@pytest.mark.parametrize("fixture_table", RLI_FIXTURES or ["no-fixtures"], indirect=True)
def test_the_record_index_narrows_what_column_stats_reads(fixture_table: str) -> None:
    """The record index runs first (point lookups, one group per key) and
    rules groups out by name; column_stats then reads the statistics of
    only the partitions still in play. Every stage reports its requests."""
    planned = plan(fixture_table, "txn_id = 'TXN-008' AND amount > -1000000")
    names = [s.name for s in planned.stages]
    assert names.index("record_index") < names.index("column_stats"), planned.explain()
    (kept,) = planned.files
    with DirectoryLister.open(fixture_table) as lister:
        files = lister.file_table(lister.list_partitions())
    in_partition = [n for p, n in zip(files.column(PARTITION).to_pylist(), files.column(FILE_NAME).to_pylist()) if p == kept.partition]
    column_stats = next(s for s in planned.stages if s.name == "column_stats")
    record_index = next(s for s in planned.stages if s.name == "record_index")
    assert record_index.kept == 1 and record_index.total <= files.num_rows
    # column_stats saw only the files of the one partition the record index left.
    assert column_stats.total == len(in_partition) < record_index.total, planned.explain()
    assert kept.file_id in {file_id_of(n) for n in in_partition}
    assert record_index.requests > 0 and column_stats.requests > 0
    assert sum(s.requests for s in planned.stages) <= planned.requests["total"]
    assert f"{record_index.requests} storage requests" in planned.explain()
    assert planned.to_dict()["stages"][3]["requests"] == record_index.requests
