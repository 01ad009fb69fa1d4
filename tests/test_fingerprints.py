"""The fingerprint set helpers against Arrow's hashing answers: random
strings of few and many widths, repeats, non-ASCII, empty strings, slices."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata import fingerprints
from metadata.fingerprints import all_distinct, positions_in

TEXTS = st.lists(st.text(alphabet="ab_.é ", max_size=6), max_size=40)


@settings(max_examples=400, deadline=None)
@given(values=TEXTS, within=TEXTS, skip=st.integers(0, 3))
def test_positions_are_of_equal_strings_and_miss_none_without_a_shared_fingerprint(values: list[str], within: list[str], skip: int) -> None:
    left = pa.array(values, pa.string()).slice(min(skip, len(values)))
    right = pa.array(within, pa.string())
    rows = positions_in(left, right)
    for value, row in zip(left.to_pylist(), rows.tolist()):
        if row >= 0:
            assert right[row].as_py() == value
        else:
            assert value not in within  # fingerprints of a few short strings do not collide: nothing equal is missed


@settings(max_examples=400, deadline=None)
@given(values=TEXTS)
def test_all_distinct_is_exact(values: list[str]) -> None:
    assert all_distinct(pa.array(values, pa.string())) == (len(set(values)) == len(values))


def test_a_shared_fingerprint_is_never_taken_for_equality(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every fingerprint equal, found rows are still only equal strings, and distinctness is settled exactly."""
    monkeypatch.setattr(fingerprints, "fingerprints", lambda matrix: np.zeros(len(matrix), dtype=np.uint64))
    left, right = pa.array(["ab", "cd", "ef"]), pa.array(["cd", "zz", "ab"])
    rows = positions_in(left, right)
    assert all(right[r].as_py() == v for v, r in zip(left.to_pylist(), rows.tolist()) if r >= 0)
    assert rows.tolist()[2] == -1
    assert all_distinct(pa.array(["ab", "cd"])) and not all_distinct(pa.array(["ab", "ab"]))
