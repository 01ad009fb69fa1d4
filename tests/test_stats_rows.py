"""Matching listed files to stats rows by name first (`stats_rows_of`) gives
what matching (partition, name) pairs gives, also when names repeat across
partitions or a file has no statistics."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.stats_table import FILE_NAME, PARTITION, stats_rows_of

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
