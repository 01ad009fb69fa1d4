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

from metadata.mdt import native
from metadata.util import fingerprints
from metadata.util.fingerprints import all_distinct
from tests.native_paths import PATHS, on_path


@pytest.mark.parametrize("matcher", PATHS)
@settings(max_examples=400, deadline=None)
@given(values=st.lists(st.text(alphabet="ab_.é ", max_size=6), max_size=40), width=st.sampled_from([None, 3, 8, 13]), skip=st.integers(0, 2))
def test_all_distinct_is_exact(matcher: str, values: list[str], width: int | None, skip: int) -> None:
    if width is not None:  # one byte width: the fingerprint path
        values = [v.encode()[:width].ljust(width, b"x").decode("utf-8", "replace") for v in values]
        values = [v for v in values if len(v.encode()) == width]
    with on_path(matcher):
        assert all_distinct(pa.array(values, pa.string())) == (len(set(values)) == len(values))
        assert all_distinct(pa.array(["z"] * skip + values, pa.string()).slice(skip)) == (len(set(values)) == len(values))


@settings(max_examples=400, deadline=None)
@given(runs=st.lists(st.lists(st.text(alphabet="ab\x00é", max_size=4), max_size=12), min_size=1, max_size=20),
       cuts=st.lists(st.integers(0, 200), max_size=3), skip=st.integers(0, 2))
def test_distinct_in_runs_merges_a_few_ascending_runs_exactly(runs: list[list[str]], cuts: list[int], skip: int) -> None:
    """Strings in ascending runs (sorted by bytes, a repeat inside a run or across runs), in chunks cut anywhere (a
    chunk's first string starts a run) and sliced: 1 when none repeats, 0 when one does, -1 only past 16 runs."""
    if native.cells is None:
        pytest.skip("the compiled module was not built here (no C compiler)")
    values = [v for run in runs for v in sorted(run, key=lambda text: text.encode())]
    whole = pa.array(["z"] * skip + values, pa.string()).slice(skip)
    bounds = sorted({0, len(values), *(c for c in cuts if c < len(values))})
    chunks = [whole.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    answer = native.cells.distinct_in_runs([fingerprints._string_buffers(c) for c in chunks], True)
    starts = sum(1 for c in chunks for i, v in enumerate(c.to_pylist()) if i == 0 or v.encode() <= c[i - 1].as_py().encode())
    expected = int(len(set(values)) == len(values))
    if answer == -1:
        assert starts > 16  # runs (each chunk's first string starts one)
    else:
        assert answer == expected, (values, chunks)


def test_a_shared_fingerprint_is_settled_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprints, "fingerprints", lambda matrix: np.zeros(len(matrix), dtype=np.uint64))
    assert all_distinct(pa.array(["ab", "cd"])) and not all_distinct(pa.array(["ab", "ab"]))


_NAME = st.text(alphabet="0af-_.é", min_size=20, max_size=30)


@pytest.mark.parametrize("matcher", PATHS)
@settings(max_examples=300, deadline=None)
@given(values=st.lists(_NAME | st.text(alphabet="ab", max_size=3), max_size=30),
       value_set=st.lists(_NAME | st.text(alphabet="ab", max_size=3), max_size=30), split=st.integers(0, 30), skip=st.integers(0, 3))
def test_index_in_equals_arrow(matcher: str, values: list[str], value_set: list[str], split: int, skip: int) -> None:
    """Names of 20 to 30 characters and short strings (empty ones too), with
    repeats, as arrays, slices and chunked arrays: the same indexes as Arrow's."""
    expected = pc.index_in(pa.array(values, pa.string()), value_set=pa.array(value_set, pa.string()))
    chunked = pa.chunked_array([values[:split], values[split:]], pa.string())
    set_chunked = pa.chunked_array([value_set[:split], [], value_set[split:]], pa.string())
    sliced = pa.array(["x"] * skip + values, pa.string()).slice(skip)
    set_sliced = pa.array(["y"] * skip + value_set, pa.string()).slice(skip)
    for given_values, given_set in ((pa.array(values, pa.string()), pa.array(value_set, pa.string())), (chunked, set_chunked),
                                    (sliced, set_sliced)):
        with on_path(matcher):
            assert fingerprints.index_in(given_values, given_set).to_pylist() == expected.to_pylist()


def test_index_in_settles_shared_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name of one length shares a fingerprint: matches are still exact."""
    monkeypatch.setattr(native, "cells", None)
    monkeypatch.setattr(fingerprints, "_FNV_PRIME", np.uint64(0))
    names = [f"{i:08d}-0000-0000-0000-000000000000-0_1-2-3_2024.parquet" for i in range(50)]
    found = fingerprints.index_in(pa.array(names[::-1] + ["x" * 60], pa.string()), pa.array(names, pa.string()))
    assert found.to_pylist() == list(range(49, -1, -1)) + [None]


@pytest.mark.parametrize("matcher", PATHS)
def test_index_in_leaves_nulls_and_other_types_to_arrow(matcher: str) -> None:
    values = pa.array(["a", None, "b"], pa.string())
    large = pa.array(["a", "b"], pa.large_string())
    with on_path(matcher):
        assert fingerprints.index_in(values, pa.array(["b", "a"], pa.string())).to_pylist() == [1, None, 0]
        assert fingerprints.index_in(large, pa.array(["b"], pa.large_string())).to_pylist() == [None, 0]


def test_the_compiled_match_refuses_offsets_its_buffers_do_not_hold() -> None:
    if native.cells is None:
        pytest.skip("the compiled module was not built here (no C compiler)")
    out = np.empty(2, dtype=np.int32)
    good = (np.array([0, 1, 2], dtype=np.int32), b"ab", 0, 2)
    for bad in ((np.array([0, 1, 3], dtype=np.int32), b"ab", 0, 2),  # past the bytes
                (np.array([0, 2, 1], dtype=np.int32), b"ab", 0, 2),  # going backwards
                (np.array([0, 1], dtype=np.int32), b"ab", 0, 2),  # fewer offsets than strings
                (np.array([0, 1, 2], dtype=np.int32), b"ab", -1, 2)):
        for sides in (([bad], [good]), ([good], [bad])):
            with pytest.raises(ValueError, match="string offsets do not fit their buffers"):
                native.cells.index_in_strings(*sides, out)
    with pytest.raises(ValueError, match="the output does not fit"):
        native.cells.index_in_strings([good], [good], np.empty(1, dtype=np.int32))
    native.cells.index_in_strings([good], [good], out)
    assert out.tolist() == [0, 1]


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


@pytest.mark.skipif(native.cells is None, reason="the compiled helpers are not built here")
@settings(max_examples=400, deadline=None)
@given(prefixes=st.lists(st.text(alphabet="ab_é", min_size=3, max_size=3), min_size=1, max_size=6, unique=True),
       values=st.lists(st.tuples(st.integers(0, 7), st.text(alphabet="ab_é", max_size=6), st.booleans()), max_size=30),
       cut=st.integers(0, 30), sliced=st.booleans())
def test_prefix_index_finds_the_prefix_each_string_starts_with(prefixes: list[str], values: list[tuple[int, str, bool]], cut: int,
                                                               sliced: bool) -> None:
    """Strings made of a prefix (or not) and a tail, in prefixes of one byte width given in any order, as one array,
    a slice of one, or two chunks: each string's place among the prefixes, or -1, as a loop over them says."""
    width = max(len(p.encode()) for p in prefixes)
    prefixes = [p for p in prefixes if len(p.encode()) == width]
    strings = [(prefixes[pick % len(prefixes)] if use else "") + tail for pick, tail, use in values]
    array = pa.array(["zzzz", *strings], pa.string())[1:] if sliced else pa.array(strings, pa.string())
    cut = min(cut, len(strings))
    for given_ in (array, pa.chunked_array([array[:cut], array[cut:]], pa.string())):
        found = fingerprints.prefix_index(given_, prefixes)
        assert found is not None
        assert found.tolist() == [next((n for n, p in enumerate(prefixes) if s.encode().startswith(p.encode())), -1) for s in strings]


def test_prefix_index_leaves_what_it_cannot_answer_and_refuses_bad_buffers() -> None:
    if native.cells is None:
        assert fingerprints.prefix_index(pa.array(["ab"]), ["a"]) is None
        return
    assert fingerprints.prefix_index(pa.array(["abc", None]), ["ab"]) is None  # a null
    assert fingerprints.prefix_index(pa.array([b"abc"], pa.binary()), ["ab"]) is None  # not strings
    assert fingerprints.prefix_index(pa.array(["abc"]), ["ab", "abc"]) is None  # two widths
    assert fingerprints.prefix_index(pa.array(["abc"]), ["ab", "ab"]) is None  # repeated
    assert fingerprints.prefix_index(pa.array(["abc"]), []) is None
    assert fingerprints.prefix_index(pa.array(["", "a", "ab", "ba"]), ["ba", "ab"]).tolist() == [-1, -1, 1, 0]  # short ones: none
    out = np.empty(1, dtype=np.int32)
    good = (np.array([0, 2], dtype=np.int32), b"ab", 0, 1)
    with pytest.raises(ValueError, match="not sorted and distinct"):
        native.cells.prefix_index_strings(b"abaa", 2, [good], out)
    with pytest.raises(ValueError, match="not of the width given"):
        native.cells.prefix_index_strings(b"abc", 2, [good], out)
    with pytest.raises(ValueError, match="string offsets do not fit their buffers"):
        native.cells.prefix_index_strings(b"ab", 2, [(np.array([0, 3], dtype=np.int32), b"ab", 0, 1)], out)
    with pytest.raises(ValueError, match="the output does not fit"):
        native.cells.prefix_index_strings(b"ab", 2, [good, good], out)
