"""The fingerprinted distinctness check against Arrow's exact count: random
strings of one and many widths, repeats, non-ASCII, empty strings, and every
fingerprint forced equal."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata import fingerprints
from metadata.fingerprints import all_distinct


@settings(max_examples=400, deadline=None)
@given(values=st.lists(st.text(alphabet="ab_.é ", max_size=6), max_size=40), width=st.sampled_from([None, 3, 8, 13]))
def test_all_distinct_is_exact(values: list[str], width: int | None) -> None:
    if width is not None:  # one byte width: the fingerprint path
        values = [v.encode()[:width].ljust(width, b"x").decode("utf-8", "replace") for v in values]
        values = [v for v in values if len(v.encode()) == width]
    assert all_distinct(pa.array(values, pa.string())) == (len(set(values)) == len(values))


def test_a_shared_fingerprint_is_settled_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprints, "fingerprints", lambda matrix: np.zeros(len(matrix), dtype=np.uint64))
    assert all_distinct(pa.array(["ab", "cd"])) and not all_distinct(pa.array(["ab", "ab"]))
