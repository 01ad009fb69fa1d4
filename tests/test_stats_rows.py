"""Matching listed files to stats rows by name first (`stats_rows_of`, and
the other way round, `listed_rows_of`) gives what matching (partition, name)
pairs gives, also when names repeat across partitions or a file has no
statistics."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.formats.stats_table import (
    FILE_NAME,
    PARTITION,
    ListedFiles,
    listed_may_match,
    listed_rows_of,
    stats_row_per_listed,
    stats_rows_of,
)
from metadata.mdt import native
from metadata.util import arrow_values
from tests.native_paths import PATHS, on_path

_files = st.tuples(st.sampled_from(["", "p=1", "p=2", "p=1/q=é"]), st.sampled_from(["f1.parquet", "f2.parquet", "f3.log.1", "f4"]))


def _table(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.table({PARTITION: pa.array([p for p, _ in pairs], pa.string()), FILE_NAME: pa.array([n for _, n in pairs], pa.string())})


@settings(max_examples=400, deadline=None)
@given(listed=st.lists(_files, max_size=20), stats=st.lists(_files, max_size=20, unique=True))
def test_rows_are_those_of_the_same_partition_and_name(listed: list[tuple[str, str]], stats: list[tuple[str, str]]) -> None:
    rows = stats_rows_of(_table(listed), _table(stats)).tolist()
    assert rows == [stats.index(pair) if pair in stats else -1 for pair in listed]


def test_a_name_in_two_partitions_is_matched_in_its_own() -> None:
    stats = _table([("p=1", "same.parquet"), ("p=2", "same.parquet")])
    assert stats_rows_of(_table([("p=2", "same.parquet"), ("p=3", "same.parquet")]), stats).tolist() == [1, -1]


@pytest.mark.parametrize("matcher", PATHS)
@settings(max_examples=300, deadline=None)
@given(listed=st.lists(_files, max_size=24), stats=st.lists(_files, max_size=20), picks=st.lists(st.integers(0, 23), max_size=12),
       cuts=st.lists(st.integers(0, 24), max_size=3))
def test_listed_rows_are_the_other_way_round_of_stats_rows(matcher: str, listed: list[tuple[str, str]], stats: list[tuple[str, str]],
                                                          picks: list[int], cuts: list[int]) -> None:
    """Each stats row's listed file (`listed_rows_of`), among a listing's
    rows at some positions (a run's rows of a listing in several chunks), is
    the first row at those positions of the same partition and name; a
    listed file's verdict is allowed by any stats row about it. Repeated
    stats rows (a damaged index) and names in two partitions included."""
    files = _table(listed)
    bounds = sorted({0, len(listed), *(min(c, len(listed)) for c in cuts)})
    files = pa.Table.from_batches([b for lo, hi in zip(bounds, bounds[1:]) for b in files.slice(lo, hi - lo).to_batches()], schema=files.schema)
    positions = np.array(sorted({p for p in picks if p < len(listed)}), dtype=np.int64)
    here = [listed[p] for p in positions.tolist()]
    with on_path(matcher):
        found = listed_rows_of(_table(stats), ListedFiles(files, positions)).tolist()
        whole = listed_rows_of(_table(stats), ListedFiles(files)).tolist()
    assert found == [here.index(pair) if pair in here else -1 for pair in stats]
    assert whole == [listed.index(pair) if pair in listed else -1 for pair in stats]
    keep = np.array([i % 2 == 0 for i in range(len(stats))], dtype=bool)
    # a file listed twice (no listing does that) takes its statistics at its first row; the other may hold anything
    about = [pair in stats and here.index(pair) == j for j, pair in enumerate(here)]
    may = listed_may_match(len(here), np.array(found, dtype=np.int64), keep).tolist()
    assert may == [not known or any(s == pair and k for s, k in zip(stats, keep)) for pair, known in zip(here, about)]
    first = stats_row_per_listed(len(here), np.array(found, dtype=np.int64)).tolist()
    assert first == [stats.index(pair) if known else -1 for pair, known in zip(here, about)]


def test_a_position_outside_the_listing_is_refused() -> None:
    if native.cells is None:
        pytest.skip("the compiled module was not built here (no C compiler)")
    files = _table([("p=1", "a"), ("p=1", "b")])
    with pytest.raises(ValueError, match="a set position is outside the strings"):
        listed_rows_of(_table([("p=1", "a")]), ListedFiles(files, np.array([0, 2], dtype=np.int64)))


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(st.lists(st.sampled_from(["a", "bb", "", "é"]), max_size=5), min_size=1, max_size=4),
       picks=st.lists(st.integers(0, 19), max_size=10), ordered=st.booleans())
def test_taken_is_take_chunk_by_chunk(chunks: list[list[str]], picks: list[int], ordered: bool) -> None:
    values = pa.chunked_array(chunks, pa.string())
    positions = np.array([p for p in picks if p < len(values)], dtype=np.int64)
    if ordered:
        positions.sort()
    expected = values.combine_chunks().take(positions).to_pylist()
    assert arrow_values.taken(values, positions).to_pylist() == expected
    table = pa.table({"v": values, "n": pa.chunked_array([list(range(len(c))) for c in chunks], pa.int64())})
    assert arrow_values.taken(table, positions).to_pylist() == table.combine_chunks().take(positions).to_pylist()
