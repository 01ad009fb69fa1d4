"""The fingerprinted distinctness check against Arrow's exact count: random
strings of one and many widths, repeats, non-ASCII, empty strings, and every
fingerprint forced equal."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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


_NAME = st.text(alphabet="0af-_.é", min_size=20, max_size=30)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_NAME, max_size=30), value_set=st.lists(_NAME, max_size=30), split=st.integers(0, 30))
def test_index_in_equals_arrow(values: list[str], value_set: list[str], split: int) -> None:
    """Names of 20 to 30 characters (some under the fingerprinted width), with
    repeats, as arrays and as chunked arrays: the same indexes as Arrow's."""
    expected = pc.index_in(pa.array(values, pa.string()), value_set=pa.array(value_set, pa.string()))
    chunked = pa.chunked_array([values[:split], values[split:]], pa.string())
    set_chunked = pa.chunked_array([value_set[:split], value_set[split:]], pa.string())
    for given_values, given_set in ((pa.array(values, pa.string()), pa.array(value_set, pa.string())), (chunked, set_chunked)):
        assert fingerprints.index_in(given_values, given_set).to_pylist() == expected.to_pylist()


def test_index_in_settles_shared_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name of one length shares a fingerprint: matches are still exact."""
    monkeypatch.setattr(fingerprints, "_FNV_PRIME", np.uint64(0))
    names = [f"{i:08d}-0000-0000-0000-000000000000-0_1-2-3_2024.parquet" for i in range(50)]
    found = fingerprints.index_in(pa.array(names[::-1] + ["x" * 60], pa.string()), pa.array(names, pa.string()))
    assert found.to_pylist() == list(range(49, -1, -1)) + [None]


@settings(max_examples=400, deadline=None)
@given(prefixes=st.lists(st.binary(min_size=12, max_size=12), min_size=1, max_size=6, unique=True),
       tails=st.lists(st.tuples(st.integers(0, 7), st.binary(max_size=20), st.integers(-1, 11)), max_size=30),
       width=st.sampled_from([9, 12, 16]), chunked=st.booleans())
def test_starts_with_any_is_exact(prefixes: list[bytes], tails: list[tuple[int, bytes, int]], width: int, chunked: bool) -> None:
    """Values made of a wanted prefix (or one with a byte changed at `flip`) and a tail, as one array or two chunks."""
    prefixes = sorted({p[:width].ljust(width, b"a") for p in prefixes})
    values = []
    for pick, tail, flip in tails:
        head = bytearray(prefixes[pick % len(prefixes)])
        if 0 <= flip < width:
            head[flip] ^= 0x20
        values.append(bytes(head) + tail)
    array = pa.array(values, pa.binary())
    given_ = pa.chunked_array([array[: len(values) // 2], array[len(values) // 2 :]], pa.binary()) if chunked else array
    found = fingerprints.starts_with_any(given_, pa.array(prefixes, pa.binary()))
    if found is None:  # two prefixes sharing their first 8 bytes: left to Arrow
        assert len({p[:8] for p in prefixes}) < len(prefixes)
        return
    assert found.tolist() == [any(v.startswith(p) for p in prefixes) for v in values]


def test_starts_with_any_leaves_other_widths_to_arrow_and_answers_short_values() -> None:
    def starts(values: list[bytes | None], prefixes: list[bytes]) -> list[bool] | None:
        found = fingerprints.starts_with_any(pa.array(values, pa.binary()), pa.array(prefixes, pa.binary()))
        return None if found is None else found.tolist()

    assert starts([b"abcdefghijkl"], [b"abcdefgh"]) is None  # 8 bytes: not two words
    assert starts([b"abcdefghijkl"], [b"a" * 17]) is None
    assert starts([b"abcdefghijkl"], [b"abcdefghij", b"abcdefghi"]) is None  # two widths
    assert starts([b"abcdefghijkl", None], [b"abcdefghij"]) is None
    assert starts([b"ab", b"", b"abcdefghijkl"], [b"abcdefghij"]) == [False, False, True]
