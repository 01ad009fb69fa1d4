"""KeyQuery's prefix match (found by bisection among the covering prefixes),
and a base HFile's records of many wanted keys (read a block at a time)
against the same keys looked up one by one."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.mdt.key_query import FEW_KEYS, KeyQuery, RawCells
from metadata.mdt.metadata_table import MetadataTable
from tests.conftest import requires_fixtures, table_path
from tests.test_metadata_table import MDT_FIXTURES

WORDS = st.text(alphabet="ab\x00\u00e9", max_size=5)  # small: prefixes overlap and nest often


@settings(max_examples=300, deadline=None)
@given(prefixes=st.lists(WORDS, max_size=8), keys=st.lists(WORDS, max_size=20))
def test_prefix_match_equals_any_startswith(prefixes: list[str], keys: list[str]) -> None:
    query = KeyQuery(prefixes=prefixes)
    for key in keys + prefixes + [p + "b" for p in prefixes]:
        assert query.matches(key) == any(key.startswith(p) for p in prefixes), (prefixes, key)


def test_prefix_match_with_nested_prefixes() -> None:
    query = KeyQuery(prefixes=["ab", "abc1", "b"])
    assert query.matches("abd")  # the nearest prefix below it ("abc1") does not match, the shorter one covers it
    assert query.matches("abc1x") and query.matches("b")
    assert not query.matches("a") and not query.matches("aa") and not query.matches("c")


@requires_fixtures
@pytest.mark.parametrize("stem", MDT_FIXTURES)
def test_many_wanted_keys_equal_one_by_one(fixture_root: Path, stem: str) -> None:
    mdt = MetadataTable.open(table_path(fixture_root, stem))
    compared = 0
    for partition in ("files", "column_stats"):
        for file_slice in mdt.reader.file_slices(partition):
            if not file_slice.base_file:
                continue
            reader = mdt.reader._hfile(file_slice.base_file)
            schema = reader.schema_json()
            assert schema is not None
            rows = [row.decode() for row, _ in reader.iter_all()]
            wanted = rows[::2] + [rows[0] + "-missing", "~not-held"] if rows else ["~not-held"]
            cells = RawCells(reader, KeyQuery(), schema, dropped=frozenset(rows[2:4]))
            together = cells.records_of(wanted)
            one_by_one = {k: r for key in wanted for k, r in cells.records_of([key]).items()}
            assert together == one_by_one
            assert set(together) == set(rows[::2]) - set(rows[2:4])
            compared += len(wanted) > FEW_KEYS
    if stem != "sample_table__mor__avro__v9_nonpartitioned_rollback":  # its HFiles hold a handful of keys
        assert compared, "no base HFile held enough keys to take the block-at-a-time path"
